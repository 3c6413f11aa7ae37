public import XMLBridge

extension RLMIList {
    /// Reads an RLMI `list` (RFC 4662 §5; [MS-PRES] §2.2.2.4.2, schema §6.9).
    ///
    /// ```
    /// <list xmlns="urn:ietf:params:xml:ns:rlmi" uri version fullState cid?>
    ///   <name xml:lang?>*
    ///   <resource uri> <name>* <instance id state reason? cid? statusCode? poolFqdn?/>* </resource>*
    /// </list>
    /// ```
    ///
    /// Lenient: a missing `version` reads as 0 and a missing `fullState` as false.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        let ns = NS.rlmi
        try xml.expect(XMLName(ns, "list"))
        self.init(
            uri: xml[attribute: "uri"] ?? "", version: try xml.uint32Attribute("version") ?? 0,
            fullState: try xml.boolAttribute("fullState") ?? false, cid: xml[attribute: "cid"],
            names: Self.names(in: xml))
        for r in xml.elements(XMLName(ns, "resource")) {
            var resource = Resource(uri: r[attribute: "uri"] ?? "", names: Self.names(in: r))
            for i in r.elements(XMLName(ns, "instance")) {
                resource.instances.append(
                    Instance(
                        id: i[attribute: "id"] ?? "", state: State(rawValue: i[attribute: "state"] ?? ""),
                        reason: i[attribute: "reason"], cid: i[attribute: "cid"],
                        statusCode: try i.intAttribute("statusCode"), poolFqdn: i[attribute: "poolFqdn"]))
            }
            resources.append(resource)
        }
    }

    private static func names(in e: XMLCursor) -> [PIDFNote] {
        e.elements(XMLName(NS.rlmi, "name")).map { PIDFNote($0.text, lang: $0.attribute(XMLName(NS.xml, "lang"))) }
    }

    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Parses and decodes an `application/rlmi+xml` body.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeEvents(bytes, limits: limits) { root throws(XMLError) in try Self(cursor: root) }
    }

    /// Parses an RLMI body, first strictly and, if that fails as not
    /// well-formed, again after ``repairingSpecDefects(_:)``.
    ///
    /// [MS-PRES] §2.2.2.4.2 prints the only poolFqdn
    /// example as `cid="john@contoso.com` + newline + `poolFqdn="..."/>" />`:
    /// the cid value lacks its closing quote and a stray `" />` follows the
    /// empty-element tag. Servers are not known to send this; the repair exists
    /// so that the spec text itself can be used as a test vector.
    public init(lenientBytes bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        do {
            self = try RLMIList(bytes: bytes, limits: limits)
        } catch  where error.code == .notWellFormed {
            self = try RLMIList(bytes: Self.repairingSpecDefects(bytes), limits: limits)
        }
    }

    /// Repairs exactly the two defects of the [MS-PRES] §2.2.2.4.2 poolFqdn
    /// example and nothing else:
    ///
    /// 1. Inside a start tag, a quoted attribute value that runs to the end of a
    ///    line when the next line starts (after spaces/tabs) with `name=` and a
    ///    quote is closed at the end of that line (before trailing blanks).
    /// 2. After an empty-element tag's `/>`, a stray `"` followed by optional
    ///    blanks and `/>` on the same line is removed.
    ///
    /// Comments, processing instructions and character data are passed through
    /// untouched (quotes are only tracked inside start tags).
    static func repairingSpecDefects(_ input: [UInt8]) -> [UInt8] {
        enum Mode {
            case content, tag
            case value(UInt8)
        }
        let quote: UInt8 = 0x22
        let apostrophe: UInt8 = 0x27
        let lt: UInt8 = 0x3C
        let gt: UInt8 = 0x3E
        let slash: UInt8 = 0x2F
        func isBlank(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }
        func isNameStart(_ b: UInt8) -> Bool {
            (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F || b == 0x3A
        }
        func isNameChar(_ b: UInt8) -> Bool { isNameStart(b) || (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x2E }
        /// True when `input[from...]` is blanks, an XML name, blanks, `=`, blanks, a quote.
        func startsAttribute(at from: Int) -> Bool {
            var j = from
            while j < input.count, isBlank(input[j]) { j += 1 }
            guard j < input.count, isNameStart(input[j]) else { return false }
            while j < input.count, isNameChar(input[j]) { j += 1 }
            while j < input.count, isBlank(input[j]) { j += 1 }
            guard j < input.count, input[j] == 0x3D else { return false }
            j += 1
            while j < input.count, isBlank(input[j]) { j += 1 }
            return j < input.count && (input[j] == quote || input[j] == apostrophe)
        }
        var out: [UInt8] = []
        out.reserveCapacity(input.count + 4)
        var mode = Mode.content
        var i = 0
        while i < input.count {
            let b = input[i]
            switch mode {
            case .content:
                if b == lt, i + 1 < input.count, isNameStart(input[i + 1]) { mode = .tag }
            case .tag:
                if b == quote || b == apostrophe {
                    mode = .value(b)
                } else if b == gt {
                    mode = .content
                    if i > 0, input[i - 1] == slash {
                        // Defect 2: `/>" />` -> `/>`.
                        var j = i + 1
                        while j < input.count, isBlank(input[j]) { j += 1 }
                        if j < input.count, input[j] == quote {
                            var k = j + 1
                            while k < input.count, isBlank(input[k]) { k += 1 }
                            if k + 1 < input.count, input[k] == slash, input[k + 1] == gt {
                                out.append(b)
                                i = k + 2
                                continue
                            }
                        }
                    }
                }
            case .value(let q):
                if b == q {
                    mode = .tag
                } else if b == 0x0A || b == 0x0D {
                    // Defect 1: the value is unterminated and the next line starts a new attribute.
                    var next = i + 1
                    if b == 0x0D, next < input.count, input[next] == 0x0A { next += 1 }
                    if startsAttribute(at: next) {
                        var trailing: [UInt8] = []
                        while let last = out.last, isBlank(last) {
                            trailing.insert(last, at: 0)
                            out.removeLast()
                        }
                        out.append(q)
                        out += trailing
                        mode = .tag
                    }
                }
            }
            out.append(b)
            i += 1
        }
        return out
    }

    /// The list as UTF-8 bytes (``XMLWriter`` defaults), always well-formed, in the rlmi
    /// default namespace.
    public func serialized() -> [UInt8] {
        let ns = NS.rlmi
        func writeNames(_ names: [PIDFNote], to w: inout XMLStreamWriter) {
            for n in names {
                w.startElement(ns, "name", prefix: nil, indentsChildren: false)
                if let lang = n.lang { w.attribute(XMLName(NS.xml, "lang"), lang, prefix: "xml") }
                if !n.text.isEmpty { w.text(n.text) }
                w.endElement()
            }
        }
        var w = XMLStreamWriter()
        w.startElement(ns, "list", prefix: nil)
        w.attribute("uri", uri)
        w.attribute("version", decimal: Int(version))
        w.attribute("fullState", fullState.xsd)
        w.attribute("cid", cid)
        writeNames(names, to: &w)
        for r in resources {
            w.startElement(ns, "resource", prefix: nil)
            w.attribute("uri", r.uri)
            writeNames(r.names, to: &w)
            for i in r.instances {
                w.startElement(ns, "instance", prefix: nil)
                w.attribute("id", i.id)
                w.attribute("state", i.state.rawValue)
                w.attribute("reason", i.reason)
                w.attribute("cid", i.cid)
                w.attribute("statusCode", i.statusCode.map(String.init))
                w.attribute("poolFqdn", i.poolFqdn)
                w.endElement()
            }
            w.endElement()
        }
        w.endElement()
        return w.finish()
    }
}
