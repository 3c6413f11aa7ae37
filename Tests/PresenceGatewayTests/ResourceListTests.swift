import Foundation
import Multipart
import Prometheus
import NIOCore
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing
import XMLBridge

/// Resource lists served to OMA watchers (RFC 4662; docs/flows.md, "Resource lists"): one
/// SUBSCRIBE to a list URI, the enterprise members watched in the watcher's category dialogs,
/// and `multipart/related` notifications whose RLMI part lists the members.
@Suite struct ResourceListTests {
    typealias T = GatewayCoreTests
    static let team = "sip:team@contoso.com"
    static let bob = "sip:bob@contoso.com"
    static let carol = "sip:carol@contoso.com"

    static let yaml =
        GatewayConfiguration.defaultYAML + """

        resource-lists:
          "sip:team@contoso.com": ["sip:bob@contoso.com", "sip:carol@contoso.com"]
        """

    static func subscribe(
        supported: String? = "eventlist", accept: String = "application/pidf+xml, application/rlmi+xml, multipart/related",
        expires: Int = 600, cseq: Int = 1, toTag: String? = nil
    ) throws -> SIPRequest {
        try T.request(
            [
                "SUBSCRIBE \(team) SIP/2.0",
                "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKl\(cseq)",
                "Max-Forwards: 69",
                "From: <sip:alice@oma.example>;tag=oma1",
                "To: <\(team)>" + (toTag.map { ";tag=\($0)" } ?? ""),
                "Call-ID: list-call-1",
                "CSeq: \(cseq) SUBSCRIBE",
                "Contact: <sip:alice@127.0.0.1:5070>",
                "Event: presence",
                "Accept: \(accept)",
                "Expires: \(expires)",
            ] + (supported.map { ["Supported: \($0)"] } ?? []))
    }

    /// A list notification taken apart: its RLMI and each part's PIDF by Content-ID.
    struct Notification {
        var list: RLMIList
        var parts: [String: PIDFDocument]

        init(_ request: SIPRequest) throws {
            let type = try #require(try request.headers.contentType)
            #expect(type.mediaType == "multipart/related")
            #expect(type.parameters.value("type") == "application/rlmi+xml")
            #expect(try request.headers.require.contains("eventlist"))
            let body = try #require(try SIPMessage.request(request).multipartBody())
            // RFC 4662 §5.1: the RLMI document is the root, and the first part.
            let root = try #require(body.parts.first)
            #expect(root.header("Content-Type") == "application/rlmi+xml")
            #expect(type.parameters.value("start") == root.header("Content-ID"))
            list = try RLMIList(bytes: root.body)
            parts = [:]
            for part in body.parts.dropFirst() {
                let id = try #require(part.header("Content-ID"))
                parts[String(id.dropFirst().dropLast())] = try PIDFDocument(bytes: part.body)
            }
        }

        func basic(_ uri: String) -> String? {
            guard let cid = list.resources.first(where: { $0.uri == uri })?.instances.first?.cid else { return nil }
            return parts[cid]?.tuples.first?.status.basic?.rawValue
        }

        func instance(_ uri: String) -> RLMIList.Instance? {
            list.resources.first { $0.uri == uri }?.instances.first
        }
    }

    /// The list subscribed and both members' dialogs answered: the watcher's 200 and first NOTIFY,
    /// and the SUBSCRIBE (with its context) of each member's dialog toward the enterprise.
    static func answeredList(_ h: inout T.Harness) throws -> (
        id: GatewayCore.ServerRequestID, actions: [GatewayCore.Action],
        legs: [String: (SIPRequest, GatewayCore.Context)]
    ) {
        let (id, actions) = h.receive(try subscribe(), from: .oma)
        #expect(T.responses(actions, id).isEmpty, "answered once the members reported")
        var legs: [String: (SIPRequest, GatewayCore.Context)] = [:]
        for (request, context) in T.sent(actions, to: .enterprise) { legs[request.uri.description] = (request, context) }
        #expect(Set(legs.keys) == [bob, carol])
        var answered: [GatewayCore.Action] = []
        for (uri, availability) in [(bob, UInt32(3500)), (carol, 18500)] {
            let (request, context) = try #require(legs[uri])
            answered += h.core.receive(
                T.enterpriseOK(request, T.categories(availability: availability, uri: uri)), to: request,
                context: context, now: h.now)
        }
        return (id, answered, legs)
    }

    /// Each member's dialog toward the enterprise (in `actions`) answered with the member
    /// available: what the core did.
    static func answerMembers(_ h: inout T.Harness, _ actions: [GatewayCore.Action]) -> [GatewayCore.Action] {
        var answered: [GatewayCore.Action] = []
        for (subscribe, context) in T.sent(actions, to: .enterprise) {
            answered += h.core.receive(
                T.enterpriseOK(subscribe, T.categories(availability: 3500, uri: subscribe.uri.description)),
                to: subscribe, context: context, now: h.now)
        }
        return answered
    }

    /// The enterprise's BENOTIFY of Bob busy (6500) in his dialog: what the core did.
    static func bobBusy(_ h: inout T.Harness, _ subscribe: SIPRequest, cseq: Int) throws -> [GatewayCore.Action] {
        h.receive(
            try T.enterpriseBENOTIFY(subscribe, cseq: cseq, T.categories(availability: 6500, uri: bob)),
            from: .enterprise
        ).1
    }

    @Test func aListIsAnsweredWithFullStateThenChangesAlone() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (id, answered, legs) = try Self.answeredList(&h)
        let ok = try #require(T.responses(answered, id).first)
        #expect(ok.statusCode == 200)
        #expect(try ok.headers.require.contains("eventlist"))
        let (first, _) = try #require(T.sent(answered, to: .oma).first)
        let full = try Notification(first)
        #expect(full.list.uri == Self.team && full.list.version == 0 && full.list.fullState)
        #expect(full.list.resources.map(\.uri) == [Self.bob, Self.carol])
        #expect(full.instance(Self.bob)?.state == .active && full.instance(Self.carol)?.state == .active)
        #expect(full.basic(Self.bob) == "open" && full.basic(Self.carol) == "closed")
        #expect(full.parts.count == 2)
        #expect(h.core.counts.omaWatches == 1, "one watcher's list; its members are not watchers")

        // Bob goes busy: a partial notification, one version higher, with bob alone.
        let (bobSubscribe, _) = try #require(legs[Self.bob])
        let busy = try Self.bobBusy(&h, bobSubscribe, cseq: 2)
        let (change, _) = try #require(T.sent(busy, to: .oma).first)
        let partial = try Notification(change)
        #expect(partial.list.version == 1 && !partial.list.fullState)
        #expect(partial.list.resources.map(\.uri) == [Self.bob])
        #expect(partial.instance(Self.bob)?.id == full.instance(Self.bob)?.id)
        #expect(partial.parts.values.first?.persons.first?.rpid.isEmpty == false, "busy is an RPID activity")
        // The same state again: nothing is sent.
        let again = try Self.bobBusy(&h, bobSubscribe, cseq: 3)
        #expect(T.sent(again, to: .oma).isEmpty)

        // A refresh is answered with full state (RFC 4662 §5.2), one version higher again.
        let toTag = try #require(try ok.headers.to?.tag)
        let (refreshID, refreshed) = h.receive(try Self.subscribe(cseq: 2, toTag: toTag), from: .oma)
        #expect(T.responses(refreshed, refreshID).first?.statusCode == 200)
        let refreshedState = try Notification(try #require(T.sent(refreshed, to: .oma).first).0)
        #expect(refreshedState.list.version == 2 && refreshedState.list.fullState)
        #expect(refreshedState.list.resources.count == 2)

        // The unsubscribe: its final NOTIFY still carries RLMI, and both members' dialogs end.
        let (endID, ended) = h.receive(try Self.subscribe(expires: 0, cseq: 3, toTag: toTag), from: .oma)
        #expect(T.responses(ended, endID).first?.statusCode == 200)
        let (final, _) = try #require(T.sent(ended, to: .oma).first)
        #expect(final.headers[.subscriptionState]?.hasPrefix("terminated") == true)
        #expect(try Notification(final).list.version == 3)
        let unsubscribes = T.sent(ended, to: .enterprise).filter { $0.0.headers[.expires] == "0" }
        #expect(Set(unsubscribes.map(\.0.headers.callID)) == Set(legs.values.map(\.0.headers.callID)))
        #expect(unsubscribes.count == 2)
        #expect(h.core.counts.omaWatches == 0)
    }

    /// Rate control (RFC 6446) is not applied to a list's notifications: its Subscription-State
    /// gives back no rate, which tells the watcher so (RFC 6446 §5.2).
    @Test func aListGivesBackNoRateControl() throws {
        var h = try T.Harness(yaml: Self.yaml)
        var request = try Self.subscribe()
        request.headers.set(.event, "presence;max-rate=0.1;min-rate=0.01")
        let (_, actions) = h.receive(request, from: .oma)
        let answered = Self.answerMembers(&h, actions)
        let (first, _) = try #require(T.sent(answered, to: .oma).first)
        #expect(first.headers[.subscriptionState] == "active;expires=600")
    }

    /// RFC 4662 §4.1, §4.3: a list needs `Supported: eventlist` and an Accept with
    /// `multipart/related` and `application/rlmi+xml`; a filter body is not taken for a list.
    @Test func subscriptionsAListCannotServeAreRefused() throws {
        var h = try T.Harness(yaml: Self.yaml)
        func answer(_ request: SIPRequest) -> SIPResponse? {
            let (id, actions) = h.receive(request, from: .oma)
            #expect(T.sent(actions, to: .enterprise).isEmpty)
            return T.responses(actions, id).first
        }
        let without = try #require(answer(try Self.subscribe(supported: nil)))
        #expect(without.statusCode == 421 && without.headers[.require] == "eventlist")
        let pidfOnly = try #require(answer(try Self.subscribe(accept: "application/pidf+xml")))
        #expect(pidfOnly.statusCode == 406)
        #expect(pidfOnly.headers[.accept]?.contains("application/rlmi+xml") == true)
        var filtered = try Self.subscribe()
        filtered.body = Array(FilterTests.noteAndBasic.utf8)
        filtered.headers.set(.contentType, "application/simple-filter+xml")
        #expect(answer(filtered)?.statusCode == 415)
        #expect(h.core.counts.omaWatches == 0)
    }

    /// Each member counts against the watcher's subscriptions as its own subscription would,
    /// the list itself not (docs/security.md, "A fan-out is charged to its sender"): a list of
    /// two is refused (503) when one is left, holding nothing, and fits when two are.
    @Test func aListTakesTheWatchersQuotaForEachMember() throws {
        var h = try T.Harness(yaml: Self.yaml + "\nlimits: { subscriptions-per-watcher: 1 }")
        let (id, actions) = h.receive(try Self.subscribe(), from: .oma)
        #expect(T.responses(actions, id).first?.statusCode == 503)
        #expect(T.sent(actions, to: .enterprise).isEmpty && h.core.counts.omaWatches == 0)
        // Nothing was kept of it: a single subscription of the same watcher still fits.
        let (single, answer) = h.receive(try T.omaSubscribe(), from: .oma)
        #expect(T.responses(answer, single).isEmpty && T.sent(answer, to: .enterprise).count == 1)

        var fits = try T.Harness(yaml: Self.yaml + "\nlimits: { subscriptions-per-watcher: 2 }")
        let (listed, subscribed) = fits.receive(try Self.subscribe(), from: .oma)
        #expect(T.responses(subscribed, listed).first?.statusCode != 503)
        #expect(T.sent(subscribed, to: .enterprise).count == 2)
    }

    /// A member the enterprise rejects stays listed, `terminated` with its reason (RFC 4662
    /// §4.5, §5.5), under the instance id it had.
    @Test func aRejectedMemberIsListedTerminated() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, answered, legs) = try Self.answeredList(&h)
        let full = try Notification(try #require(T.sent(answered, to: .oma).first).0)
        let (carolSubscribe, _) = try #require(legs[Self.carol])
        var rejection = try T.enterpriseBENOTIFY(carolSubscribe, cseq: 2, CategoriesDocument(uri: Self.carol))
        rejection.headers.set(.subscriptionState, "terminated;reason=rejected")
        let actions = h.core.receive(rejection, id: 99, from: .enterprise, watcher: nil, now: h.now)
        let (notify, _) = try #require(T.sent(actions, to: .oma).first)
        let partial = try Notification(notify)
        #expect(partial.list.resources.map(\.uri) == [Self.carol])
        let instance = try #require(partial.instance(Self.carol))
        #expect(instance.state == .terminated && instance.reason == "rejected" && instance.cid == nil)
        #expect(instance.id == full.instance(Self.carol)?.id)
        // It stays listed in full state.
        let toTag = try #require(try notify.headers.from?.tag)
        let (_, refreshed) = h.receive(try Self.subscribe(cseq: 2, toTag: toTag), from: .oma)
        let state = try Notification(try #require(T.sent(refreshed, to: .oma).first).0)
        #expect(state.instance(Self.carol)?.state == .terminated && state.basic(Self.bob) == "open")
    }

    /// A member with no state when the wait ends is listed without an instance (RFC 4662 §4.5),
    /// and its first state follows alone.
    @Test func aMemberWithoutStateIsListedWithoutInstance() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (id, actions) = h.receive(try Self.subscribe(), from: .oma)
        let legs = Dictionary(uniqueKeysWithValues: T.sent(actions, to: .enterprise).map { ($0.0.uri.description, $0) })
        let (bobSubscribe, bobContext) = try #require(legs[Self.bob])
        let bobAnswered = h.core.receive(
            T.enterpriseOK(bobSubscribe, T.categories(availability: 3500, uri: Self.bob)), to: bobSubscribe,
            context: bobContext, now: h.now)
        #expect(T.responses(bobAnswered, id).isEmpty)
        let timers = actions.compactMap { if case .schedule(let t, let at) = $0 { (t, at) } else { nil } }
        let (timer, at) = try #require(timers.first { if case .firstAnswer = $0.0 { true } else { false } })
        h.now = at
        let answered = h.core.fire(timer, now: h.now)
        #expect(T.responses(answered, id).first?.statusCode == 200)
        let full = try Notification(try #require(T.sent(answered, to: .oma).first).0)
        #expect(full.list.resources.map(\.uri) == [Self.bob, Self.carol])
        #expect(full.basic(Self.bob) == "open")
        #expect(full.list.resources.last?.instances.isEmpty == true)

        let (carolSubscribe, carolContext) = try #require(legs[Self.carol])
        let late = h.core.receive(
            T.enterpriseOK(carolSubscribe, T.categories(availability: 3500, uri: Self.carol)), to: carolSubscribe,
            context: carolContext, now: h.now)
        let partial = try Notification(try #require(T.sent(late, to: .oma).first).0)
        #expect(partial.list.version == 1 && partial.basic(Self.carol) == "open")
    }

    /// The list and its members are kept with the watches' records: after a restart a member's
    /// change is sent in the list's dialog, its version skipping ahead of any sent before the
    /// restart (RFC 4662 §5.6.2: the watcher then refreshes for full state; a version repeated
    /// would be discarded).
    @Test func aRestoredListGoesOn() throws {
        typealias R = StateRestoreTests
        var h = try R.journaled(yaml: Self.yaml)
        var records = R.Records()
        let (_, _, legs) = try Self.answeredList(&h)
        R.take(&h, into: &records)
        var after = try R.journaled(yaml: Self.yaml, prefix: "r")
        _ = try after.core.restore(records.all, clock: R.clock, now: after.now)
        #expect(after.core.counts.omaWatches == 1, "one watcher's list; its members are not watchers")
        let (bobSubscribe, _) = try #require(legs[Self.bob])
        let busy = try Self.bobBusy(&after, bobSubscribe, cseq: 2)
        let (notify, _) = try #require(T.sent(busy, to: .oma).first)
        #expect(notify.headers.callID == "list-call-1")
        let partial = try Notification(notify)
        #expect(partial.list.version > GatewayCore.sequenceBlock && partial.list.resources.map(\.uri) == [Self.bob])
    }

    /// A member that ended stays listed across a restart, `terminated` with its reason and the
    /// same instance id (RFC 4662 §4.5, §5.5): the list's record is written when a member ends,
    /// though no dialog of the list's changed. The quotas its members took are taken again.
    @Test func aMemberThatEndedIsStillListedAfterARestart() throws {
        typealias R = StateRestoreTests
        var h = try R.journaled(yaml: Self.yaml)
        var records = R.Records()
        let (_, answered, legs) = try Self.answeredList(&h)
        let full = try Notification(try #require(T.sent(answered, to: .oma).first).0)
        R.take(&h, into: &records)
        let (carolSubscribe, _) = try #require(legs[Self.carol])
        var rejection = try T.enterpriseBENOTIFY(carolSubscribe, cseq: 2, CategoriesDocument(uri: Self.carol))
        rejection.headers.set(.subscriptionState, "terminated;reason=rejected")
        let (notify, _) = try #require(T.sent(h.receive(rejection, from: .enterprise).1, to: .oma).first)
        R.take(&h, into: &records)

        var after = try R.journaled(yaml: Self.yaml, prefix: "r")
        _ = try after.core.restore(records.all, clock: R.clock, now: after.now)
        #expect(after.core.counts.omaWatches == 1)
        let toTag = try #require(try notify.headers.from?.tag)
        let (_, refreshed) = after.receive(try Self.subscribe(cseq: 2, toTag: toTag), from: .oma)
        let state = try Notification(try #require(T.sent(refreshed, to: .oma).first).0)
        let carol = try #require(state.instance(Self.carol))
        #expect(carol.state == .terminated && carol.reason == "rejected")
        #expect(carol.id == full.instance(Self.carol)?.id)
        #expect(state.list.resources.map(\.uri) == [Self.bob, Self.carol])
    }

    /// A reload that changes a live list: the member no longer in it is unsubscribed, the new
    /// one watched, and the watcher sent full state without the old one (RFC 4662 §5.6.1). A
    /// reload without the list ends it with `noresource`.
    @Test func aReloadChangesALiveList() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, answered, legs) = try Self.answeredList(&h)
        let full = try Notification(try #require(T.sent(answered, to: .oma).first).0)
        let dave = "sip:dave@contoso.com"
        let changed = Self.yaml.replacingOccurrences(of: "\"sip:carol@contoso.com\"]", with: "\"\(dave)\"]")
        let actions = h.core.reconfigure(try GatewayConfiguration(yaml: changed), mapper: h.core.mapper, now: h.now)
        let enterprise = T.sent(actions, to: .enterprise)
        let carolCallID = try #require(legs[Self.carol]).0.headers.callID
        #expect(enterprise.contains { $0.0.headers.callID == carolCallID && $0.0.headers[.expires] == "0" })
        #expect(enterprise.contains { $0.0.uri.description == dave && $0.0.headers[.expires] != "0" })
        let state = try Notification(try #require(T.sent(actions, to: .oma).first).0)
        #expect(state.list.fullState && state.list.version == full.list.version + 1)
        #expect(state.list.resources.map(\.uri) == [Self.bob, dave])
        #expect(state.basic(Self.bob) == "open" && state.instance(dave) == nil)

        let without = GatewayConfiguration.defaultYAML
        let ended = h.core.reconfigure(try GatewayConfiguration(yaml: without), mapper: h.core.mapper, now: h.now)
        let (final, _) = try #require(T.sent(ended, to: .oma).first)
        #expect(final.headers[.subscriptionState] == "terminated;reason=noresource")
        #expect(try Notification(final).list.fullState)
        #expect(h.core.counts.omaWatches == 0)
    }

    /// Lists from XCAP (docs/flows.md, "Resource lists"): until the rls-services documents have
    /// been answered, a SUBSCRIBE that could take a list is asked to come back, one that could not
    /// goes on; then the lists fetched are served, and changes to them reach live lists.
    @Test func listsFromXCAPAreWaitedForThenServed() throws {
        var h = try T.Harness()
        #expect(h.core.replaceResourceLists([:], awaiting: true, now: h.now).isEmpty)
        let (waitID, waiting) = h.receive(try Self.subscribe(), from: .oma)
        let wait = try #require(T.responses(waiting, waitID).first)
        #expect(wait.statusCode == 503 && wait.headers[.retryAfter] == "5")
        #expect(T.sent(waiting, to: .enterprise).isEmpty && h.core.counts.omaWatches == 0)
        let plain = try T.request([
            "SUBSCRIBE \(Self.bob) SIP/2.0", "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKp1", "Max-Forwards: 69",
            "From: <sip:dave@oma.example>;tag=d1", "To: <\(Self.bob)>", "Call-ID: plain-1", "CSeq: 1 SUBSCRIBE",
            "Contact: <sip:dave@127.0.0.1:5070>", "Event: presence", "Accept: application/pidf+xml",
        ])
        let (_, plainActions) = h.receive(plain, from: .oma)
        #expect(T.sent(plainActions, to: .enterprise).map(\.0.uri.description) == [Self.bob])

        // The document answered: the list is served.
        #expect(h.core.replaceResourceLists([Self.team: [Self.bob, Self.carol]], awaiting: false, now: h.now).isEmpty)
        let (id, actions) = h.receive(try Self.subscribe(), from: .oma)
        let legs = T.sent(actions, to: .enterprise)
        #expect(Set(legs.map(\.0.uri.description)) == [Self.bob, Self.carol])
        let answered = Self.answerMembers(&h, actions)
        #expect(T.responses(answered, id).first?.statusCode == 200)
        let full = try Notification(try #require(T.sent(answered, to: .oma).first).0)
        #expect(full.list.resources.map(\.uri) == [Self.bob, Self.carol])

        // Carol taken out of the document: full state without her, her dialog ended.
        let shrunk = h.core.replaceResourceLists([Self.team: [Self.bob]], awaiting: false, now: h.now)
        let state = try Notification(try #require(T.sent(shrunk, to: .oma).first).0)
        #expect(state.list.fullState && state.list.resources.map(\.uri) == [Self.bob])
        let carol = try #require(legs.first { $0.0.uri.description == Self.carol }).0
        #expect(T.sent(shrunk, to: .enterprise).contains { $0.0.headers.callID == carol.headers.callID })
        // The list gone from the document: it ends.
        let gone = h.core.replaceResourceLists([:], awaiting: false, now: h.now)
        let final = try #require(T.sent(gone, to: .oma).first).0
        #expect(final.headers[.subscriptionState] == "terminated;reason=noresource")
    }

    /// The admin API shows a list subscription once, its members as its resources, each with
    /// the leg toward the enterprise that carries it.
    @Test func theAdminAPIShowsAListWithItsMembers() throws {
        var h = try T.Harness(yaml: Self.yaml)
        _ = try Self.answeredList(&h)
        let shown = h.core.bridgedSubscriptions(side: .oma, now: h.now)
        #expect(shown.count == 1)
        let list = try #require(shown.first)
        #expect(list.watcher == "sip:alice@oma.example" && list.state == "active")
        #expect(list.resources.map(\.uri) == [Self.bob, Self.carol])
        #expect(list.resources.allSatisfy { $0.leg?.state == "active" })
        #expect(h.core.bridgedSubscriptions(uri: Self.carol, now: h.now).map(\.id) == [list.id])
        // Ending it there ends the list: a final NOTIFY with RLMI, its members unsubscribed.
        let result = h.core.endSubscription(list.id, reason: "rejected", now: h.now)
        let ended = try #require(result)
        let (final, _) = try #require(T.sent(ended, to: .oma).first)
        #expect(final.headers[.subscriptionState] == "terminated;reason=rejected")
        #expect(try Notification(final).list.resources.count == 2)
        #expect(T.sent(ended, to: .enterprise).filter { $0.0.headers[.expires] == "0" }.count == 2)
        #expect(h.core.counts.omaWatches == 0)
    }

    @Test func listsAreCheckedWhenRead() throws {
        func problem(_ lists: String) -> String? {
            do {
                _ = try GatewayConfiguration(yaml: GatewayConfiguration.defaultYAML + "\nresource-lists:\n" + lists)
                return nil
            } catch { return error.description }
        }
        #expect(problem(#"  "sip:team@contoso.com": ["sip:bob@oma.example"]"#)?.contains("enterprise domain") == true)
        #expect(problem(#"  "sip:team@oma.example": ["sip:bob@contoso.com"]"#)?.contains("enterprise domain") == true)
        #expect(problem(#"  "sip:team@contoso.com": []"#)?.contains("at least one member") == true)
        #expect(
            problem(#"  "sip:team@contoso.com": ["sip:bob@contoso.com", "sip:bob@contoso.com"]"#)?
                .contains("already a member") == true)
        let nested = """
              "sip:team@contoso.com": ["sip:all@contoso.com"]
              "sip:all@contoso.com": ["sip:bob@contoso.com"]
            """
        #expect(problem(nested)?.contains("not nested") == true)
        let error = try #require(problem(#"  "sip:team@contoso.com": ["tel:+1555"]"#))
        #expect(error.first?.isNumber == true && error.contains(":"), "located: \(error)")
    }

    static let rlsServices = """
        <?xml version="1.0" encoding="UTF-8"?>
        <rls-services xmlns="urn:ietf:params:xml:ns:rls-services"
            xmlns:rl="urn:ietf:params:xml:ns:resource-lists">
          <service uri="sip:team@contoso.com">
            <rl:list name="team">
              <rl:display-name>Team</rl:display-name>
              <rl:entry uri="sip:bob@contoso.com"/>
              <rl:entry uri="sip:carol@contoso.com;transport=tcp"/>
            </rl:list>
            <packages><package>presence</package></packages>
          </service>
          <service uri="sip:calls@contoso.com">
            <rl:list><rl:entry uri="sip:bob@contoso.com"/></rl:list>
            <packages><package>dialog</package></packages>
          </service>
        </rls-services>
        """

    /// An RFC 4826 §4 rls-services document as the list source: its presence services, each
    /// member as an address of record; a list of another event package is not served.
    @Test func listsComeFromAnRLSServicesDocument() throws {
        let enterprise = try GatewayConfiguration(yaml: Self.yaml).enterprise
        let lists = try GatewayConfiguration.resourceLists(
            rlsServices: Array(Self.rlsServices.utf8), enterprise: enterprise, limit: 1000)
        #expect(lists == [Self.team: [Self.bob, Self.carol]])

        func problem(_ document: String) -> XMLError? {
            do {
                _ = try GatewayConfiguration.resourceLists(
                    rlsServices: Array(document.utf8), enterprise: enterprise, limit: 1000)
                return nil
            } catch { return error }
        }
        let reference = Self.rlsServices.replacingOccurrences(
            of: #"<rl:list><rl:entry uri="sip:bob@contoso.com"/></rl:list>"#,
            with: "<resource-list>http://xcap.example/resource-lists/users/bob/index/~~/x</resource-list>")
            .replacingOccurrences(of: "<package>dialog</package>", with: "<package>presence</package>")
        let referenced = try #require(problem(reference))
        #expect(referenced.message.contains("resource-list") && referenced.line == 13)
        let nested = try #require(problem(Self.rlsServices.replacingOccurrences(
            of: "<rl:display-name>Team</rl:display-name>", with: "<rl:list><rl:entry uri=\"sip:x@contoso.com\"/></rl:list>")))
        #expect(nested.message.contains("not followed") && nested.line == 6)
        let foreign = try #require(problem(Self.rlsServices.replacingOccurrences(
            of: "sip:bob@contoso.com\"/>\n", with: "sip:bob@oma.example\"/>\n")))
        #expect(foreign.message.contains("enterprise domain") && foreign.line == 7)
        #expect(problem("<ruleset xmlns=\"urn:ietf:params:xml:ns:common-policy\"/>")?.message.contains("rls-services") == true)
        #expect(problem("<rls-services")?.line == 1)
    }

    /// `resource-lists: FILE` is read with the configuration, at start and on reload; a file
    /// that cannot be read or does not parse stops the start naming it.
    @Test func theRLSServicesFileIsReadWithTheConfiguration() throws {
        let path = NSTemporaryDirectory() + "rls-services-\(UInt32.random(in: 0...UInt32.max)).xml"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Self.rlsServices.write(toFile: path, atomically: true, encoding: .utf8)
        let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(
            of: "state: { store: sqlite, path: state/presence-gateway.db }\nshutdown: keep", with: "state: { store: memory }")
            + "\nresource-lists: \(path)\n"
        let configuration = try GatewayConfiguration(yaml: yaml)
        #expect(configuration.resourceListsFile == path && configuration.resourceLists.isEmpty)
        let server = try GatewayServer(configuration: configuration, registry: PrometheusCollectorRegistry())
        #expect(server.configuration.resourceLists == [Self.team: [Self.bob, Self.carol]])

        try "<rls-services xmlns=\"urn:ietf:params:xml:ns:rls-services\">\n<service/>".write(
            toFile: path, atomically: true, encoding: .utf8)
        #expect {
            try GatewayServer(configuration: configuration, registry: PrometheusCollectorRegistry())
        } throws: { error in
            "\(error)".hasPrefix("\(path):2:")
        }
    }

    /// `presence-gateway --check` reads the rls-services file as a start would: a good one is
    /// counted, a bad one fails the check naming its line.
    @Test func checkReadsTheRLSServicesFile() async throws {
        let directory = NSTemporaryDirectory() + "rls-check-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lists = directory + "/rls-services.xml", config = directory + "/gateway.yaml"
        try Self.rlsServices.write(toFile: lists, atomically: true, encoding: .utf8)
        try (GatewayConfiguration.defaultYAML + "\nresource-lists: \(lists)\n").write(
            toFile: config, atomically: true, encoding: .utf8)
        let good = try await GatewayProcess.run(["--check", "--config", config])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stdout.contains("1 resource lists"), "\(good.stdout)")

        try Self.rlsServices.replacingOccurrences(of: "sip:carol@contoso.com", with: "sip:carol@oma.example")
            .write(toFile: lists, atomically: true, encoding: .utf8)
        let bad = try await GatewayProcess.run(["--check", "--config", config])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("\(lists):8:"), "\(bad.stderr)")

        // Documents on an XCAP server are named, not fetched: the check needs no server.
        try (GatewayConfiguration.defaultYAML
            + "\nxcap: { root: \"http://127.0.0.1:9/xcap-root\", rls-services: [\"sip:lists@contoso.com\"] }\n").write(
                toFile: config, atomically: true, encoding: .utf8)
        let named = try await GatewayProcess.run(["--check", "--config", config])
        #expect(named.status == 0, "\(named.stderr)")
        #expect(named.stdout.contains("on XCAP, fetched at start: 0 pres-rules and 1 rls-services documents"),
                "\(named.stdout)")
    }

    /// A side that listens on UDP and TCP gives a watcher's dialog the Contact of the transport
    /// its SUBSCRIBE came over: its refreshes then come back over that transport, which the
    /// dialog is held to. (With the side's one Contact, UDP, a dialog made over TCP had its
    /// refreshes refused 403 "Not Dialog Peer".)
    @Test func aWatchersDialogGetsTheContactOfItsTransport() throws {
        var h = try T.Harness(yaml: Self.yaml)
        h.core.transportContacts[.oma] = [
            .udp: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5060")),
            .tcp: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5060;transport=tcp")),
        ]
        let peer = DialogPeer(side: .oma, transport: .tcp, host: "127.0.0.1", port: 40_000)
        let request = try Self.subscribe()
        let watcher = WatcherIdentity(uri: "sip:alice@oma.example", network: .federated)
        let actions = h.core.receive(request, id: 7, from: .oma, watcher: watcher, peer: peer, now: h.now)
        let answered = Self.answerMembers(&h, actions)
        let ok = try #require(T.responses(answered, 7).first)
        #expect(try ok.headers.contact.first?.address?.uri.description == "sip:gw@127.0.0.1:5060;transport=tcp")
        let (notify, _) = try #require(T.sent(answered, to: .oma).first)
        #expect(try notify.headers.contact.first?.address?.uri.description == "sip:gw@127.0.0.1:5060;transport=tcp")
        // Over UDP, the UDP one.
        let udpPeer = DialogPeer(side: .oma, transport: .udp, host: "127.0.0.1", port: 5070)
        let single = h.core.receive(try T.omaSubscribe(), id: 8, from: .oma, watcher: watcher, peer: udpPeer, now: h.now)
        let (leg, context) = try #require(T.sent(single, to: .enterprise).first)
        let udpAnswer = h.core.receive(
            T.enterpriseOK(leg, T.categories(availability: 3500, uri: Self.bob)), to: leg, context: context, now: h.now)
        let udpOK = try #require(T.responses(udpAnswer, 8).first)
        #expect(try udpOK.headers.contact.first?.address?.uri.description == "sip:gw@127.0.0.1:5060")
    }
}
