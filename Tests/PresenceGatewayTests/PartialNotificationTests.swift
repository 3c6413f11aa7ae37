import NIOCore
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing
import XMLBridge

/// Partial notifications (RFC 5263, RFC 5262 documents) in both of the gateway's roles
/// (docs/flows.md, "Partial notifications"). Every body a watcher of partial notifications
/// gets is checked as that watcher would: a `pidf-full` replaces what it holds, a `pidf-diff`
/// of the next version is applied to it, and what it then holds is the state a PIDF watcher
/// is sent.
@Suite struct PartialNotificationTests {
    typealias T = GatewayCoreTests
    static let bob = "sip:bob@contoso.com"

    /// What a watcher of partial notifications holds.
    struct Watcher {
        var version: UInt32?
        var document: XMLElement?

        /// Takes one NOTIFY; returns whether it was a diff (false: full state).
        mutating func take(_ notify: SIPRequest) throws -> Bool {
            #expect(try notify.headers.contentType?.mediaType == "application/pidf-diff+xml")
            switch try PIDFDiff(bytes: notify.body) {
            case .full(let version, let presence):
                if let version, let held = self.version { #expect(version > held) }
                self.version = version
                document = presence
                return false
            case .diff(let version, let operations):
                let held = try #require(self.version)
                #expect(version == held + 1, "a diff of version \(String(describing: version)) after \(held)")
                var tree = try #require(document)
                try PIDFDiff.apply(operations, to: &tree)
                self.version = version
                document = tree
                return true
            }
        }

        func pidf() throws -> PIDFDocument { try PIDFDocument(xml: try #require(document)) }
    }

    static func categories(_ availability: UInt32) -> CategoriesDocument {
        T.categories(availability: availability, uri: bob)
    }

    /// Flow 2: Alice accepts partial PIDF. Her first NOTIFY is `pidf-full` version 0, each later
    /// one a diff or full state of the next version; held as she holds them, each is the state a
    /// PIDF watcher gets (RFC 3856 mapping unchanged). A refresh sends full state again.
    @Test func anOMAWatcherOfPartialNotificationsIsSentFullStateThenDiffs() throws {
        var h = try T.Harness()
        let accept = "application/pidf+xml, application/pidf-diff+xml"
        let (id, actions) = h.receive(try T.omaSubscribe(accept: accept), from: .oma)
        let (subscribe, context) = try #require(T.sent(actions, to: .enterprise).first)
        let answered = h.core.receive(T.enterpriseOK(subscribe, Self.categories(3500)), to: subscribe, context: context, now: h.now)
        let ok = try #require(T.responses(answered, id).first)
        var alice = Watcher()
        let (first, _) = try #require(T.sent(answered, to: .oma).first)
        #expect(try alice.take(first) == false)
        #expect(alice.version == 0)
        #expect(try alice.pidf().tuples.first?.status.basic == .open)

        // [MS-PRES] §3.7.5.4: 15500 → away, 6500 → busy, 3500 → available (no activity).
        var diffs = 0
        for (cseq, (availability, activity)) in [(15500, "away"), (6500, "busy"), (3500, nil)].enumerated() {
            let (_, changed) = h.receive(
                try T.enterpriseBENOTIFY(subscribe, cseq: cseq + 2, Self.categories(UInt32(availability))),
                from: .enterprise)
            let (notify, _) = try #require(T.sent(changed, to: .oma).first)
            if try alice.take(notify) { diffs += 1 }
            let held = XMLWriter(indent: nil).string(try #require(alice.document))
            for other in ["away", "busy"] {
                #expect(held.contains("<rpid:\(other)/>") == (other == activity), "after \(availability): \(held)")
            }
            #expect(try alice.pidf().tuples.first?.status.basic == .open)
        }
        #expect(alice.version == 3)
        #expect(diffs >= 1, "no change was sent as a diff")

        // A refresh: full state, next version.
        let tag = try #require(try ok.headers.to?.tag)
        let (_, refreshed) = h.receive(try T.omaSubscribe(accept: accept, cseq: 2, toTag: tag), from: .oma)
        let (notify, _) = try #require(T.sent(refreshed, to: .oma).first)
        #expect(try alice.take(notify) == false)
        #expect(alice.version == 4)
        // A refresh that no longer accepts partial PIDF gets PIDF from then on.
        let (_, plain) = h.receive(try T.omaSubscribe(cseq: 3, toTag: tag), from: .oma)
        #expect(try T.sent(plain, to: .oma).first?.0.headers.contentType?.mediaType == "application/pidf+xml")
    }

    /// After a restart the watcher goes on with full state, its version above every one sent
    /// (two blocks above the stored one, as CSeqs are).
    @Test func aRestoredWatcherGoesOnWithFullStateAndAHigherVersion() throws {
        typealias R = StateRestoreTests
        var h = try R.journaled()
        var records = R.Records()
        let (_, actions) = h.receive(try T.omaSubscribe(accept: "application/pidf+xml, application/pidf-diff+xml"), from: .oma)
        let (subscribe, context) = try #require(T.sent(actions, to: .enterprise).first)
        _ = h.core.receive(T.enterpriseOK(subscribe, Self.categories(3500)), to: subscribe, context: context, now: h.now)
        R.take(&h, into: &records)

        var after = try R.journaled(prefix: "r")
        _ = try after.core.restore(records.all, clock: R.clock, now: after.now)
        let (_, changed) = after.receive(try T.enterpriseBENOTIFY(subscribe, cseq: 2, Self.categories(15500)), from: .enterprise)
        let (notify, _) = try #require(T.sent(changed, to: .oma).first)
        guard case .full(let version, _) = try PIDFDiff(bytes: notify.body) else {
            Issue.record("not full state after a restart")
            return
        }
        #expect((version ?? 0) > 2 * GatewayCore.sequenceBlock - 1)
    }

    /// A watcher without `application/pidf-diff+xml` in Accept gets PIDF, as before.
    @Test func aWatcherWithoutPartialPIDFGetsPIDF() throws {
        var h = try T.Harness()
        let (_, actions) = h.receive(try T.omaSubscribe(), from: .oma)
        let (subscribe, context) = try #require(T.sent(actions, to: .enterprise).first)
        let answered = h.core.receive(T.enterpriseOK(subscribe, Self.categories(3500)), to: subscribe, context: context, now: h.now)
        #expect(try T.sent(answered, to: .oma).first?.0.headers.contentType?.mediaType == "application/pidf+xml")
    }

    // MARK: - As subscriber

    static let partialYAML = GatewayConfiguration.defaultYAML.replacingOccurrences(
        of: "next-hop: \"sip:127.0.0.1:5070;transport=udp\"",
        with: "next-hop: \"sip:127.0.0.1:5070;transport=udp\"\n  partial-notifications: true")

    static func notify(_ subscribe: SIPRequest, cseq: Int, _ body: String) throws -> SIPRequest {
        var request = try T.omaNotify(subscribe, cseq: cseq, body: Array(body.utf8))
        request.headers.set(.contentType, "application/pidf-diff+xml")
        return request
    }

    static let full = """
        <p:pidf-full xmlns="urn:ietf:params:xml:ns:pidf" xmlns:p="urn:ietf:params:xml:ns:pidf-diff" \
        xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" \
        entity="sip:john@oma.example" version="7"><tuple id="t1"><status><basic>open</basic></status></tuple>\
        <dm:person id="p1"><rpid:activities><rpid:away/></rpid:activities></dm:person></p:pidf-full>
        """

    static func diff(_ version: Int, activity: String) -> String {
        """
        <p:pidf-diff xmlns="urn:ietf:params:xml:ns:pidf" xmlns:p="urn:ietf:params:xml:ns:pidf-diff" \
        xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" \
        entity="sip:john@oma.example" version="\(version)"><p:replace sel="*/dm:person[@id='p1']/rpid:activities">\
        <rpid:activities><rpid:\(activity)/></rpid:activities></p:replace></p:pidf-diff>
        """
    }

    /// Flow 1 with `oma.partial-notifications`: the gateway's SUBSCRIBE accepts partial PIDF; the
    /// OMA side's `pidf-full` and each diff of the next version reach the enterprise watcher as
    /// categories; a diff out of sequence makes the gateway refresh for full state and is not
    /// applied, nor are diffs until the full state comes; a diff that does not parse is 400.
    @Test func partialNotificationsFromTheOMASideAreAppliedAndAGapAsksForFullState() throws {
        var h = try T.Harness(yaml: Self.partialYAML)
        let (id, actions) = h.receive(try T.enterpriseSubscribe(resources: ["sip:john@oma.example"]), from: .enterprise, network: .sameEnterprise)
        let (subscribe, context) = try #require(T.sent(actions, to: .oma).first)
        #expect(subscribe.headers[.accept] == "application/pidf+xml, application/pidf-diff+xml")
        PendingResourceTests.answer(&h, subscribe, context)
        let (_, first) = h.receive(try Self.notify(subscribe, cseq: 2, Self.full), from: .oma)
        let ok = try #require(T.responses(first, id).first)
        #expect(T.availability(try T.firstCategories(ok).categories.first).0 == 15500)  // away

        // Version 8 applies: busy (§3.7.5.4: 6500).
        let (busyID, busy) = h.receive(try Self.notify(subscribe, cseq: 3, Self.diff(8, activity: "busy")), from: .oma)
        #expect(T.responses(busy, busyID).first?.statusCode == 200)
        let (benotify, _) = try #require(T.sent(busy, to: .enterprise).first)
        #expect(T.availability(try CategoriesDocument(bytes: benotify.body)).0 == 6500)

        // Version 10 after 8: a gap. Answered 200, not applied, and the leg refreshes.
        let (gapID, gap) = h.receive(try Self.notify(subscribe, cseq: 4, Self.diff(10, activity: "away")), from: .oma)
        #expect(T.responses(gap, gapID).first?.statusCode == 200)
        #expect(T.sent(gap, to: .enterprise).isEmpty)
        let (refresh, _) = try #require(T.sent(gap, to: .oma).first)
        #expect(refresh.method == .subscribe && refresh.headers.callID == subscribe.headers.callID)
        // Another diff before the full state: ignored, no second refresh.
        let (_, waiting) = h.receive(try Self.notify(subscribe, cseq: 5, Self.diff(11, activity: "away")), from: .oma)
        #expect(T.sent(waiting, to: .oma).isEmpty && T.sent(waiting, to: .enterprise).isEmpty)
        // The full state after the refresh: applied (away again), and diffs go on from it.
        let (_, restored) = h.receive(try Self.notify(subscribe, cseq: 6, Self.full.replacingOccurrences(of: "version=\"7\"", with: "version=\"20\"")), from: .oma)
        #expect(T.availability(try CategoriesDocument(bytes: try #require(T.sent(restored, to: .enterprise).first).0.body)).0 == 15500)
        let (_, again) = h.receive(try Self.notify(subscribe, cseq: 7, Self.diff(21, activity: "busy")), from: .oma)
        #expect(T.availability(try CategoriesDocument(bytes: try #require(T.sent(again, to: .enterprise).first).0.body)).0 == 6500)

        // A body that does not parse: 400, nothing relayed.
        let (badID, bad) = h.receive(try Self.notify(subscribe, cseq: 8, "<p:pidf-diff"), from: .oma)
        #expect(T.responses(bad, badID).first?.statusCode == 400)
        #expect(T.sent(bad, to: .enterprise).isEmpty)
    }
}
