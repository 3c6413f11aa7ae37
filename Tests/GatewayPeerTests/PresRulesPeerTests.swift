import Foundation
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing

/// Pres-rules that change while the gateway runs (RFC 5025; docs/flows.md, "Policy from XCAP"):
/// from an XCAP server (RFC 4825), where Kamailio's `xcap_server` keeps Erin's document and the
/// test changes it over HTTP as her XCAP client would, the gateway (in process) polling every
/// second with If-None-Match; and by time, a rule's validity ending (RFC 4745 §7.3). Either way
/// her live enterprise watchers are resolved again. The OMA proxy and the enterprise edge are
/// bare UDP sockets of the test.
@Suite(.serialized) struct PresRulesPeerTests {
    typealias Gateway = AdminAPITests.Gateway

    static let erin = "sip:erin@oma.example"
    static let carol = "sip:carol@contoso.com"
    static let dave = "sip:dave@contoso.com"

    /// Transformations that grant everything (RFC 5025 §3.3), as OMA clients write for an
    /// allowed watcher: without them an allowed watcher is shown nothing.
    static let everything = """
        <cr:transformations><pr:provide-services><pr:all-services/></pr:provide-services>\
        <pr:provide-persons><pr:all-persons/></pr:provide-persons><pr:provide-all-attributes/></cr:transformations>
        """

    /// A pres-rules document (RFC 5025 §3.2.1) with one identity rule per watcher, granting
    /// `transformations` (default: ``everything``).
    static func rules(_ handlings: [(watcher: String, handling: String)], transformations: String = everything) -> String {
        let rules = handlings.enumerated().map { index, entry in
            """
              <cr:rule id="r\(index)"><cr:conditions><cr:identity><cr:one id="\(entry.watcher)"/></cr:identity></cr:conditions>
                <cr:actions><pr:sub-handling>\(entry.handling)</pr:sub-handling></cr:actions>\(transformations)</cr:rule>
            """
        }
        return """
            <?xml version="1.0" encoding="UTF-8"?>
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules">
            \(rules.joined(separator: "\n"))
            </cr:ruleset>
            """
    }

    static let pidf = """
        <?xml version="1.0" encoding="UTF-8"?>
        <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" \
        xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" entity="sip:erin@oma.example">
        <tuple id="t1"><status><basic>open</basic></status></tuple>
        <dm:person id="p1"><rpid:activities><rpid:busy/></rpid:activities></dm:person>
        </presence>
        """

    /// The gateway with Erin's pres-rules from `rules` (a file, or `xcap`), every network's default
    /// `defaults`, and the `extra` top-level YAML.
    static func gateway(defaults: String = "block", rules: String, extra: String = "") async throws -> Gateway {
        try await Gateway(
            presentities: """
                  "\(erin)":
                    defaults: { sameEnterprise: \(defaults), federated: \(defaults), publicCloud: \(defaults) }
                    pres-rules: \(rules)
                """,
            extra: extra)
    }

    /// Waits until `gateway_xcap_fetches_total{result}` reaches `count`.
    static func fetched(_ gw: Gateway, _ result: String, _ count: Double) async throws {
        let deadline = Date().addingTimeInterval(10)
        while (gw.metric(#"gateway_xcap_fetches_total{result="\#(result)"}"#) ?? 0) < count {
            guard Date() < deadline else {
                Issue.record("no \(result) fetch: \(gw.metric(#"gateway_xcap_fetches_total{result="\#(result)"}"#) ?? 0)")
                return
            }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
    }

    /// `user` subscribes to Erin from behind the edge; the OMA proxy socket answers the gateway's
    /// SUBSCRIBE and notifies Erin busy, which reaches the watcher. Returns the OMA leg's SUBSCRIBE.
    static func bridge(_ gw: Gateway, _ user: String) async throws -> SIPRequest {
        gw.carolSubscribes(to: erin, callID: "\(user)-x", as: user)
        let subscribe = try #require(await gw.kamailio.request(.subscribe, within: 5))
        let from = try #require(try subscribe.headers.from)
        let callID = subscribe.headers.callID ?? ""
        gw.kamailio.answer(subscribe, to: gw.oma, toTag: "ps-\(user)", extra: "Expires: 600\n")
        gw.kamailio.send("""
            NOTIFY sip:gw@127.0.0.1:\(gw.oma) SIP/2.0
            Via: SIP/2.0/UDP \(gw.kamailio.hostPort);branch=z9hG4bKx\(user);rport
            Max-Forwards: 70
            From: <\(erin)>;tag=ps-\(user)
            To: <\(from.uri)>;tag=\(from.tag ?? "")
            Call-ID: \(callID)
            CSeq: 2 NOTIFY
            Contact: <sip:\(gw.kamailio.hostPort)>
            Event: presence
            Subscription-State: active;expires=600
            Content-Type: application/pidf+xml

            """, body: Array(pidf.utf8), to: gw.oma)
        let told = await edge(gw, for: 1)
        #expect(told.compactMap { aggregateState(categoriesDocuments($0), of: erin)?.availability }.last == 6500,
                "\(user) did not see Erin busy: \(told)")
        return subscribe
    }

    /// What the edge receives for `seconds`, requests answered 200 as a client would.
    static func edge(_ gw: Gateway, for seconds: Double) async -> [SIPMessage] {
        let messages = await gw.edge.receive(for: seconds)
        for request in messages.compactMap(\.request) { gw.edge.answer(request, to: UInt16(gw.server.bound[.enterprise]?.first?.port ?? 0)) }
        return messages
    }

    static func dialog(_ message: SIPMessage, _ user: String) -> Bool { message.headers.callID == "\(user)-x@contoso" }

    @Test func aChangedDocumentReachesOnlyTheWatchersWhoseViewChanged() async throws {
        let xcap = try await XCAPKamailio.start()
        defer { xcap.stop() }
        try await xcap.putPresRules(Self.erin, Self.rules([(Self.carol, "allow"), (Self.dave, "allow")]))
        // Without a rule, nobody sees Erin: a watcher is allowed by her document only.
        let gw = try await Self.gateway(rules: "xcap", extra: "xcap: { root: \"\(xcap.root)\", poll: 1, timeout: 5 }")
        try await Self.fetched(gw, "changed", 1)
        let carolLeg = try await Self.bridge(gw, "carol")
        _ = try await Self.bridge(gw, "dave")
        try await Self.fetched(gw, "unchanged", 2)  // polled again: 304 for the ETag it holds

        // Carol is now politely blocked: she is told Erin never published; Dave hears nothing.
        try await xcap.putPresRules(Self.erin, Self.rules([(Self.carol, "polite-block"), (Self.dave, "allow")]))
        var told = await Self.edge(gw, for: 3)
        let toCarol = told.filter { Self.dialog($0, "carol") }
        #expect(!toCarol.isEmpty && told.allSatisfy { Self.dialog($0, "carol") }, "\(told)")
        let documents = toCarol.flatMap(categoriesDocuments)
        #expect(!documents.isEmpty && aggregateState(documents, of: Self.erin) == nil,
                "polite-block shows the never-published view: \(toCarol)")
        #expect(documents.allSatisfy { $0.categories.allSatisfy { $0.payload == nil } }, "\(documents)")

        // Blocked: her resource ends `rejected` (RFC 6665 §4.2.2) and her OMA leg is unsubscribed.
        try await xcap.putPresRules(Self.erin, Self.rules([(Self.carol, "block"), (Self.dave, "allow")]))
        told = await Self.edge(gw, for: 3)
        #expect(told.contains { Self.dialog($0, "carol") && String(decoding: $0.body, as: UTF8.self).contains("rejected") }, "\(told)")
        #expect(told.allSatisfy { Self.dialog($0, "carol") }, "\(told)")
        let unsubscribe = await gw.kamailio.request(.subscribe, within: 5)
        #expect(unsubscribe?.headers.callID == carolLeg.headers.callID && unsubscribe?.headers[.expires] == "0")

        // A document that is not a ruleset changes nothing: logged, the rules in force stay.
        try await xcap.putPresRules(Self.erin, "<?xml version=\"1.0\"?><ruleset xmlns=\"urn:example:other\"/>")
        try await Self.fetched(gw, "invalid", 1)
        #expect(await Self.edge(gw, for: 1.5).isEmpty)

        // No document: the defaults decide, which block Dave too.
        try await xcap.deletePresRules(Self.erin)
        try await Self.fetched(gw, "absent", 1)
        told = await Self.edge(gw, for: 2)
        #expect(told.contains { Self.dialog($0, "dave") && String(decoding: $0.body, as: UTF8.self).contains("rejected") }, "\(told)")
        await gw.stop()
    }

    /// Until the document has been fetched, a watcher waits (`confirm`), never the defaults: an
    /// XCAP server that cannot be reached allows nobody. Once it answers, the waiting watcher is
    /// decided at once.
    /// An OMA user's ordinary rules from the XDMS (OMA-TS-Presence_SIMPLE_XDM, Presence
    /// Authorization Rules; docs/flows.md, "OMA's pres-rules extensions"): Erin's buddy list, a
    /// resource-lists document (RFC 4826 §3) on the same XCAP server named by an
    /// `ocp:external-list` anchor, allows Carol; Dave, in no list, waits for Erin's decision
    /// (`ocp:other-identity` → confirm), though the defaults would block them both.
    @Test func anOMABuddyListAllowsAndOtherIdentityConfirms() async throws {
        let xcap = try await XCAPKamailio.start()
        defer { xcap.stop() }
        let list = try await loopbackHTTP(
            port: Int(xcap.port), "PUT", "/xcap-root/resource-lists/users/\(Self.erin)/index",
            body: """
                <?xml version="1.0" encoding="UTF-8"?>
                <resource-lists xmlns="urn:ietf:params:xml:ns:resource-lists">\
                <list name="oma_grantedcontacts"><entry uri="\(Self.carol)"/></list></resource-lists>
                """, headers: ["Content-Type: application/resource-lists+xml"])
        #expect(list.status == 200 || list.status == 201, "\(xcap.log.suffix(500))")
        try await xcap.putPresRules(Self.erin, """
            <?xml version="1.0" encoding="UTF-8"?>
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules" \
            xmlns:ocp="urn:oma:xml:xdm:common-policy">
              <cr:rule id="wp_prs_grantedcontacts"><cr:conditions><ocp:external-list>\
            <ocp:entry anc="\(xcap.root)/resource-lists/users/\(Self.erin)/index"/></ocp:external-list></cr:conditions>
                <cr:actions><pr:sub-handling>allow</pr:sub-handling></cr:actions>\(Self.everything)</cr:rule>
              <cr:rule id="wp_prs_unlisted"><cr:conditions><ocp:other-identity/></cr:conditions>
                <cr:actions><pr:sub-handling>confirm</pr:sub-handling></cr:actions></cr:rule>
            </cr:ruleset>
            """)
        let gw = try await Self.gateway(rules: "xcap", extra: "xcap: { root: \"\(xcap.root)\", poll: 1, timeout: 5 }")
        try await Self.fetched(gw, "changed", 1)
        #expect((gw.metric(#"gateway_xcap_external_lists_total{result="resolved"}"#) ?? 0) >= 1)
        _ = try await Self.bridge(gw, "carol")
        gw.carolSubscribes(to: Self.erin, callID: "dave-x", as: "dave")
        let told = await Self.edge(gw, for: 2)
        #expect(told.contains { Self.dialog($0, "dave") && String(decoding: $0.body, as: UTF8.self).contains("pending") },
                "Dave waits for Erin's decision: \(told)")
        #expect(await gw.kamailio.receive(for: 1).compactMap(\.request).allSatisfy { $0.method != .subscribe },
                "no OMA leg for Dave")
        await gw.stop()
    }

    @Test func aWatcherWaitsUntilTheDocumentArrives() async throws {
        // The configured defaults would allow Carol; nothing listens yet on the XCAP port.
        let port = try LoopbackPorts.free()
        let gw = try await Self.gateway(defaults: "allow", rules: "xcap", extra: "xcap: { root: \"http://127.0.0.1:\(port)/xcap-root\", poll: 1, timeout: 1 }")
        try await Self.fetched(gw, "failed", 1)
        gw.carolSubscribes(to: Self.erin, callID: "carol-x")
        #expect(await gw.kamailio.receive(for: 1).compactMap(\.request).allSatisfy { $0.method != .subscribe },
                "no OMA subscription while Erin's rules are unknown")
        let waiting = await Self.edge(gw, for: 1)
        #expect(waiting.contains { Self.dialog($0, "carol") && String(decoding: $0.body, as: UTF8.self).contains("pending") }, "\(waiting)")

        // The XCAP server comes up with Erin's document allowing Carol: the OMA leg starts.
        let xcap = try await XCAPKamailio.start(port: port)
        defer { xcap.stop() }
        try await xcap.putPresRules(Self.erin, Self.rules([(Self.carol, "allow")]))
        try await Self.fetched(gw, "changed", 1)
        let leg = await gw.kamailio.request(.subscribe, within: 5)
        #expect(leg?.uri.description == Self.erin, "the waiting watcher was not decided")
        await gw.stop()
    }

    /// A rule allows Carol until a moment 6 s after the start (RFC 4745 §7.3), in a pres-rules
    /// file; when it passes, the defaults (block) decide: her resource ends `rejected` and her
    /// OMA leg is unsubscribed, without a reload.
    @Test func aRuleStopsApplyingWhenItsValidityEnds() async throws {
        let format = ISO8601DateFormatter()
        let file = NSTemporaryDirectory() + "validity-\(UInt32.random(in: 0...UInt32.max)).xml"
        let validity = "<cr:validity><cr:from>\(format.string(from: Date().addingTimeInterval(-60)))</cr:from>"
            + "<cr:until>\(format.string(from: Date().addingTimeInterval(6)))</cr:until></cr:validity>"
        try Self.rules([(Self.carol, "allow")]).replacingOccurrences(of: "</cr:identity></cr:conditions>", with: "</cr:identity>\(validity)</cr:conditions>")
            .write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let gw = try await Self.gateway(rules: file)
        let leg = try await Self.bridge(gw, "carol")
        let told = await Self.edge(gw, for: 7)
        #expect(told.contains { Self.dialog($0, "carol") && String(decoding: $0.body, as: UTF8.self).contains("rejected") }, "\(told)")
        let unsubscribe = await gw.kamailio.request(.subscribe, within: 5)
        #expect(unsubscribe?.headers.callID == leg.headers.callID && unsubscribe?.headers[.expires] == "0")
        await gw.stop()
    }

    /// Transformations changed in the XCAP document (RFC 5025 §3.3): the gateway refreshes the
    /// watcher's OMA leg for full state and shows it as now granted. Without
    /// `provide-activities`, Erin's busy is not shown (open alone: Online, 3500); granted again,
    /// busy is back.
    @Test func changedTransformationsReshowTheFullState() async throws {
        let xcap = try await XCAPKamailio.start()
        defer { xcap.stop() }
        try await xcap.putPresRules(Self.erin, Self.rules([(Self.dave, "allow")]))
        let gw = try await Self.gateway(rules: "xcap", extra: "xcap: { root: \"\(xcap.root)\", poll: 1, timeout: 5 }")
        try await Self.fetched(gw, "changed", 1)
        let leg = try await Self.bridge(gw, "dave")
        var cseq = 2
        /// The refresh the gateway sends in Dave's leg, answered with 200 and a NOTIFY of the full
        /// state; the availability Dave is then shown.
        func refreshed() async throws -> UInt32? {
            let refresh = try #require(await gw.kamailio.request(.subscribe, within: 6),
                                       "no refresh of Dave's leg")
            let tag = try refresh.headers.to?.tag
            #expect(refresh.headers.callID == leg.headers.callID && tag == "ps-dave")
            gw.kamailio.answer(refresh, to: gw.oma, extra: "Contact: <sip:\(gw.kamailio.hostPort)>\nExpires: 600\n")
            cseq += 1
            gw.kamailio.send("""
                NOTIFY sip:gw@127.0.0.1:\(gw.oma) SIP/2.0
                Via: SIP/2.0/UDP \(gw.kamailio.hostPort);branch=z9hG4bKr\(cseq);rport
                Max-Forwards: 70
                From: \(refresh.headers[.to] ?? "")
                To: \(refresh.headers[.from] ?? "")
                Call-ID: \(refresh.headers.callID ?? "")
                CSeq: \(cseq) NOTIFY
                Contact: <sip:\(gw.kamailio.hostPort)>
                Event: presence
                Subscription-State: active;expires=600
                Content-Type: application/pidf+xml

                """, body: Array(Self.pidf.utf8), to: gw.oma)
            return await Self.edge(gw, for: 1.5).compactMap { aggregateState(categoriesDocuments($0), of: Self.erin)?.availability }.last
        }
        let servicesOnly = "<cr:transformations><pr:provide-services><pr:all-services/></pr:provide-services></cr:transformations>"
        try await xcap.putPresRules(Self.erin, Self.rules([(Self.dave, "allow")], transformations: servicesOnly))
        #expect(try await refreshed() == 3500)
        try await xcap.putPresRules(Self.erin, Self.rules([(Self.dave, "allow")]))
        #expect(try await refreshed() == 6500)
        await gw.stop()
    }
}
