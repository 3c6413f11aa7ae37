import Testing
import XMLBridge

/// The benchmark's libxml2 baselines answer well-formedness like the bridge:
/// a wrong answer would let the benchmark time an early failure instead of
/// a whole parse.
@Suite struct LibXMLBaselineTests {
    private let good = Array(#"<a xmlns="urn:one" xmlns:p="urn:two"><p:b x="1">text &amp; more</p:b></a>"#.utf8)
    private let bad = Array(#"<a xmlns="urn:one"><b></a>"#.utf8)

    @Test func treeParseTellsWellFormedFromMalformed() {
        #expect(LibXMLBaseline.parseAndFree(good))
        #expect(!LibXMLBaseline.parseAndFree(bad))
        #expect(!LibXMLBaseline.parseAndFree([]))
    }

    @Test func saxFloorReusesItsContextAcrossFailures() throws {
        let floor = try #require(LibXMLSAXFloor())
        #expect(floor.parse(good))
        #expect(!floor.parse(bad))
        #expect(floor.parse(good))
        #expect(!floor.parse([]))
        #expect(!floor.parse(Array("<a>".utf8)))
        #expect(floor.parse(good))
    }
}
