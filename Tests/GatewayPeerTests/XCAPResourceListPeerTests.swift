import Foundation
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing

/// Resource lists kept on an XCAP server (RFC 4826 `rls-services`; docs/flows.md, "Resource
/// lists"): Kamailio's `xcap_server` keeps the document of sip:lists@contoso.com, which the test
/// puts, changes and deletes over HTTP; the gateway (in process) polls it every second. An OMA
/// watcher behind the OMA proxy socket subscribes to the list; the enterprise edge socket answers
/// the members' SUBSCRIBEs.
@Suite(.serialized) struct XCAPResourceListPeerTests {
    typealias Gateway = AdminAPITests.Gateway
    static let owner = "sip:lists@contoso.com"
    static let team = "sip:team@contoso.com"

    static func rlsServices(_ members: [String]) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <rls-services xmlns="urn:ietf:params:xml:ns:rls-services" xmlns:rl="urn:ietf:params:xml:ns:resource-lists">
          <service uri="\(team)">
            <rl:list name="team">\(members.map { "<rl:entry uri=\"\($0)\"/>" }.joined())</rl:list>
            <packages><package>presence</package></packages>
          </service>
        </rls-services>
        """
    }

    /// The RLMI part of a list NOTIFY: the member URIs it lists and whether it is full state.
    static func rlmi(_ notify: SIPRequest) throws -> RLMIList {
        let body = try #require(try SIPMessage.request(notify).multipartBody(), "not multipart: \(notify)")
        return try RLMIList(bytes: try #require(body.parts.first).body)
    }

    /// What reaches the OMA proxy socket for `seconds`, requests answered 200; the NOTIFYs.
    static func notifies(_ gw: Gateway, for seconds: Double) async -> [SIPRequest] {
        let requests = await gw.kamailio.receive(for: seconds).compactMap(\.request)
        for request in requests { gw.kamailio.answer(request, to: gw.oma) }
        return requests.filter { $0.method == .notify }
    }

    /// What reaches the edge for `seconds`, requests answered 200; the requests.
    static func edge(_ gw: Gateway, for seconds: Double) async -> [SIPRequest] {
        let requests = await gw.edge.receive(for: seconds).compactMap(\.request)
        for request in requests {
            let initial = (try? request.headers.to?.tag) == nil
            gw.edge.answer(request, to: UInt16(gw.server.bound[.enterprise]?.first?.port ?? 0),
                           toTag: initial ? "e-\(request.uri.user ?? "")" : nil,
                           extra: request.method == .subscribe ? "Expires: \(request.headers[.expires] ?? "600")\n" : "")
        }
        return requests
    }

    @Test func aListKeptOnTheXCAPServerIsServedAndFollowsItsChanges() async throws {
        let xcap = try await XCAPKamailio.start()
        defer { xcap.stop() }
        try await xcap.putRLSServices(Self.owner, Self.rlsServices(["sip:bob@contoso.com", "sip:carol@contoso.com"]))
        let gw = try await Gateway(extra: "xcap: { root: \"\(xcap.root)\", poll: 1, timeout: 5, rls-services: [\"\(Self.owner)\"] }")
        try await PresRulesPeerTests.fetched(gw, "changed", 1)

        gw.kamailio.send("""
            SUBSCRIBE \(Self.team) SIP/2.0
            Via: SIP/2.0/UDP \(gw.kamailio.hostPort);branch=z9hG4bKxl1;rport
            Max-Forwards: 70
            From: <sip:alice@oma.example>;tag=xl1
            To: <\(Self.team)>
            Call-ID: xl1@oma
            CSeq: 1 SUBSCRIBE
            Contact: <sip:alice@\(gw.kamailio.hostPort)>
            Event: presence
            Supported: eventlist
            Accept: application/pidf+xml, application/rlmi+xml, multipart/related
            Expires: 600

            """, to: gw.oma)
        // 3 s each way: a CI run that runs suites side by side has taken more than 1 s to send
        // the legs.
        let legs = await Self.edge(gw, for: 3).filter { $0.method == .subscribe }
        #expect(Set(legs.map(\.uri.description)) == ["sip:bob@contoso.com", "sip:carol@contoso.com"], "\(legs)")
        let first = try #require(await Self.notifies(gw, for: 3).first)
        let full = try Self.rlmi(first)
        #expect(full.uri == Self.team && full.fullState)
        #expect(full.resources.map(\.uri) == ["sip:bob@contoso.com", "sip:carol@contoso.com"])

        // Carol taken out of the document: within a poll, full state without her, her dialog ended.
        try await xcap.putRLSServices(Self.owner, Self.rlsServices(["sip:bob@contoso.com"]))
        async let toEdge = Self.edge(gw, for: 3)
        let window = await Self.notifies(gw, for: 3)
        let changed = try #require(window.first)
        let shrunk = try Self.rlmi(changed)
        #expect(shrunk.fullState && shrunk.resources.map(\.uri) == ["sip:bob@contoso.com"])
        let carol = try #require(legs.first { $0.uri.description == "sip:carol@contoso.com" })
        #expect(await toEdge.contains { $0.headers.callID == carol.headers.callID && $0.headers[.expires] == "0" })

        // The document deleted: the list ends. The NOTIFYs above are answered only after their
        // window, so a retransmission of one of them (RFC 3261 §17.1.2.2) may still come: the
        // first NOTIFY after them is the one looked for.
        try await xcap.deleteRLSServices(Self.owner)
        let sequences = window.compactMap { try? $0.headers.cseq?.sequence }
        let last = try #require(sequences.max())
        let final = try #require(
            await Self.notifies(gw, for: 3).first { ((try? $0.headers.cseq?.sequence) ?? 0) > last })
        #expect(final.headers[.subscriptionState] == "terminated;reason=noresource")
        #expect((gw.metric(#"gateway_xcap_fetches_total{result="absent"}"#) ?? 0) >= 1)
        await gw.stop()
    }

    /// Which identities keep rls-services documents changes with a reload: one named anew is
    /// fetched at once, and its lists served; one no longer named takes its lists with it.
    @Test func aReloadNamesAndDropsListOwners() async throws {
        let xcap = try await XCAPKamailio.start()
        defer { xcap.stop() }
        try await xcap.putRLSServices(Self.owner, Self.rlsServices(["sip:bob@contoso.com"]))
        let server = "xcap: { root: \"\(xcap.root)\", poll: 1, timeout: 5"
        let gw = try await Gateway(extra: server + " }")
        #expect(gw.server.configuration.resourceLists.isEmpty)

        func reload(_ xcapLine: String) async throws -> String {
            let text = Gateway.yaml(kamailio: gw.kamailio.port, edge: gw.edge.port, token: nil, extra: xcapLine)
            try text.write(to: gw.file, atomically: true, encoding: .utf8)
            let (status, answer) = try await gw.http("POST", "/reload", body: "{}")
            #expect(status == 200, "\(answer)")
            return answer
        }
        func served(_ expected: [String: [String]]) async throws {
            let deadline = Date().addingTimeInterval(10)
            while gw.server.configuration.resourceLists != expected, Date() < deadline {
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            #expect(gw.server.configuration.resourceLists == expected)
        }
        let named = try await reload(server + ", rls-services: [\"\(Self.owner)\"] }")
        #expect(!named.contains("xcap"), "no restart needed: \(named)")
        try await served([Self.team: ["sip:bob@contoso.com"]])
        #expect(gw.server.configuration.awaitingResourceLists == false)

        _ = try await reload(server + " }")
        try await served([:])
        // Another server is a restart's business.
        let moved = try await reload("xcap: { root: \"http://127.0.0.1:9/xcap-root\", rls-services: [\"\(Self.owner)\"] }")
        #expect(moved.contains("needs a restart") && moved.contains("xcap"), "\(moved)")
        try await served([:])
        await gw.stop()
    }
}
