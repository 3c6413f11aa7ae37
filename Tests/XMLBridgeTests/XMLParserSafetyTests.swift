import Foundation
import Testing
import XMLBridge

/// The parser refuses DTDs outright and enforces its limits (XMLLimits).
@Suite struct XMLParserSafetyTests {
    private func parseError(_ text: String, limits: XMLLimits = XMLLimits()) -> XMLError? {
        parseError(Array(text.utf8), limits: limits)
    }

    private func parseError(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) -> XMLError? {
        do {
            _ = try XMLParser.parse(bytes, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func externalEntityDocumentIsRefusedAndNeverSeesTheFile() throws {
        let passwd = (try? String(contentsOfFile: "/etc/passwd", encoding: .utf8)) ?? ""
        let firstLine = passwd.split(separator: "\n").first.map(String.init) ?? "root:"
        let xxe = #"<?xml version="1.0"?><!DOCTYPE foo [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><foo>&xxe;</foo>"#
        let error = try #require(parseError(xxe))
        #expect(error.code == .doctypeForbidden)
        #expect(!error.message.contains(firstLine))
        #expect(!error.description.contains("root:"))
    }

    @Test func billionLaughsIsRefusedAtTheDoctype() throws {
        var doc = #"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">"#
        doc += #"<!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">"#
        for level in 2...9 {
            let previous = "&lol\(level - 1);"
            doc += "<!ENTITY lol\(level) \"\(String(repeating: previous, count: 10))\">"
        }
        doc += "]><lolz>&lol9;</lolz>"
        let error = try #require(parseError(doc))
        #expect(error.code == .doctypeForbidden)
        // Refused at the DOCTYPE itself, on line 1, before any entity is declared.
        #expect(error.line == 1)
    }

    @Test func externalDTDReferenceFailsWithoutConnecting() throws {
        let listener = try #require(LocalListener())
        let doc = #"<?xml version="1.0"?><!DOCTYPE x SYSTEM "http://127.0.0.1:\#(listener.port)/x.dtd"><x/>"#
        let error = try #require(parseError(doc))
        #expect(error.code == .doctypeForbidden)
        #expect(!listener.hadConnection)
        // The same with the brief's discard port: refused, not a network error.
        #expect(parseError(#"<!DOCTYPE x SYSTEM "http://127.0.0.1:9/x.dtd"><x/>"#)?.code == .doctypeForbidden)
    }

    @Test func publicDoctypeWithoutInternalSubsetIsRefused() {
        let doc = #"<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd"><html/>"#
        #expect(parseError(doc)?.code == .doctypeForbidden)
    }

    @Test func hundredMegabyteDocumentIsRefusedBeforeParsing() throws {
        var bytes = Array("<a>".utf8)
        bytes += [UInt8](repeating: 0x61, count: 100 << 20)
        let error = try #require(parseError(bytes))
        #expect(error.code == .tooLarge)
        #expect(error.line == 0)  // no parser position: nothing was parsed
    }

    @Test func documentOfExactlyMaxBytesIsAccepted() throws {
        let doc = Array("<a>xyz</a>".utf8)
        _ = try XMLParser.parse(doc, limits: XMLLimits(maxBytes: doc.count))
        #expect(parseError(doc, limits: XMLLimits(maxBytes: doc.count - 1))?.code == .tooLarge)
    }

    private func nested(_ depth: Int) -> String {
        String(repeating: "<e>", count: depth) + String(repeating: "</e>", count: depth)
    }

    @Test func nestingOf64IsAcceptedAnd65IsTooDeep() throws {
        var element = try XMLParser.parse(nested(64))
        var depth = 1
        while let child = element.element(XMLName("", "e")) { element = child; depth += 1 }
        #expect(depth == 64)
        let error = try #require(parseError(nested(65)))
        #expect(error.code == .tooDeep)
    }

    @Test func elementCountLimitCountsEveryElementIncludingTheRoot() throws {
        let limits = XMLLimits(maxElements: 10)
        let ten = "<r>" + String(repeating: "<c/>", count: 9) + "</r>"
        let eleven = "<r>" + String(repeating: "<c/>", count: 10) + "</r>"
        #expect(try XMLParser.parse(ten, limits: limits).elements(XMLName("", "c")).count == 9)
        #expect(parseError(eleven, limits: limits)?.code == .tooManyElements)
        // The default limit is 50,000.
        let many = "<r>" + String(repeating: "<c/>", count: 50_000) + "</r>"
        #expect(parseError(many)?.code == .tooManyElements)
    }

    @Test func undefinedEntityIsNotWellFormedWithPosition() throws {
        let error = try #require(parseError("<a>\n  x &foo; y\n</a>"))
        #expect(error.code == .notWellFormed)
        #expect(error.line == 2)
        #expect(error.column > 0)
    }

    @Test func predefinedEntitiesAndCharacterReferencesDecodeInAttributes() throws {
        // XML 1.0 §4.6 (predefined entities) and §4.1 (character references).
        let a = try XMLParser.parse(#"<e a="x&amp;y&#65;" b="&lt;&gt;&quot;&apos;&#x26;&#38;"/>"#)
        #expect(a[attribute: "a"] == "x&yA")
        #expect(a[attribute: "b"] == "<>\"'&&")
    }

    @Test func predefinedEntitiesAndCharacterReferencesDecodeInText() throws {
        #expect(try XMLParser.parse("<e>&lt;&#x263A;</e>").text == "<☺")
        #expect(try XMLParser.parse("<e>&amp;&#38;&gt;&apos;&quot;&#x1F600;</e>").text == "&&>'\"😀")
    }

    @Test func attributeValuesAreNormalizedButCharacterReferencesSurvive() throws {
        // XML 1.0 §3.3.3: literal tab, LF and CR become spaces; &#9; &#10; &#13; stay.
        let e = try XMLParser.parse("<e a=\"1\t2\n3\r\n4\" b=\"1&#9;2&#10;3&#13;4\"/>")
        #expect(e[attribute: "a"] == "1 2 3 4")
        #expect(e[attribute: "b"] == "1\t2\n3\r4")
    }

    @Test func lineEndsInTextAreNormalizedToLineFeed() throws {
        // XML 1.0 §2.11.
        #expect(try XMLParser.parse("<e>a\r\nb\rc&#13;</e>").text == "a\nb\nc\r")
    }

    @Test func cdataFoldsIntoTheSurroundingText() throws {
        let e = try XMLParser.parse("<e>a<![CDATA[<b>&amp;]]>c</e>")
        #expect(e.children == [.text("a<b>&amp;c")])
    }

    @Test func commentsAndProcessingInstructionsAreDropped() throws {
        let e = try XMLParser.parse("<e>a<!-- note --><?pi data?>b</e>")
        #expect(e.text == "ab")
    }

    @Test(arguments: ["", " ", "hello, world", #"{"a": 1}"#, "<a>", "<a></b>", "<a/><b/>", "\u{FEFF}"])
    func nonDocumentsAreNotWellFormed(_ input: String) {
        #expect(parseError(input)?.code == .notWellFormed)
    }

    @Test func mismatchedEndTagReportsItsLineAndAColumn() throws {
        let error = try #require(parseError("<a>\n  <b>\n  </c>\n</a>"))
        #expect(error.code == .notWellFormed)
        #expect(error.line == 3)
        #expect(error.column > 0)
    }

    @Test func parsedElementsRecordTheirStartTagLine() throws {
        let root = try XMLParser.parse("<a>\n<b/>\n\n<c/></a>")
        #expect(root.element(XMLName("", "b"))?.line == 2)
        #expect(root.element(XMLName("", "c"))?.line == 4)
    }
}
