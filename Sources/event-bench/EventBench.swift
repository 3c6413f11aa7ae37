import BenchSupport
import Foundation
import NIOCore
import NIOEmbedded
import SIPEventAgents
import SIPMessages
import SIPStack
import SIPTransport

/// `event-bench [count]`: subscriptions created, refreshed and expired per second through the
/// event agents (``SubscriptionAgent`` → ``NotifierAgent``) over the in-memory loopback transport
/// on one `EmbeddedEventLoop` (TCP addresses, so transactions end without Timer J/K waits), and
/// the memory each active subscription holds. Figures are printed; nothing is asserted.
///
/// `event-bench [count] [--hold-only]` (create and hold only) or `event-bench [count] --state`
/// (the state values alone, without agents or network).
@main
struct EventBench {
    final class Counters: @unchecked Sendable {
        var notifications = 0
        var ended = 0
        var notifierEnded = 0
    }

    /// `MemoryLayout` stride of the state types, in bytes: what each costs inline (in an array
    /// slot or a dictionary bucket) before anything on the heap.
    static func layoutLine() -> String {
        "layout:    inline bytes (stride): SubscriberSubscription \(MemoryLayout<SubscriberSubscription>.stride), "
            + "NotifierSubscription \(MemoryLayout<NotifierSubscription>.stride), SIPDialog \(MemoryLayout<SIPDialog>.stride), "
            + "SubscriberSubscription.Configuration \(MemoryLayout<SubscriberSubscription.Configuration>.stride), "
            + "SubscriptionTerms \(MemoryLayout<SubscriptionTerms>.stride), SIPRequest \(MemoryLayout<SIPRequest>.stride), "
            + "SIPAddress \(MemoryLayout<SIPAddress>.stride), SIPURI \(MemoryLayout<SIPURI>.stride)"
    }

    static func seconds(_ body: () throws -> Void) rethrows -> Double {
        let start = DispatchTime.now().uptimeNanoseconds
        try body()
        return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    }

    /// Memory of the state values alone, without agents, transactions or a network: `count`
    /// notifier-side and subscriber-side subscriptions made from one SUBSCRIBE template with
    /// distinct Call-IDs and tags, held in arrays.
    static func stateMemory(count: Int) throws {
        let template = try SIPMessage(
            parsing: Array(
                """
                SUBSCRIBE sip:bob@example.com SIP/2.0\r
                Via: SIP/2.0/TCP 127.0.0.1:5060;branch=z9hG4bKtemplate\r
                Max-Forwards: 70\r
                From: <sip:alice@example.com>;tag=watcher\r
                To: <sip:bob@example.com>\r
                Call-ID: template@127.0.0.1\r
                CSeq: 1 SUBSCRIBE\r
                Contact: <sip:alice@127.0.0.1:5060;transport=tcp>\r
                Event: presence\r
                Accept: application/pidf+xml\r
                Expires: 600\r
                Content-Length: 0\r
                \r

                """.utf8))
        guard case .request(let subscribe) = template,
            case .accept(let terms) = SubscriptionTerms.evaluate(subscribe, registry: SIPEventPackageRegistry())
        else { return }
        let contact = SIPAddress(uri: SIPURI(scheme: .sip, user: "ps", host: "127.0.0.2", port: 5070))
        let now = NIODeadline.uptimeNanoseconds(0)
        ProcessMemory.trimHeap()
        let before = ProcessMemory.residentBytes()
        let heapBefore = ProcessMemory.heapInUse()
        var notifiers: [NotifierSubscription] = []
        notifiers.reserveCapacity(count)
        for i in 0..<count {
            var request = subscribe
            request.headers.set(.callID, "c\(i)@127.0.0.1")
            request.headers.set(.from, "<sip:alice@example.com>;tag=w\(i)")
            let (sub, _) = try NotifierSubscription.accept(
                request, terms: terms, status: .active, localTag: "n\(i)",
                contact: contact, body: nil, now: now)
            notifiers.append(sub)
        }
        ProcessMemory.trimHeap()
        let afterNotifiers = ProcessMemory.residentBytes()
        let heapAfterNotifiers = ProcessMemory.heapInUse()
        let bob = SIPURI(scheme: .sip, user: "bob", host: "example.com")
        let configuration = SubscriberSubscription.Configuration(
            target: bob, from: SIPAddress(uri: SIPURI(scheme: .sip, user: "alice", host: "example.com")),
            to: SIPAddress(uri: bob),
            contact: SIPAddress(uri: SIPURI(scheme: .sip, user: "alice", host: "127.0.0.1", port: 5060)), expires: 600)
        var subscribers: [SubscriberSubscription] = []
        subscribers.reserveCapacity(count)
        for i in 0..<count {
            var (sub, actions) = SubscriberSubscription.start(
                configuration, callID: "c\(i)@127.0.0.1", localTag: "w\(i)")
            guard case .send(let sent) = actions.first else { continue }
            var ok = SIPResponse(replyingTo: sent, statusCode: 200, reasonPhrase: "OK", toTag: "n\(i)")
            ok.headers.append(.contact, "<sip:ps@127.0.0.2:5070>")
            ok.headers.append(.expires, "600")
            _ = sub.receive(ok, now: now, jitter: 0)
            subscribers.append(sub)
        }
        ProcessMemory.trimHeap()
        let afterSubscribers = ProcessMemory.residentBytes()
        let heapAfterSubscribers = ProcessMemory.heapInUse()
        // The dialog identifiers: Call-ID and both tags, held inline as small strings here
        // ("c0@127.0.0.1", "w0", "n0": at most 15 bytes each, no heap).
        let identifiers = MemoryLayout<SIPDialog.ID>.size
        print(
            "state:     \(count) values of each side held in arrays, without agents, timers or indexes (bytes per subscription; RSS after malloc_trim):"
        )
        print(
            String(
                format:
                    "           notifier side   NotifierSubscription:   %5.0f (RSS) %5.0f (live heap), of which %d inline",
                Double(afterNotifiers - before) / Double(count),
                Double(heapAfterNotifiers - heapBefore) / Double(count),
                MemoryLayout<NotifierSubscription>.stride))
        print(
            String(
                format:
                    "           subscriber side SubscriberSubscription: %5.0f (RSS) %5.0f (live heap), of which %d inline",
                Double(afterSubscribers - afterNotifiers) / Double(count),
                Double(heapAfterSubscribers - heapAfterNotifiers) / Double(count),
                MemoryLayout<SubscriberSubscription>.stride))
        print(
            "           dialog identifiers (Call-ID, local and remote tag) are \(identifiers) bytes of each side's figure"
        )
        print(layoutLine())
        withExtendedLifetime((notifiers, subscribers)) {}
    }

    static func main() throws {
        let count = CommandLine.arguments.dropFirst().first.flatMap { Int($0) } ?? 100_000
        if CommandLine.arguments.contains("--state") {
            try stateMemory(count: count)
            return
        }
        let batch = 5_000
        let loop = EmbeddedEventLoop()
        let network = SIPLoopbackNetwork(eventLoop: loop)
        let watcherAddress = SIPTarget(.tcp, host: "127.0.0.1", port: 5060)
        let serverAddress = SIPTarget(.tcp, host: "127.0.0.2", port: 5070)
        var layerConfiguration = SIPTransactionLayer.Configuration.presenceEvents
        layerConfiguration.limits = .init(maxServerTransactions: 4 * batch, maxClientTransactions: 4 * batch)
        let watcherLayer = SIPTransactionLayer(
            transport: network.endpoint(watcherAddress), configuration: layerConfiguration)
        let serverLayer = SIPTransactionLayer(
            transport: network.endpoint(serverAddress), configuration: layerConfiguration)
        let counters = Counters()
        let subscriber = SubscriptionAgent(
            layer: watcherLayer, routing: SIPEventRouting(nextHop: serverAddress, alwaysUseNextHop: true),
            limits: .init(maxSubscriptions: count, maxConsecutiveResubscriptions: 0), jitter: { 0 },
            onEvent: { event in
                switch event {
                case .notification: counters.notifications += 1
                case .ended: counters.ended += 1
                case .resubscribing: break
                }
            })
        let body = Array(
            #"<presence xmlns="urn:ietf:params:xml:ns:pidf" entity="sip:bob@example.com"><tuple id="t"><status><basic>open</basic></status></tuple></presence>"#
                .utf8)
        let notifier = NotifierAgent(
            layer: serverLayer,
            contact: SIPAddress(
                uri: SIPURI(
                    scheme: .sip, user: "ps", host: "127.0.0.2", port: 5070,
                    parameters: [SIPParameter(name: "transport", value: "tcp")])),
            routing: SIPEventRouting(nextHop: watcherAddress, alwaysUseNextHop: true),
            limits: .init(maxSubscriptions: count, piggyback: false),
            state: { _, _ in body },
            onEvent: { if case .ended = $0 { counters.notifierEnded += 1 } })
        watcherLayer.start()
        serverLayer.start()
        subscriber.installAsRequestHandler()
        notifier.installAsRequestHandler()
        let start = loop.now
        func advance(to s: Double) { loop.advanceTime(to: start + .milliseconds(Int64(s * 1000))) }

        print(
            "event-bench: \(count) subscriptions, SubscriptionAgent → NotifierAgent on the loopback transport (TCP), one EmbeddedEventLoop"
        )
        loop.run()
        ProcessMemory.trimHeap()
        let rssBefore = ProcessMemory.residentBytes()
        let heapBefore = ProcessMemory.heapInUse()
        var clock = 0.0
        let created = try seconds {
            var made = 0
            while made < count {
                let n = min(batch, count - made)
                for i in 0..<n {
                    let bob = SIPURI(scheme: .sip, user: "user\(made + i)", host: "example.com")
                    _ = try subscriber.subscribe(
                        SubscriberSubscription.Configuration(
                            target: bob,
                            from: SIPAddress(uri: SIPURI(scheme: .sip, user: "alice", host: "example.com")),
                            to: SIPAddress(uri: bob),
                            contact: SIPAddress(
                                uri: SIPURI(
                                    scheme: .sip, user: "alice", host: "127.0.0.1", port: 5060,
                                    parameters: [SIPParameter(name: "transport", value: "tcp")])),
                            expires: 600))
                }
                loop.run()
                network.clearLog()
                made += n
                // Lets the finished transactions go (TCP: Timer J/K are 0).
                clock += 0.001
                advance(to: clock)
            }
        }
        // The transaction layer's timers are not cancelled but left to lapse (SIPTimerQueue): let
        // the longest (Timer F, 64·T1 = 32 s) pass, as it does long before a 600 s refresh, so
        // that only what the held subscriptions keep is measured.
        clock += 33
        advance(to: clock)
        network.clearLog()
        let rssHeld = ProcessMemory.residentBytes()
        let heapHeld = ProcessMemory.heapInUse()
        ProcessMemory.trimHeap()
        let rssTrimmed = ProcessMemory.residentBytes()
        print(
            String(
                format:
                    "created:   %d subscriptions (SUBSCRIBE, 200, NOTIFY, 200) in %.2f s = %.0f /s; notifier holds %d, subscriber %d",
                count, created, Double(count) / created, notifier.count, subscriber.count))
        print(
            String(
                format:
                    "memory:    RSS %.1f MB before, %.1f MB with %d subscriptions held; per subscription, both sides together "
                    + "(subscriber agent + notifier agent: state, dialogs, timers, indexes): %.0f bytes (RSS); "
                    + "per side about half (event-bench N --state splits the state values by side)",
                Double(rssBefore) / 1e6, Double(rssHeld) / 1e6, count, Double(rssHeld - rssBefore) / Double(count)))
        print(
            String(
                format:
                    "           after malloc_trim (freed heap the allocator kept given back): RSS %.1f MB = %.0f bytes per subscription, both sides together",
                Double(rssTrimmed) / 1e6, Double(rssTrimmed - rssBefore) / Double(count)))
        print(
            String(
                format:
                    "           live heap allocations (malloc_stats in use): %.0f bytes per subscription, both sides together",
                Double(heapHeld - heapBefore) / Double(count)))
        print(layoutLine())

        if CommandLine.arguments.contains("--hold-only") { return }
        // Refresh: every subscription's timer fires at 0.9 × 600 s.
        // In steps, so that the network's message log stays small.
        let refreshed = seconds {
            for step in 0...10 {
                advance(to: 540 + Double(step) * 0.1)
                network.clearLog()
            }
        }
        network.clearLog()
        print(
            String(
                format: "refreshed: %d in-dialog SUBSCRIBE + 200 + NOTIFY + 200 in %.2f s = %.0f /s; notifier holds %d",
                count, refreshed, Double(count) / refreshed, notifier.count))

        // Expiry: the next refreshes are lost, so the notifier's timers end every subscription.
        network.dropNext(Int.max) { record in
            guard let request = record.message?.request else { return false }
            return request.method == .subscribe
        }
        advance(to: 1100)
        network.clearLog()
        let expired = seconds {
            for step in 0...42 {
                advance(to: 1100 + Double(step))
                network.clearLog()
            }
        }
        print(
            String(
                format:
                    "expired:   %d (NOTIFY terminated;reason=timeout + 200) in %.2f s = %.0f /s; notifier holds %d, subscriber %d",
                counters.notifierEnded, expired, Double(counters.notifierEnded) / expired, notifier.count,
                subscriber.count))

        try? loop.syncShutdownGracefully()
    }
}
