import XMLBridge

// Small helpers shared by the Microsoft-family codecs ([MS-PRES] §2.2.2):
// located attribute/text conversions of the recorded elements they read.
// Internal: the public surface is the codecs.

extension XMLName {
    /// `{http://www.w3.org/2001/XMLSchema-instance}type`.
    static let xsiType = XMLName(NS.xsi, "type")
    /// `ct:delimiter` ([MS-PRES] schema §7.1, commontypes).
    static let ctDelimiter = XMLName(NS.commonTypes, "delimiter")
    /// `ct:end` ([MS-PRES] schema §7.1, commontypes).
    static let ctEnd = XMLName(NS.commonTypes, "end")
}

/// Conversions of an element's attributes and text, with errors located at the element.
extension XMLCursor {
    func error(_ message: String) -> XMLError { error(message, code: .unexpectedContent) }

    /// An unqualified attribute parsed as xs:unsignedInt; the error is located at this element.
    func uint32Attribute(_ local: String) throws(XMLError) -> UInt32? {
        try uint32Attribute(local, raw: self[attribute: local])
    }

    /// The value `raw` of the unqualified attribute `local`, already looked up, parsed as
    /// xs:unsignedInt; the error is located at this element.
    func uint32Attribute(_ local: String, raw: String?) throws(XMLError) -> UInt32? {
        guard let raw else { return nil }
        guard let value = UInt32(raw.trimmingXMLWhitespace()) else {
            throw error("attribute \(local)=\"\(raw)\" is not an unsignedInt")
        }
        return value
    }

    /// An unqualified attribute parsed as xs:int; the error is located at this element.
    func intAttribute(_ local: String) throws(XMLError) -> Int? {
        guard let raw = self[attribute: local] else { return nil }
        guard let value = Int(raw.trimmingXMLWhitespace()) else {
            throw error("attribute \(local)=\"\(raw)\" is not an integer")
        }
        return value
    }

    /// An unqualified attribute parsed as xs:boolean; the error is located at this element.
    func boolAttribute(_ local: String) throws(XMLError) -> Bool? {
        try boolAttribute(local, raw: self[attribute: local])
    }

    /// The value `raw` of the unqualified attribute `local`, already looked up, parsed as
    /// xs:boolean; the error is located at this element.
    func boolAttribute(_ local: String, raw: String?) throws(XMLError) -> Bool? {
        guard let raw else { return nil }
        guard let value = Bool(xsd: raw) else {
            throw error("attribute \(local)=\"\(raw)\" is not a boolean")
        }
        return value
    }

    /// The trimmed text parsed as xs:unsignedInt; the error is located at this element.
    func uint32Text() throws(XMLError) -> UInt32 {
        guard let value = UInt32(trimmedText) else {
            throw error("\"\(trimmedText)\" is not an unsignedInt")
        }
        return value
    }

    /// The trimmed text parsed as xs:long; the error is located at this element.
    func intText() throws(XMLError) -> Int {
        guard let value = Int(trimmedText) else {
            throw error("\"\(trimmedText)\" is not an integer")
        }
        return value
    }

    /// The trimmed text parsed as xs:boolean; the error is located at this element.
    func boolText() throws(XMLError) -> Bool {
        guard let value = Bool(xsd: text) else {
            throw error("\"\(trimmedText)\" is not a boolean")
        }
        return value
    }

}

extension Bool {
    /// The canonical xs:boolean lexical form.
    var xsd: String { self ? "true" : "false" }
}

extension String {
    /// The local part of a QName-valued attribute such as `xsi:type="ns:userState"`.
    var qnameLocalPart: String {
        let trimmed = trimmingXMLWhitespace()
        // ASCII text (every QName in practice) is searched by byte: there every byte is a
        // character, where the search by character cost hundreds of instructions a step.
        // Other text keeps the search by character (a colon with a combining mark after it
        // is one character that is not a colon).
        let utf8 = trimmed.utf8
        var colon: String.Index?
        var index = utf8.endIndex
        while index > utf8.startIndex {
            utf8.formIndex(before: &index)
            let byte = utf8[index]
            if byte >= 0x80 {
                colon = trimmed.lastIndex(of: ":")
                break
            }
            if byte == UInt8(ascii: ":") && colon == nil { colon = index }
        }
        guard let colon else { return trimmed }
        return String(trimmed[trimmed.index(after: colon)...])
    }
}

extension ContactCard.LocalizedText {
    /// Reads an LCIDType element ([MS-PRES] schema §7.1): trimmed text and `LCID`.
    init(lcidElement e: XMLCursor) {
        self.init(e.trimmedText, lcid: e[attribute: "LCID"])
    }
}

extension [XMLAttribute] {
    /// The attributes whose names are not in `known` (unqualified names).
    func excluding(_ known: [String]) -> [XMLAttribute] {
        filter { !($0.name.namespace.isEmpty && known.contains($0.name.local)) }
    }
}

extension XMLCursor {
    /// ``XMLCursor/is(_:_:)`` called, not inlined: each inlined copy is a few hundred bytes of
    /// code (the string length and comparison fast paths), run (and missed in the instruction
    /// cache) once per document at every place a decoder tests a name; the call costs less.
    @inline(never)
    func hasName(_ namespace: String, _ local: String) -> Bool {
        self.is(namespace, local)
    }

    /// Fails unless this element has the expected (namespace, local name), tested in place.
    func expect(_ name: XMLName) throws(XMLError) {
        guard self.is(name.namespace, name.local) else {
            throw error("expected \(name), found \(self.name)")
        }
    }

    /// The value of the unqualified attribute `local`, already found, parsed as
    /// xs:unsignedInt: plain digits read from the bytes, any other form through its text as
    /// ``uint32Attribute(_:raw:)`` reads it (same value, same error).
    func uint32Attribute(_ local: String, value: AttributeValue?) throws(XMLError) -> UInt32? {
        guard let value else { return nil }
        if let number = plainUInt32(value) { return number }
        return try uint32Attribute(local, raw: string(value))
    }

    /// ``String/qnameLocalPart`` of an attribute value, found in its bytes when they are ASCII
    /// (every QName in practice): only the local part is made a `String`, where the whole
    /// value, and a trimmed copy of it, were made to be searched. Other text is searched as
    /// ``String/qnameLocalPart`` searches it.
    func qnameLocalPart(_ value: AttributeValue) -> String {
        let local = withUTF8(value) { bytes -> Range<Int>? in
            func space(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
            for i in bytes.indices where bytes[i] >= 0x80 { return nil }
            var start = 0
            var end = bytes.count
            while start < end, space(bytes[start]) { start += 1 }
            while end > start, space(bytes[end - 1]) { end -= 1 }
            // After the last colon, or all of it.
            var afterColon = end
            while afterColon > start, bytes[afterColon - 1] != UInt8(ascii: ":") { afterColon -= 1 }
            return (afterColon > start ? afterColon : start)..<end
        }
        return local.map { string(value, $0) } ?? string(value).qnameLocalPart
    }

    /// The attributes whose unqualified names are not in `known`.
    func attributes(excluding known: [String]) -> [XMLAttribute] {
        attributes { !($0.namespace.isEmpty && known.contains($0.local)) }
    }
}

/// Parses `bytes` into events and decodes the root with `decode` (the
/// documents read from events: categories and what they hold).
func decodeEvents<T>(
    _ bytes: [UInt8], limits: XMLLimits, _ decode: (XMLCursor) throws(XMLError) -> T
) throws(XMLError) -> T {
    try decode(XMLParser.events(bytes, limits: limits, vocabulary: .presence).root)
}
