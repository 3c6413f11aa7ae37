import NIOCore
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing

/// Pres-rules changes announced by the OMA side (RFC 5875; docs/flows.md, "Policy from XCAP"):
/// with `xcap: { xcap-diff: true }` the core subscribes to each XCAP presentity's `xcap-diff`
/// event, and a NOTIFY whose RFC 5874 document names the presentity's pres-rules document has
/// it fetched at once.
@Suite struct XCAPDiffTests {
    typealias T = GatewayCoreTests

    static let erin = "sip:erin@oma.example"
    static let root = "http://127.0.0.1:8080/xcap-root"
    static let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(
        of: "presentities:\n",
        with: "xcap: { root: \"\(root)\", xcap-diff: true }\npresentities:\n  \"\(erin)\": { pres-rules: xcap }\n")

    /// An `application/xcap-diff+xml` document (RFC 5874 §3) naming `sel` below the root.
    static func diff(_ sel: String, root: String = root) -> [UInt8] {
        Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <xcap-diff xmlns="urn:ietf:params:xml:ns:xcap-diff" xcap-root="\(root)/">
              <document new-etag="e2" previous-etag="e1" sel="\(sel)"/>
            </xcap-diff>
            """.utf8)
    }

    static func notify(_ subscribe: SIPRequest, cseq: Int, body: [UInt8], state: String = "active;expires=3500") throws
        -> SIPRequest
    {
        try T.omaNotify(
            subscribe, cseq: cseq, state: state, body: body, event: "xcap-diff", contentType: "application/xcap-diff+xml")
    }

    static func changed(_ actions: [GatewayCore.Action]) -> [String] {
        actions.compactMap { if case .xcapDocumentChanged(let presentity) = $0 { presentity } else { nil } }
    }

    /// Erin's watch, subscribed at start and answered: the SUBSCRIBE and its context.
    static func watching(_ h: inout T.Harness) throws -> (SIPRequest, GatewayCore.Context) {
        let started = h.core.start(now: h.now)
        let (subscribe, context) = try #require(T.sent(started, to: .oma).first { $0.0.headers[.event] == "xcap-diff" })
        _ = h.core.receive(
            SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "x1",
                        headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
            to: subscribe, context: context, now: h.now)
        return (subscribe, context)
    }

    /// RFC 5875 §4.1: the SUBSCRIBE names the documents of interest in a resource list; it goes
    /// to Erin's address, for event `xcap-diff`, accepting `application/xcap-diff+xml`.
    @Test func eachXCAPPresentityIsWatched() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (subscribe, _) = try Self.watching(&h)
        #expect(subscribe.uri.description == Self.erin)
        #expect(subscribe.headers[.accept] == "application/xcap-diff+xml")
        #expect(subscribe.headers[.contentType] == "application/resource-lists+xml")
        let body = String(decoding: subscribe.body, as: UTF8.self)
        #expect(body.contains("\(Self.root)/pres-rules/users/\(Self.erin)/index"), "\(body)")
        // Without `xcap-diff: true` nothing is subscribed.
        var plain = try T.Harness(yaml: Self.yaml.replacingOccurrences(of: ", xcap-diff: true", with: ""))
        #expect(T.sent(plain.core.start(now: plain.now), to: .oma).isEmpty)
    }

    /// A NOTIFY naming Erin's document (percent-encoded or not) has it fetched; one naming
    /// another document, or with no body, does not; a body that is no xcap-diff document is
    /// refused with 400 and a Warning.
    @Test func aNotifyNamingTheDocumentHasItFetched() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (subscribe, _) = try Self.watching(&h)
        let (firstID, first) = h.receive(try Self.notify(subscribe, cseq: 1, body: []), from: .oma)
        #expect(T.responses(first, firstID).first?.statusCode == 200)
        #expect(Self.changed(first).isEmpty)

        let (_, named) = h.receive(
            try Self.notify(subscribe, cseq: 2, body: Self.diff("pres-rules/users/sip:erin@oma.example/index")), from: .oma)
        #expect(Self.changed(named) == [Self.erin])
        let (_, encoded) = h.receive(
            try Self.notify(subscribe, cseq: 3, body: Self.diff("pres-rules/users/sip%3Aerin%40oma.example/index")),
            from: .oma)
        #expect(Self.changed(encoded) == [Self.erin])
        let (_, other) = h.receive(
            try Self.notify(subscribe, cseq: 4, body: Self.diff("pres-rules/users/sip:bob@oma.example/index")), from: .oma)
        #expect(Self.changed(other).isEmpty)

        let (badID, bad) = h.receive(try Self.notify(subscribe, cseq: 5, body: Array("<xcap-diff/>".utf8)), from: .oma)
        let refused = try #require(T.responses(bad, badID).first)
        #expect(refused.statusCode == 400 && refused.headers[.warning]?.hasPrefix("399 ") == true)
        #expect(Self.changed(bad).isEmpty)
    }

    /// A refusal (here 489, an OMA side without the package) leaves Erin to polling: no retry.
    /// A subscription ended `deactivated` is made again at once (RFC 6665 §4.1.3).
    @Test func refusedOrEndedWatches() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let started = h.core.start(now: h.now)
        let (subscribe, context) = try #require(T.sent(started, to: .oma).first)
        let refused = h.core.receive(SIPResponse(replyingTo: subscribe, statusCode: 489, toTag: "x1"),
                                     to: subscribe, context: context, now: h.now)
        #expect(T.sent(refused, to: .oma).isEmpty)

        var again = try T.Harness(yaml: Self.yaml)
        let (watch, _) = try Self.watching(&again)
        let (_, ended) = again.receive(
            try Self.notify(watch, cseq: 1, body: [], state: "terminated;reason=deactivated"), from: .oma)
        let renewed = try #require(T.sent(ended, to: .oma).first?.0)
        #expect(try renewed.headers[.event] == "xcap-diff" && (renewed.headers.to)?.tag == nil)
        #expect(renewed.headers.callID != watch.headers.callID)
    }

    /// The document of RFC 5874 §3: the root needs `xcap-root`, each `document` a `sel`.
    @Test func theDiffDocument() throws {
        let diff = try XCAPDiff(bytes: Self.diff("pres-rules/users/sip:erin@oma.example/index"))
        #expect(diff.documents == [XCAPDiff.Document(sel: "pres-rules/users/sip:erin@oma.example/index",
                                                     newETag: "e2", previousETag: "e1")])
        #expect(diff.documentURI(of: diff.documents[0]) == "\(Self.root)/pres-rules/users/sip:erin@oma.example/index")
        #expect(throws: (any Error).self) {
            try XCAPDiff(bytes: Array(#"<xcap-diff xmlns="urn:ietf:params:xml:ns:xcap-diff"/>"#.utf8))
        }
        #expect(throws: (any Error).self) {
            try XCAPDiff(bytes: Array(#"<xcap-diff xmlns="urn:ietf:params:xml:ns:xcap-diff" xcap-root="x"><document/></xcap-diff>"#.utf8))
        }
    }
}
