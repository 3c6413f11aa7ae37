import NIOCore
import PresenceGateway
import SIPMessages
import Testing

/// RFC 6446 rate control asked for by an OMA watcher in its SUBSCRIBE's Event header, in
/// notifications per second: the gateway holds changes that come within 1 / max-rate seconds and
/// sends the state as it is when the interval ends, and sends the state again when 1 / min-rate
/// seconds pass without a NOTIFY.
@Suite struct RateControlTests {
    typealias T = GatewayCoreTests
    static let bob = "sip:bob@contoso.com"

    /// An OMA watcher subscribed with `event`, answered with Bob available at `h.now`: the
    /// enterprise leg's SUBSCRIBE and what the core did.
    static func subscribed(_ h: inout T.Harness, event: String) throws -> (SIPRequest, [GatewayCore.Action]) {
        let (id, actions) = h.receive(try T.omaSubscribe(event: event), from: .oma)
        let (subscribe, context) = try #require(T.sent(actions, to: .enterprise).first)
        let answered = h.core.receive(T.enterpriseOK(subscribe, T.categories(availability: 3500, uri: bob)),
                                      to: subscribe, context: context, now: h.now)
        #expect(T.responses(answered, id).first?.statusCode == 200)
        #expect(T.sent(answered, to: .oma).count == 1)
        return (subscribe, answered)
    }

    /// The enterprise's BENOTIFY with Bob at `availability`, delivered at `h.now`.
    static func change(_ h: inout T.Harness, _ subscribe: SIPRequest, cseq: Int, availability: UInt32) throws
        -> [GatewayCore.Action]
    {
        h.receive(try T.enterpriseBENOTIFY(subscribe, cseq: cseq, T.categories(availability: availability, uri: bob)),
                  from: .enterprise).1
    }

    static func notifies(_ actions: [GatewayCore.Action]) -> [String] {
        T.sent(actions, to: .oma).map { String(decoding: $0.0.body, as: UTF8.self) }
    }

    static func scheduled(_ actions: [GatewayCore.Action]) -> [(GatewayCore.Timer, NIODeadline)] {
        actions.compactMap {
            if case .schedule(let timer, let at) = $0, case .rateControl = timer { (timer, at) } else { nil }
        }
    }

    @Test func changesWithinTheMaxRateAreHeldAndTheLatestStateSentOnce() throws {
        var h = try T.Harness()
        let start = h.now
        let (subscribe, answered) = try Self.subscribed(&h, event: "presence;max-rate=0.1")
        // The rate in force goes back in Subscription-State.
        let state = try #require(try T.sent(answered, to: .oma).first?.0.headers.subscriptionState)
        #expect(state.parameters.value("max-rate") == "0.1")
        #expect(!state.parameters.contains("min-rate"))

        // 6500 (busy, [MS-PRES] §3.7.5.4) a second after the first NOTIFY: held, the timer set
        // for when the ten seconds end.
        h.now = start + .seconds(1)
        let busy = try Self.change(&h, subscribe, cseq: 2, availability: 6500)
        #expect(Self.notifies(busy).isEmpty)
        let (timer, due) = try #require(Self.scheduled(busy).first)
        #expect(due == start + .seconds(10))
        // Then 15500 (away): held too, no second timer.
        h.now = start + .seconds(2)
        let away = try Self.change(&h, subscribe, cseq: 3, availability: 15500)
        #expect(Self.notifies(away).isEmpty)
        #expect(Self.scheduled(away).isEmpty)

        // At the end of the interval the watcher gets the state as it is then: away, not busy.
        h.now = due
        let fired = h.core.fire(timer, now: h.now)
        let sent = Self.notifies(fired)
        #expect(sent.count == 1)
        #expect(sent.first?.contains("away") == true)
        #expect(sent.first?.contains("busy") == false)

        // A change a second later waits for the next ten seconds, counted from that NOTIFY.
        h.now = due + .seconds(1)
        let again = try Self.change(&h, subscribe, cseq: 4, availability: 3500)
        #expect(Self.notifies(again).isEmpty)
        #expect(Self.scheduled(again).first?.1 == due + .seconds(10))
    }

    @Test func aHeldChangeUndoneBeforeTheIntervalEndsSendsNothing() throws {
        var h = try T.Harness()
        let start = h.now
        let (subscribe, _) = try Self.subscribed(&h, event: "presence;max-rate=0.2")
        h.now = start + .seconds(1)
        let busy = try Self.change(&h, subscribe, cseq: 2, availability: 6500)
        let (timer, due) = try #require(Self.scheduled(busy).first)
        h.now = start + .seconds(2)
        _ = try Self.change(&h, subscribe, cseq: 3, availability: 3500)
        h.now = due
        #expect(Self.notifies(h.core.fire(timer, now: h.now)).isEmpty)
    }

    @Test func changesAfterTheIntervalGoOutAtOnce() throws {
        var h = try T.Harness()
        let start = h.now
        let (subscribe, _) = try Self.subscribed(&h, event: "presence;max-rate=0.2")
        h.now = start + .seconds(6)
        let busy = try Self.change(&h, subscribe, cseq: 2, availability: 6500)
        #expect(Self.notifies(busy).count == 1)
        #expect(Self.scheduled(busy).isEmpty)
    }

    @Test func theMinRateSendsTheStateAgainWhenNothingChanged() throws {
        var h = try T.Harness()
        let start = h.now
        let (_, answered) = try Self.subscribed(&h, event: "presence;min-rate=0.005")
        let (timer, due) = try #require(Self.scheduled(answered).first)
        #expect(due == start + .seconds(200))
        let first = try #require(Self.notifies(answered).first)
        h.now = due
        let fired = h.core.fire(timer, now: h.now)
        #expect(Self.notifies(fired) == [first])
        #expect(Self.scheduled(fired).first?.1 == due + .seconds(200))
    }

    /// A min-rate above one a minute is lowered to one a minute, and Subscription-State says so:
    /// a watcher cannot make the gateway send a NOTIFY every second.
    @Test func aHighMinRateIsLoweredToOneAMinute() throws {
        var h = try T.Harness()
        let (_, answered) = try Self.subscribed(&h, event: "presence;min-rate=1;max-rate=2")
        #expect(Self.scheduled(answered).first?.1 == h.now + .seconds(60))
        let state = try #require(try T.sent(answered, to: .oma).first?.0.headers.subscriptionState)
        #expect(state.parameters.value("min-rate") == "0.016667")
        #expect(state.parameters.value("max-rate") == "2")
    }

    @Test func withoutRateControlNoTimerIsSet() throws {
        var h = try T.Harness()
        let start = h.now
        let (subscribe, answered) = try Self.subscribed(&h, event: "presence")
        #expect(Self.scheduled(answered).isEmpty)
        h.now = start + .seconds(1)
        let busy = try Self.change(&h, subscribe, cseq: 2, availability: 6500)
        #expect(Self.notifies(busy).count == 1)
        #expect(Self.scheduled(busy).isEmpty)
    }

    /// The gateway as subscriber: `oma.rate-control` is asked of the OMA presence server in the
    /// Event header of every PIDF SUBSCRIBE it sends for an enterprise watcher, refreshes too.
    @Test func omaLegsAskForTheConfiguredRateControl() throws {
        let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(
            of: "next-hop: \"sip:127.0.0.1:5070;transport=udp\"",
            with: "next-hop: \"sip:127.0.0.1:5070;transport=udp\"\n  rate-control: { min-interval: 5, max-interval: 600 }")
        var h = try T.Harness(yaml: yaml)
        let (_, actions) = h.receive(try T.enterpriseSubscribe(resources: ["sip:john@oma.example"]), from: .enterprise,
                                     network: .sameEnterprise)
        let (subscribe, _) = try #require(T.sent(actions, to: .oma).first)
        let event = try #require(try subscribe.headers.event)
        #expect(event.package == "presence")
        // RFC 6446 rates: one per 5 s at most, one per 600 s at least.
        #expect(event.parameters.value("max-rate") == "0.2")
        #expect(event.parameters.value("min-rate") == "0.001667")
        // Without the key the Event header is the package alone.
        var plain = try T.Harness()
        let (_, plainActions) = plain.receive(try T.enterpriseSubscribe(resources: ["sip:john@oma.example"]), from: .enterprise,
                                              network: .sameEnterprise)
        #expect(try T.sent(plainActions, to: .oma).first?.0.headers.event?.parameters.isEmpty == true)
    }

    @Test(arguments: ["presence;max-rate=soon", "presence;min-rate=-5", "presence;max-rate", "presence;max-rate=0",
                      "presence;min-rate=0.000", "presence;max-rate=.5", "presence;max-rate=5.",
                      "presence;max-rate=1e3", "presence;max-rate=12345678901234567"])
    func anUnreadableRateIsRefusedWith400(_ event: String) throws {
        var h = try T.Harness()
        let (id, actions) = h.receive(try T.omaSubscribe(event: event), from: .oma)
        #expect(T.responses(actions, id).first?.statusCode == 400)
        #expect(T.sent(actions, to: .enterprise).isEmpty)
    }

    /// RFC 6446 §7: with `adaptive-min-rate=0.01` the state is sent again 100 s after a NOTIFY
    /// while few were sent (the count starts as ten over the 1,000 s period, §7.2 step 1); after
    /// a burst of changes the count is higher and the wait longer (§7.4: count / (rate² × period)).
    @Test func anAdaptiveMinRateWaitsLongerAfterABurst() throws {
        var h = try T.Harness()
        let start = h.now
        let (subscribe, answered) = try Self.subscribed(&h, event: "presence;adaptive-min-rate=0.01")
        let state = try #require(try T.sent(answered, to: .oma).first?.0.headers.subscriptionState)
        #expect(state.parameters.value("adaptive-min-rate") == "0.01")
        let (timer, due) = try #require(Self.scheduled(answered).first)
        #expect(due == start + .seconds(100))
        h.now = due
        let resent = Self.notifies(h.core.fire(timer, now: h.now))
        #expect(resent.count == 1, "the state again, unchanged")

        // Ten changes within a minute: twenty NOTIFYs in the period, so 200 s after the last.
        var last: [GatewayCore.Action] = []
        for step in 0..<10 {
            h.now = due + .seconds(Int64(5 * (step + 1)))
            last = try Self.change(&h, subscribe, cseq: 2 + step, availability: step % 2 == 0 ? 6500 : 3500)
            #expect(Self.notifies(last).count == 1)
        }
        let (_, later) = try #require(Self.scheduled(last).first)
        #expect(later == h.now + .seconds(200), "\(later.uptimeNanoseconds) against \(h.now.uptimeNanoseconds)")
    }

    /// RFC 6446 §8: an `adaptive-min-rate` above `max-rate` is lowered to it, and a `min-rate`
    /// not below the adaptive one is not considered; above one a minute, one a minute.
    @Test func adaptiveMinRateIsCombinedAsSection8Says() throws {
        func applied(_ event: String) throws -> SIPSubscriptionState {
            var h = try T.Harness()
            let (_, answered) = try Self.subscribed(&h, event: event)
            return try #require(try T.sent(answered, to: .oma).first?.0.headers.subscriptionState)
        }
        let capped = try applied("presence;max-rate=0.005;adaptive-min-rate=0.01")
        #expect(capped.parameters.value("adaptive-min-rate") == "0.005")
        let ignored = try applied("presence;min-rate=0.01;adaptive-min-rate=0.005")
        #expect(!ignored.parameters.contains("min-rate"))
        #expect(ignored.parameters.value("adaptive-min-rate") == "0.005")
        let ceiling = try applied("presence;adaptive-min-rate=5")
        #expect(ceiling.parameters.value("adaptive-min-rate") == "0.016667")
        let lowered = try applied("presence;max-rate=0.001;min-rate=0.01")
        #expect(lowered.parameters.value("min-rate") == "0.001")
        var h = try T.Harness()
        let (id, refused) = h.receive(try T.omaSubscribe(event: "presence;adaptive-min-rate=0"), from: .oma)
        #expect(T.responses(refused, id).first?.statusCode == 400)
    }
}
