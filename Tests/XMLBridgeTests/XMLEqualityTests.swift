import Testing
import XMLBridge

struct XMLEqualityTests {
    @Test func indentationIsNotContent() throws {
        let compact = try XMLParser.parse("<a xmlns=\"urn:x\"><b>1</b><c/></a>")
        let indented = try XMLParser.parse("<a xmlns=\"urn:x\">\n  <b>1</b>\n  <c/>\n</a>")
        #expect(compact == indented)
        #expect(compact.hashValue == indented.hashValue)
    }

    @Test func textThatIsNotOnlyWhiteSpaceStillCounts() throws {
        #expect(try XMLParser.parse("<a><b> 1</b></a>") != XMLParser.parse("<a><b>1</b></a>"))
        #expect(try XMLParser.parse("<a>x<b/></a>") != XMLParser.parse("<a><b/></a>"))
        #expect(try XMLParser.parse("<a><b/><c/></a>") != XMLParser.parse("<a><c/><b/></a>"))
    }
}
