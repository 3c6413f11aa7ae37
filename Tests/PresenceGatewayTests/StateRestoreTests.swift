import Foundation
import GatewayState
import MSPresenceEvents
import NIOCore
import PresenceDocuments
import PresenceGateway
import PresenceMapping
import SIPMessages
import SIPStack
import Testing

/// The core's state written as records and taken back by a new core (docs/state.md): every pair
/// continues in its original dialogs, CSeqs go on above those used, timers that ran out fire, and
/// the hot path writes nothing.
@Suite struct StateRestoreTests {
    typealias H = GatewayCoreTests

    /// What a store would hold: the records, by kind and key, after the changes handed to it.
    struct Records {
        var byID: [String: StateRecord] = [:]

        mutating func apply(_ changes: [StateChange]) {
            for change in changes {
                switch change {
                case .put(let record): byID[change.kind + " " + change.key] = record
                case .delete: byID[change.kind + " " + change.key] = nil
                }
            }
        }

        var all: [StateRecord] { byID.values.sorted { ($0.kind, $0.key) < ($1.kind, $1.key) } }
        func kinds() -> [String: Int] { Dictionary(byID.values.map { ($0.kind, 1) }, uniquingKeysWith: +) }
    }

    static let clock = WallClock(offset: 1_764_000_000_000_000_000)

    /// A harness whose core remembers changes, and one like it after a restart: another process,
    /// so another identifier source (its tags must not repeat the first one's).
    static func journaled(yaml: String = GatewayConfiguration.defaultYAML, prefix: String = "t") throws -> H.Harness {
        var h = try H.Harness(yaml: yaml)
        h.core = GatewayCore(configuration: h.core.configuration, mapper: h.core.mapper, contacts: h.core.contacts,
                             ids: IdentifierSource(token: { "\(prefix)\($0)" }, jitter: { 0 }))
        h.core.journaling = true
        return h
    }

    static func take(_ h: inout H.Harness, into records: inout Records) {
        records.apply(h.core.takeStateChanges(clock: clock))
    }

    /// Flow 1 set up: an enterprise watcher of john@oma.example, answered after the OMA side's
    /// first NOTIFY. Returns the watcher's 200 OK, the OMA SUBSCRIBE and its context.
    static func enterpriseWatcherPair(_ h: inout H.Harness) throws -> (ok: SIPResponse, subscribe: SIPRequest, context: GatewayCore.Context) {
        let (id, actions) = h.receive(try H.enterpriseSubscribe(resources: ["sip:john@oma.example"]), from: .enterprise, network: .sameEnterprise)
        let (subscribe, context) = try #require(H.sent(actions, to: .oma).first)
        _ = h.core.receive(SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "kam1",
                                       headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                           to: subscribe, context: context, now: h.now)
        let (_, answered) = h.receive(try H.omaNotify(subscribe, cseq: 2, body: H.pidf("sip:john@oma.example", activity: "away")), from: .oma)
        let ok = try #require(H.responses(answered, id).first)
        try #require(ok.statusCode == 200)
        return (ok, subscribe, context)
    }

    /// An in-dialog request of the enterprise watcher (its Call-ID and tags, the gateway's tag in To).
    static func watcherRefresh(_ ok: SIPResponse, cseq: Int, expires: Int = 3600) throws -> SIPRequest {
        var request = try H.enterpriseSubscribe(resources: ["sip:john@oma.example"], expires: expires)
        request.headers.set(.to, "<sip:carol@contoso.com>;tag=\(try #require(try ok.headers.to?.tag))")
        request.headers.set(.cseq, "\(cseq) SUBSCRIBE")
        return request
    }

    @Test func enterpriseWatcherPairContinuesInItsOriginalDialogsAfterARestart() throws {
        var h = try Self.journaled()
        var records = Records()
        let (ok, subscribe, context) = try Self.enterpriseWatcherPair(&h)
        // A few relayed notifications: the watcher's dialog has used CSeqs 1 (piggyback) to 4.
        var lastCSeq: UInt32 = 1
        for cseq in 3...5 {
            let (_, relayed) = h.receive(try H.omaNotify(subscribe, cseq: cseq, body: H.pidf("sip:john@oma.example", activity: cseq % 2 == 0 ? "away" : "busy")), from: .oma)
            lastCSeq = try #require(try H.sent(relayed, to: .enterprise).first?.0.headers.cseq?.sequence)
        }
        Self.take(&h, into: &records)
        #expect(records.kinds() == ["enterprise-watch": 1, "oma-leg": 1])

        // The restart: a new core, the records back.
        var after = try Self.journaled(prefix: "r")
        after.now = h.now + .seconds(5)
        let restored = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        #expect(after.core.counts.enterpriseWatches == 1 && after.core.counts.omaLegs == 1)

        // An OMA NOTIFY in the leg's original dialog is relayed into the watcher's original dialog,
        // as a BENOTIFY with a CSeq above every one used before the restart.
        let (notifyID, relayed) = after.receive(try H.omaNotify(subscribe, cseq: 6, body: H.pidf("sip:john@oma.example", activity: "on-the-phone")), from: .oma)
        #expect(H.responses(relayed, notifyID).first?.statusCode == 200)
        let benotify = try #require(H.sent(relayed, to: .enterprise).first?.0)
        #expect(benotify.method == .benotify)
        #expect(benotify.headers.callID == ok.headers.callID)
        #expect(try benotify.headers.from?.tag == ok.headers.to?.tag)
        #expect(try #require(try benotify.headers.cseq?.sequence) > lastCSeq)
        #expect(H.availability(try CategoriesDocument(bytes: benotify.body)).1 == "on-the-phone")

        // The watcher's refresh is answered in its dialog (no 481).
        let (refreshID, refreshed) = after.receive(try Self.watcherRefresh(ok, cseq: 2), from: .enterprise, network: .sameEnterprise)
        #expect(H.responses(refreshed, refreshID).first?.statusCode == 200)

        // The leg is refreshed in its original dialog (paced, due at once for the first), which
        // brings the current state back.
        let refresh = try #require(restored.compactMap { if case .schedule(.refresh(let c), let at) = $0 { (c, at) } else { nil } }.first)
        #expect(refresh.0 == context && refresh.1 == after.now)
        let resubscribe = try #require(H.sent(after.core.fire(.refresh(context), now: after.now), to: .oma).first?.0)
        #expect(resubscribe.headers.callID == subscribe.headers.callID)
        #expect(try resubscribe.headers.to?.tag == "kam1")
        #expect(try #require(try resubscribe.headers.cseq?.sequence) == 2)
        // Nothing was made twice: the same one leg and watch.
        #expect(after.core.counts.enterpriseWatches == 1 && after.core.counts.omaLegs == 1)
    }

    /// RFC 6446 as the gateway asks it survives a restart: a leg still asks the OMA server for the
    /// rate control it asked before, even when the restarted process's configuration asks for none.
    @Test func rateControlIsKeptAcrossARestart() throws {
        let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(
            of: "next-hop: \"sip:127.0.0.1:5070;transport=udp\"",
            with: "next-hop: \"sip:127.0.0.1:5070;transport=udp\"\n  rate-control: { min-interval: 5 }")
        var h = try Self.journaled(yaml: yaml)
        var records = Records()
        let (_, _, context) = try Self.enterpriseWatcherPair(&h)
        Self.take(&h, into: &records)
        var after = try Self.journaled(prefix: "r")
        after.now = h.now + .seconds(5)
        _ = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        let resubscribe = try #require(H.sent(after.core.fire(.refresh(context), now: after.now), to: .oma).first?.0)
        #expect(try resubscribe.headers.event?.parameters.value("max-rate") == "0.2")
    }

    @Test func omaWatcherPairContinuesInItsOriginalDialogsAfterARestart() throws {
        var h = try Self.journaled()
        var records = Records()
        let (id, actions) = h.receive(try H.omaSubscribe(), from: .oma)
        let (subscribe, _) = try #require(H.sent(actions, to: .enterprise).first)
        let answered = h.core.receive(H.enterpriseOK(subscribe, H.categories(availability: 3500, uri: "sip:bob@contoso.com")),
                                      to: subscribe, context: H.sent(actions, to: .enterprise)[0].1, now: h.now)
        let ok = try #require(H.responses(answered, id).first)
        let first = try #require(H.sent(answered, to: .oma).first?.0)
        Self.take(&h, into: &records)
        #expect(records.kinds() == ["oma-watch": 1, "enterprise-leg": 1])

        var after = try Self.journaled(prefix: "r")
        after.now = h.now + .seconds(5)
        _ = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        // A BENOTIFY from the enterprise in the leg's original dialog reaches the OMA watcher in its
        // original dialog, CSeq above the one used.
        let (_, relayed) = after.receive(try H.enterpriseBENOTIFY(subscribe, cseq: 2, H.categories(availability: 6500, uri: "sip:bob@contoso.com")),
                                         from: .enterprise)
        let notify = try #require(H.sent(relayed, to: .oma).first?.0)
        #expect(notify.headers.callID == "oma-call-1")
        #expect(try notify.headers.from?.tag == ok.headers.to?.tag)
        #expect(try #require(try notify.headers.cseq?.sequence) > #require(try first.headers.cseq?.sequence))
        #expect(String(decoding: notify.body, as: UTF8.self).contains("busy"))
        // The watcher's unsubscribe crosses as before the restart.
        let tag = try #require(try ok.headers.to?.tag)
        let (unsubID, unsub) = after.receive(try H.omaSubscribe(expires: 0, cseq: 2, toTag: tag), from: .oma)
        #expect(H.responses(unsub, unsubID).first?.statusCode == 200)
        #expect(try H.sent(unsub, to: .enterprise).first?.0.headers.expires == 0)
    }

    /// A node whose enterprise watcher pair another node took over lets the watch and its OMA leg
    /// go without a message (docs/state.md, "Several nodes"): their dialogs are unknown here
    /// afterwards (481), and what the leg held is given back — one of the watcher's
    /// subscriptions (`subscriptions-per-watcher`) and one of the presentity's legs
    /// (`subscriptions-per-presentity`), so the watcher's next SUBSCRIBE makes a leg again.
    @Test func aTakenOverEnterpriseWatcherPairIsLetGoWithWhatItHeld() throws {
        let yaml = GatewayConfiguration.defaultYAML
            + "\nlimits: { subscriptions-per-watcher: 1, subscriptions-per-presentity: 1 }\n"
        var h = try Self.journaled(yaml: yaml)
        var records = Records()
        let (ok, subscribe, _) = try Self.enterpriseWatcherPair(&h)
        Self.take(&h, into: &records)

        var after = try Self.journaled(yaml: yaml, prefix: "r")
        after.now = h.now + .seconds(5)
        _ = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        let held = after.core.dialogRecordIDs()
        #expect(Set(held.map(\.kind)) == ["enterprise-watch", "oma-leg"] && held.count == 2)
        func again(_ callID: String) throws -> [GatewayCore.Action] {
            var request = try H.enterpriseSubscribe(resources: ["sip:john@oma.example"])
            request.headers.set(.callID, callID)
            return after.receive(request, from: .enterprise, network: .sameEnterprise).1
        }
        func legMade(_ actions: [GatewayCore.Action]) -> Bool {
            H.sent(actions, to: .oma).contains { $0.0.method == .subscribe }
        }
        // Restored, the leg holds the watcher's one subscription and john's one leg.
        #expect(!legMade(try again("ent-call-2")))

        let disowned = after.core.disown(held)
        #expect(H.sent(disowned, to: .oma).isEmpty && H.sent(disowned, to: .enterprise).isEmpty)
        #expect(after.core.counts.omaLegs == 0)
        let (refreshID, refresh) = after.receive(try Self.watcherRefresh(ok, cseq: 2), from: .enterprise)
        #expect(H.responses(refresh, refreshID).first?.statusCode == 481)
        let (notifyID, notify) = after.receive(
            try H.omaNotify(subscribe, cseq: 3, body: H.pidf("sip:john@oma.example", activity: "busy")), from: .oma)
        #expect(H.responses(notify, notifyID).first?.statusCode == 481)

        #expect(legMade(try again("ent-call-3")))
    }

    /// A restored OMA leg is charged again to the sender of its watcher's SUBSCRIBE, as when it
    /// was made (docs/security.md, "A fan-out is charged to its sender"): the fan-out pacing
    /// finds that sender for its next SUBSCRIBE, and the sender holds the watcher's dialog and
    /// the leg again: under `subscriptions-per-peer: 2` its next SUBSCRIBE is refused (503), as
    /// it was before the restart.
    @Test func aRestoredLegIsChargedToItsWatchersSenderAgain() throws {
        let yaml = GatewayConfiguration.defaultYAML + "\nlimits: { subscriptions-per-peer: 2 }\n"
        var h = try Self.journaled(yaml: yaml)
        var records = Records()
        let peer = DialogPeer(side: .enterprise, transport: .tcp, host: "10.0.0.7", port: 5061)
        func subscribe(_ core: inout GatewayCore, callID: String, id: GatewayCore.ServerRequestID, now: NIODeadline)
            throws -> [GatewayCore.Action]
        {
            var request = try H.enterpriseSubscribe(resources: ["sip:john@oma.example"])
            request.headers.set(.callID, callID)
            let watcher = WatcherIdentity(uri: "sip:carol@contoso.com", network: .sameEnterprise)
            return core.receive(request, id: id, from: .enterprise, watcher: watcher, peer: peer, now: now)
        }
        let actions = try subscribe(&h.core, callID: "ent-call-1", id: 1, now: h.now)
        let (legSubscribe, context) = try #require(H.sent(actions, to: .oma).first)
        #expect(h.core.fanOutSender(of: context) == "10.0.0.7")
        _ = h.core.receive(
            SIPResponse(replyingTo: legSubscribe, statusCode: 200, toTag: "kam1",
                        headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
            to: legSubscribe, context: context, now: h.now)
        let (_, answered) = h.receive(
            try H.omaNotify(legSubscribe, cseq: 2, body: H.pidf("sip:john@oma.example", activity: "away")), from: .oma)
        #expect(H.responses(answered, 1).first?.statusCode == 200)
        Self.take(&h, into: &records)
        let before = try subscribe(&h.core, callID: "ent-call-2", id: 2, now: h.now)
        #expect(H.responses(before, 2).first?.statusCode == 503)

        var after = try Self.journaled(yaml: yaml, prefix: "r")
        _ = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        #expect(after.core.fanOutSender(of: context) == "10.0.0.7")
        let second = try subscribe(&after.core, callID: "ent-call-2", id: 2, now: after.now)
        #expect(H.responses(second, 2).first?.statusCode == 503)
    }

    /// A presentity's watcher information subscription (RFC 3857) continues in its dialog after a
    /// restart: the list last sent is not kept, so the full list goes out at once with the next
    /// version (RFC 3858 §4.4); a refresh is answered in the dialog; a node whose record another
    /// node took over lets it go without a NOTIFY, and its dialog is then unknown (481).
    @Test func aWatcherInformationSubscriptionContinuesInItsDialog() throws {
        typealias W = WatcherInfoServiceTests
        let yaml = PendingResourceTests.marysYAML("allow")
        var h = try Self.journaled(yaml: yaml)
        var records = Records()
        let (ok, first) = try W.marySubscribes(&h)
        #expect(first.version == 0 && first.state == .full)
        Self.take(&h, into: &records)
        #expect(records.kinds() == ["winfo-watch": 1])

        var after = try Self.journaled(yaml: yaml, prefix: "r")
        after.now = h.now + .seconds(5)
        let restored = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        let notify = try #require(H.sent(restored, to: .oma).first { W.isWinfo($0.1) }?.0)
        #expect(notify.headers.callID == "winfo-call-1")
        #expect(try notify.headers.from?.tag == ok.headers.to?.tag)
        let full = try #require(try W.documents(restored).first)
        #expect(full.version == 1 && full.state == .full)

        let tag = try #require(try ok.headers.to?.tag)
        let (refreshID, refreshed) = after.receive(try W.winfoSubscribe(cseq: 2, toTag: tag), from: .oma)
        #expect(H.responses(refreshed, refreshID).first?.statusCode == 200)
        #expect(try W.documents(refreshed).map(\.version) == [2])

        let held = after.core.dialogRecordIDs().filter { $0.kind == "winfo-watch" }
        #expect(held.count == 1)
        #expect(H.sent(after.core.disown(held), to: .oma).isEmpty)
        #expect(after.core.winfoWatchCount == 0)
        let (goneID, gone) = after.receive(try W.winfoSubscribe(cseq: 3, toTag: tag), from: .oma)
        #expect(H.responses(gone, goneID).first?.statusCode == 481)
    }

    /// A large store is read in slices on every core; what is restored, and the first record
    /// reported as unreadable, are those of reading the records one by one.
    @Test func readingInSlicesRestoresWhatReadingOneByOneDoes() throws {
        var h = try Self.journaled()
        var records = Records()
        _ = try Self.enterpriseWatcherPair(&h)
        Self.take(&h, into: &records)
        let all = records.all
        try #require(all.count == 2)
        var serial = try Self.journaled(prefix: "r"), sliced = try Self.journaled(prefix: "r")
        let one = try serial.core.restore(all, clock: Self.clock, now: h.now)
        let many = try sliced.core.restore(all, clock: Self.clock, now: h.now, sliceSize: 1)
        #expect(sliced.core.counts == serial.core.counts && serial.core.counts.enterpriseWatches == 1)
        #expect(many.map { String(describing: $0) } == one.map { String(describing: $0) })
        // Unreadable records in different slices: the first in the records' order is named. Eleven
        // records in slices of two: five slices of two or three.
        let broken = [StateRecord(kind: "oma-leg", key: "7", body: Array("{".utf8))] + all
            + (8..<16).map { StateRecord(kind: "oma-watch", key: String($0), body: Array("[]".utf8)) }
        for size in [1, 2, 10_000] {
            var core = try Self.journaled(prefix: "x").core
            #expect(throws: GatewayCore.RestoreError.self) { try core.restore(broken, clock: Self.clock, now: h.now, sliceSize: size) }
            do { _ = try core.restore(broken, clock: Self.clock, now: h.now, sliceSize: size) } catch {
                #expect(error.kind == "oma-leg" && error.key == "7", "slice size \(size): \(error)")
            }
        }
    }

    @Test func relayingANotifyWritesNothingButEveryBlockOfCSeqs() throws {
        var h = try Self.journaled()
        var records = Records()
        let (_, subscribe, _) = try Self.enterpriseWatcherPair(&h)
        Self.take(&h, into: &records)
        // A relayed NOTIFY: the leg's remote CSeq, its state and the watcher's CSeq move; nothing to write.
        let (_, relayed) = h.receive(try H.omaNotify(subscribe, cseq: 3, body: H.pidf("sip:john@oma.example", activity: "busy")), from: .oma)
        #expect(!H.sent(relayed, to: .enterprise).isEmpty)
        #expect(h.core.takeStateChanges(clock: Self.clock).isEmpty)
        // Until the watcher's dialog enters the next block of CSeqs: its record is written once.
        var written: [StateChange] = []
        for cseq in 4..<(4 + Int(GatewayCore.sequenceBlock)) {
            _ = h.receive(try H.omaNotify(subscribe, cseq: cseq, body: H.pidf("sip:john@oma.example", activity: cseq % 2 == 0 ? "away" : "busy")), from: .oma)
            written += h.core.takeStateChanges(clock: Self.clock)
        }
        #expect(written.map(\.kind) == ["enterprise-watch"])
        // A terminated NOTIFY does change what is kept: the leg is gone.
        _ = h.receive(try H.omaNotify(subscribe, cseq: 2000, state: "terminated;reason=noresource", body: []), from: .oma)
        let ended = h.core.takeStateChanges(clock: Self.clock)
        #expect(ended.contains(.delete(kind: "oma-leg", key: "2")))
    }

    /// The other notifications relayed in existing pairs write nothing either (docs/state.md,
    /// "What is written when"): flow 2's BENOTIFY toward an OMA watcher, an OMA RLS's list
    /// NOTIFY toward an enterprise watcher (RFC 4662), and a member's BENOTIFY toward a watcher
    /// of a list the gateway serves (its RLMI version, like a CSeq, is written by blocks).
    @Test func everyKindOfRelayedNotificationWritesNothing() throws {
        typealias L = OMAResourceListTests
        typealias S = ResourceListTests
        // Flow 2.
        var h = try Self.journaled()
        let (id, actions) = h.receive(try H.omaSubscribe(), from: .oma)
        let (subscribe, context) = try #require(H.sent(actions, to: .enterprise).first)
        let answered = h.core.receive(
            H.enterpriseOK(subscribe, H.categories(availability: 3500, uri: "sip:bob@contoso.com")), to: subscribe,
            context: context, now: h.now)
        #expect(H.responses(answered, id).first?.statusCode == 200)
        _ = h.core.takeStateChanges(clock: Self.clock)
        for cseq in 2...6 {
            let benotify = try H.enterpriseBENOTIFY(
                subscribe, cseq: cseq, H.categories(availability: cseq % 2 == 0 ? 6500 : 3500, uri: "sip:bob@contoso.com"))
            #expect(!H.sent(h.receive(benotify, from: .enterprise).1, to: .oma).isEmpty)
            #expect(h.core.takeStateChanges(clock: Self.clock).isEmpty)
        }

        // An OMA RLS's list.
        var (list, listSubscribe, _) = try L.answeredList(try Self.journaled(yaml: L.yaml))
        _ = list.core.takeStateChanges(clock: Self.clock)
        for version in 1...5 {
            let notify = try L.listNotify(listSubscribe, cseq: version + 1, version: version, full: false, members: [
                L.Member(uri: L.john, pidf: H.pidf(L.john, activity: version % 2 == 0 ? "away" : "busy"))
            ])
            #expect(!H.sent(list.receive(notify, from: .oma).1, to: .enterprise).isEmpty)
            #expect(list.core.takeStateChanges(clock: Self.clock).isEmpty)
        }

        // A list the gateway serves.
        var served = try Self.journaled(yaml: S.yaml)
        let (_, _, legs) = try S.answeredList(&served)
        _ = served.core.takeStateChanges(clock: Self.clock)
        let (bob, _) = try #require(legs[S.bob])
        for cseq in 2...6 {
            let benotify = try H.enterpriseBENOTIFY(
                bob, cseq: cseq, H.categories(availability: cseq % 2 == 0 ? 6500 : 3500, uri: S.bob))
            #expect(!H.sent(served.receive(benotify, from: .enterprise).1, to: .oma).isEmpty)
            #expect(served.core.takeStateChanges(clock: Self.clock).isEmpty)
        }
    }

    /// Watchers whose notifications carry more than the last state also write nothing when one is
    /// relayed: a PIDF watcher from the enterprise (its dialog held apart from the category ones),
    /// an OMA watcher of partial notifications (RFC 5263: its version, like a CSeq, is written by
    /// blocks) and one with an event filter (RFC 4660: the document its triggers compare with is
    /// not kept).
    @Test func relayingToDocumentPartialAndFilteredWatchersWritesNothing() throws {
        var document = try Self.journaled()
        let answered = try DocumentWatcherTests.answered(
            &document, accept: "application/pidf+xml", body: H.pidf("sip:john@oma.example", activity: "away"))
        _ = document.core.takeStateChanges(clock: Self.clock)
        for cseq in 3...7 {
            let notify = try H.omaNotify(
                answered.leg, cseq: cseq, body: H.pidf("sip:john@oma.example", activity: cseq % 2 == 0 ? "away" : "busy"))
            #expect(!H.sent(document.receive(notify, from: .oma).1, to: .enterprise).isEmpty)
            #expect(document.core.takeStateChanges(clock: Self.clock).isEmpty)
        }

        for subscribe in [
            try H.omaSubscribe(accept: "application/pidf+xml, application/pidf-diff+xml"),
            try FilterTests.subscribe(FilterTests.noteAndBasic),
        ] {
            var h = try Self.journaled()
            let (_, actions) = h.receive(subscribe, from: .oma)
            let (leg, context) = try #require(H.sent(actions, to: .enterprise).first)
            _ = h.core.receive(H.enterpriseOK(leg, try FilterTests.categories(3500, note: "lunch")), to: leg, context: context, now: h.now)
            _ = h.core.takeStateChanges(clock: Self.clock)
            for cseq in 2...6 {
                var benotify = try H.enterpriseBENOTIFY(
                    leg, cseq: cseq, try FilterTests.categories(cseq % 2 == 0 ? 6500 : 3500, note: "note \(cseq)"))
                benotify.headers.remove(.require)
                #expect(!H.sent(h.receive(benotify, from: .enterprise).1, to: .oma).isEmpty, "\(subscribe.headers[.accept] ?? "")")
                #expect(h.core.takeStateChanges(clock: Self.clock).isEmpty)
            }
        }
    }

    @Test func aWatcherWhoseSubscriptionRanOutWhileDownIsEndedAtOnce() throws {
        var h = try Self.journaled()
        var records = Records()
        let (id, actions) = h.receive(try H.enterpriseSubscribe(resources: ["sip:john@oma.example"], expires: 600), from: .enterprise,
                                      network: .sameEnterprise)
        let (subscribe, context) = try #require(H.sent(actions, to: .oma).first)
        _ = h.core.receive(SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "kam1", headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                           to: subscribe, context: context, now: h.now)
        _ = h.receive(try H.omaNotify(subscribe, cseq: 2, body: H.pidf("sip:john@oma.example", activity: "away")), from: .oma)
        _ = id
        Self.take(&h, into: &records)
        // Down for longer than the watcher's 600 s.
        var after = try Self.journaled(prefix: "r")
        after.now = h.now + .seconds(700)
        let restored = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        let expiry = try #require(restored.compactMap { if case .schedule(.expiry(let c), let at) = $0 { (c, at) } else { nil } }.first)
        #expect(expiry.1 <= after.now)
        let ended = after.core.fire(.expiry(expiry.0), now: after.now)
        let final = try #require(H.sent(ended, to: .enterprise).first?.0)
        #expect(try final.headers.subscriptionState?.state == .terminated)
        #expect(try final.headers.subscriptionState?.reason == "timeout")
        // Its OMA subscription is unsubscribed.
        #expect(try H.sent(ended, to: .oma).first?.0.headers.expires == 0)
    }

    @Test func aLegTheOMASideNoLongerKnowsIsMadeAgainWithoutTellingTheWatcher() throws {
        var h = try Self.journaled()
        var records = Records()
        let (_, subscribe, context) = try Self.enterpriseWatcherPair(&h)
        Self.take(&h, into: &records)
        var after = try Self.journaled(prefix: "r")
        _ = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        let refresh = try #require(H.sent(after.core.fire(.refresh(context), now: after.now), to: .oma).first?.0)
        // RFC 6665 §4.1.2.2: 481 to the refresh → a new initial SUBSCRIBE, new Call-ID and From tag.
        let renewed = after.core.receive(SIPResponse(replyingTo: refresh, statusCode: 481), to: refresh, context: context, now: after.now)
        let again = try #require(H.sent(renewed, to: .oma).first)
        #expect(again.0.headers.callID != subscribe.headers.callID)
        #expect(try again.0.headers.to?.tag == nil)
        #expect(try again.0.headers.from?.tag != subscribe.headers.from?.tag)
        #expect(again.1 == context)
        #expect(H.sent(renewed, to: .enterprise).isEmpty)
        #expect(after.core.counts.omaLegs == 1)
        // Its first NOTIFY in the new dialog reaches the watcher.
        _ = after.core.receive(SIPResponse(replyingTo: again.0, statusCode: 200, toTag: "kam2", headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                               to: again.0, context: context, now: after.now)
        let (_, relayed) = after.receive(try H.omaNotify(again.0, cseq: 2, body: H.pidf("sip:john@oma.example", activity: "busy")), from: .oma)
        #expect(H.sent(relayed, to: .enterprise).first?.0.method == .benotify)
    }

    @Test func aWatcherNeverAnsweredIsDroppedAndItsLegUnsubscribed() throws {
        var h = try Self.journaled()
        var records = Records()
        let (_, actions) = h.receive(try H.enterpriseSubscribe(resources: ["sip:john@oma.example"]), from: .enterprise, network: .sameEnterprise)
        let (subscribe, context) = try #require(H.sent(actions, to: .oma).first)
        _ = h.core.receive(SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "kam1", headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                           to: subscribe, context: context, now: h.now)
        // The watcher still waits for its first answer when the process dies.
        Self.take(&h, into: &records)
        var after = try Self.journaled(prefix: "r")
        let restored = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        let unsubscribe = try #require(H.sent(restored, to: .oma).first?.0)
        #expect(unsubscribe.headers.callID == subscribe.headers.callID)
        #expect(try unsubscribe.headers.expires == 0)
        #expect(after.core.counts.enterpriseWatches == 0)
        var left = records
        left.apply(after.core.takeStateChanges(clock: Self.clock))
        #expect(left.kinds() == ["oma-leg": 1])
    }

    @Test func aRecordThatDoesNotReadIsAnErrorNamingIt() throws {
        var h = try Self.journaled()
        var records = Records()
        _ = try Self.enterpriseWatcherPair(&h)
        Self.take(&h, into: &records)
        var broken = records.all
        broken[0].body = Array(#"{"watcher": 7}"#.utf8)
        var after = try Self.journaled(prefix: "r")
        #expect {
            _ = try after.core.restore(broken, clock: Self.clock, now: after.now)
        } throws: { error in
            let error = try #require(error as? GatewayCore.RestoreError)
            return error.kind == broken[0].kind && error.key == broken[0].key && error.description.contains("unreadable")
        }
        var unknown = records.all
        unknown.append(StateRecord(kind: "future-kind", key: "1", body: Array("{}".utf8)))
        #expect(throws: GatewayCore.RestoreError.self) { try after.core.restore(unknown, clock: Self.clock, now: after.now) }
    }

    /// A node taking over another's records continues every one it can read: a record that
    /// does not read is left out and reported, the others are restored (docs/state.md).
    @Test func aTakeOverLeavesOutARecordThatDoesNotReadAndContinuesTheRest() throws {
        var h = try Self.journaled()
        var records = Records()
        _ = try Self.enterpriseWatcherPair(&h)
        Self.take(&h, into: &records)
        var taken = records.all
        taken.append(StateRecord(kind: "enterprise-watch", key: "999", body: Array(#"{"watcher": 7}"#.utf8)))
        var after = try Self.journaled(prefix: "r")
        let (actions, unreadable) = after.core.restoreReadable(taken, clock: Self.clock, now: after.now)
        #expect(unreadable.map(\.key) == ["999"])
        #expect(after.core.counts.enterpriseWatches == 1 && after.core.counts.omaLegs == 1)
        #expect(!actions.isEmpty)
    }

    @Test func poolDialogsAndPoolHintsAreKept() throws {
        var h = try Self.journaled()
        var records = Records()
        // The enterprise answers with a pool for bob (flow 3); the pool dialog answers with his state.
        let pool = "sip:pool2.contoso.com@contoso.com;gruu;opaque=srvr:HomeServer:x"
        let (id, actions) = h.receive(try H.omaSubscribe(to: "sip:bob@contoso.com", callID: "c-b1"), from: .oma)
        let (subscribe, context) = try #require(H.sent(actions, to: .enterprise).first)
        let hint = RLMIList.Instance(state: .resubscribe, cid: "bob@contoso.com", poolFqdn: pool)
        let hinted = h.core.receive(H.batchOK(subscribe, rejected: [("sip:bob@contoso.com", hint)]), to: subscribe, context: context, now: h.now)
        let (toPool, poolContext) = try #require(H.sent(hinted, to: .enterprise).first { $0.0.uri.description == pool })
        let answered = h.core.receive(H.batchOK(toPool, accepted: [H.categories(availability: 3500, uri: "sip:bob@contoso.com")], tag: "pool1"),
                                      to: toPool, context: poolContext, now: h.now)
        #expect(H.responses(answered, id).first?.statusCode == 200)
        Self.take(&h, into: &records)
        #expect(records.kinds() == ["pool": 1, "oma-watch": 1, "enterprise-leg": 2])

        var after = try Self.journaled(prefix: "r")
        let restored = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        // The pool dialog is refreshed in its dialog (the home dialog was being ended: ended again).
        #expect(restored.contains { if case .schedule(.refresh(poolContext), _) = $0 { true } else { false } })
        let refresh = try #require(H.sent(after.core.fire(.refresh(poolContext), now: after.now), to: .enterprise).first?.0)
        #expect(refresh.headers.callID == toPool.headers.callID)
        #expect(try refresh.headers.to?.tag == "pool1")
        // Another watcher of bob goes straight to the pool.
        var other = try H.omaSubscribe(to: "sip:bob@contoso.com", callID: "c-b2")
        other.headers.set(.from, "<sip:dave@oma.example>;tag=dave1")
        let (_, later) = after.receive(other, from: .oma)
        #expect(H.sent(later, to: .enterprise).first?.0.uri.description == pool)
    }

    @Test func servedPublicationsAndServicePublishVersionsAreKept() throws {
        var h = try Self.journaled(yaml: LinkedIdentityPublicationTests.yaml)
        var records = Records()
        let (id, first) = h.receive(try LinkedIdentityPublicationTests.publish(H.pidf("sip:bob@oma.example", activity: "busy"), cseq: 1), from: .oma)
        let etag = try #require(H.responses(first, id).first?.headers[.sipETag])
        let (service, serviceContext) = try #require(H.sent(first, to: .enterprise).first)
        _ = h.core.receive(SIPResponse(replyingTo: service, statusCode: 200, toTag: "svc"), to: service, context: serviceContext, now: h.now)
        Self.take(&h, into: &records)
        #expect(records.kinds()["publication"] == 1 && records.kinds()["service-publisher"] == 1)

        var after = try Self.journaled(yaml: LinkedIdentityPublicationTests.yaml, prefix: "r")
        let restored = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        // The publication's expiry runs again.
        #expect(restored.contains { if case .schedule(.publicationExpiry(let tag), _) = $0 { tag == etag } else { false } })
        // The composed state is published into the enterprise again, with the versions the
        // enterprise gave before the restart (an update, not a create, [MS-PRES] §3.2.5.1.2).
        let (republish, republishContext) = try #require(H.sent(restored, to: .enterprise).first { $0.0.method == .service })
        #expect(try CategoryPublish(bytes: republish.body).publications.map(\.version).allSatisfy { $0 == 1 })
        _ = after.core.receive(SIPResponse(replyingTo: republish, statusCode: 200, toTag: "svc"), to: republish, context: republishContext,
                               now: after.now)
        // Its entity-tag still modifies it (RFC 3903 §6).
        let (refreshID, refreshed) = after.receive(try LinkedIdentityPublicationTests.publish(H.pidf("sip:bob@oma.example", activity: "away"),
                                                                                               cseq: 2, ifMatch: etag), from: .oma)
        #expect(H.responses(refreshed, refreshID).first?.statusCode == 200)
        #expect(H.sent(refreshed, to: .enterprise).contains { $0.0.method == .service })
        // An enterprise watcher of bob is served from the restored publication.
        let (watchID, watched) = after.receive(try H.enterpriseSubscribe(resources: ["sip:bob@oma.example"]), from: .enterprise, network: .sameEnterprise)
        #expect(H.availability(try H.firstCategories(try #require(H.responses(watched, watchID).first)).categories.first).0 == 15500)
    }

    @Test func aLinkedIdentitysPublicationContinuesWithItsEntityTag() throws {
        var h = try Self.journaled()
        var records = Records()
        // The default configuration links alice: her enterprise state is PUBLISHed to the OMA side.
        let started = h.core.start(now: h.now)
        let (subscribe, context) = try #require(H.sent(started, to: .enterprise).first)
        let answered = h.core.receive(H.enterpriseOK(subscribe, H.categories(availability: 3500, uri: "sip:alice@contoso.com")),
                                      to: subscribe, context: context, now: h.now)
        let (publish, publishContext) = try #require(H.sent(answered, to: .oma).first)
        _ = h.core.receive(SIPResponse(replyingTo: publish, statusCode: 200, toTag: "esc", headers: [(.sipETag, "etag-1"), (.expires, "3600")]),
                           to: publish, context: publishContext, now: h.now)
        Self.take(&h, into: &records)
        #expect(records.kinds()["linked-publication"] == 1)

        var after = try Self.journaled(prefix: "r")
        _ = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        // start() makes no second publication for the restored identity.
        #expect(H.sent(after.core.start(now: after.now), to: .enterprise).isEmpty)
        // A change of alice's enterprise state modifies the publication under its entity-tag.
        let (_, changed) = after.receive(try H.enterpriseBENOTIFY(subscribe, cseq: 2, H.categories(availability: 6500, uri: "sip:alice@contoso.com")),
                                         from: .enterprise)
        let modify = try #require(H.sent(changed, to: .oma).first?.0)
        #expect(modify.method == .publish)
        #expect(modify.headers[.sipIfMatch] == "etag-1")
    }

    /// A stand-in for an OMA watcher of a linked identity (`mirror-watchers`) is kept: after a
    /// restart the watcher information is asked for again, the watcher still listed keeps its
    /// enterprise dialog (no second SUBSCRIBE), and one no longer listed is unsubscribed in it;
    /// restarted without `mirror-watchers`, the stand-in is ended at start.
    @Test func aMirroredWatcherKeepsItsEnterpriseDialog() throws {
        typealias M = WatcherMirrorTests
        var h = try Self.journaled(yaml: M.yaml)
        var records = Records()
        let winfo = try M.watching(&h)
        let (_, listed) = h.receive(
            try M.notify(winfo, cseq: 1, body: M.winfo(version: 0, [("w1", "sip:dave@oma.example", "active")])), from: .oma)
        let dave = try #require(M.enterpriseSubscribes(listed)["sip:dave@oma.example"])
        M.answerEnterprise(listed, &h)
        Self.take(&h, into: &records)

        var after = try Self.journaled(yaml: M.yaml, prefix: "r")
        _ = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        let again = try M.watching(&after)
        #expect(again.headers.callID != winfo.headers.callID)
        let (_, still) = after.receive(
            try M.notify(again, cseq: 1, body: M.winfo(version: 0, [("w1", "sip:dave@oma.example", "active")])), from: .oma)
        #expect(M.enterpriseSubscribes(still).isEmpty)
        let (_, gone) = after.receive(try M.notify(again, cseq: 2, body: M.winfo(version: 1, [])), from: .oma)
        let unsubscribe = try #require(H.sent(gone, to: .enterprise).first?.0)
        #expect(unsubscribe.headers.callID == dave.headers.callID)
        #expect(unsubscribe.headers[SIPHeaderName.expires] == "0")

        // Restarted without `mirror-watchers`: the stand-in is ended at start.
        var plain = try Self.journaled(prefix: "p")
        _ = try plain.core.restore(records.all, clock: Self.clock, now: plain.now)
        let started = plain.core.start(now: plain.now)
        let ended = try #require(H.sent(started, to: .enterprise).first { $0.0.headers.callID == dave.headers.callID }?.0)
        #expect(ended.headers[SIPHeaderName.expires] == "0")
        #expect(!H.sent(started, to: .oma).contains { $0.0.headers[.event] == "presence.winfo" })
    }

    /// A resource waiting for its owner (`confirm`) is still waiting after a restart: a reload
    /// that allows it then starts its OMA leg.
    @Test func aResourceWaitingForItsOwnerStillWaitsAfterARestart() throws {
        let yaml = PendingResourceTests.marysYAML("confirm")
        var h = try Self.journaled(yaml: yaml)
        var records = Records()
        let (id, actions) = h.receive(
            try H.enterpriseSubscribe(resources: [PendingResourceTests.mary]), from: .enterprise, network: .sameEnterprise)
        #expect(H.sent(actions, to: .oma).isEmpty)
        #expect(H.responses(actions, id).first?.statusCode == 200)
        Self.take(&h, into: &records)

        var after = try Self.journaled(yaml: yaml, prefix: "r")
        _ = try after.core.restore(records.all, clock: Self.clock, now: after.now)
        let allowed = after.core.reconfigure(
            try PendingResourceTests.marysPolicy("allow"), mapper: PendingResourceTests.mapper, now: after.now)
        let (subscribe, _) = try #require(H.sent(allowed, to: .oma).first)
        #expect(subscribe.uri.description == PendingResourceTests.mary)
        // Decided once: another reload does not subscribe again.
        let again = after.core.reconfigure(
            try PendingResourceTests.marysPolicy("allow"), mapper: PendingResourceTests.mapper, now: after.now)
        #expect(H.sent(again, to: .oma).isEmpty)
    }
}
