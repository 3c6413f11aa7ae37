import Foundation
import NIOCore
import SIPEventAgents
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// What the agents reported, touched only on the transport's loop.
final class PeerEvents: @unchecked Sendable {
    var subscriber: [SubscriptionAgent.Event] = []
    var publisher: [PublicationAgent.Event] = []

    var notifications: [SubscriberSubscription.Notification] {
        subscriber.compactMap { if case .notification(_, let n) = $0 { n } else { nil } }
    }
    var bodies: [String] { notifications.map { String(decoding: $0.body, as: UTF8.self) } }
    var entityTags: [String] {
        publisher.compactMap { if case .published(_, let tag, _) = $0 { tag } else { nil } }
    }
}

func peerPIDF(_ entity: String, _ basic: String, note: String) -> [UInt8] {
    Array("""
    <?xml version="1.0" encoding="UTF-8"?>
    <presence xmlns="urn:ietf:params:xml:ns:pidf" entity="\(entity)"><tuple id="t1"><status><basic>\(basic)</basic></status><note>\(note)</note></tuple></presence>
    """.utf8)
}

/// The stack against Kamailio 5.6 as an OMA presence server (RFC 3856, RFC 3903, RFC 6665), on
/// 127.0.0.1 with ``SIPNetworkTransport`` over UDP.
@Suite(.serialized)
struct KamailioPresenceTests {
    /// A missing peer fails the tests (scripts/setup.sh installs it; CI must not pass without it).
    init() throws {
        guard PeerTools.kamailio else { throw PeerTools.Missing("Kamailio with presence and sqlite modules (scripts/setup.sh installs them)") }
    }

    @Test func stackPublishesToKamailioAndWatchesThePresentity() async throws {
        try await KamailioPresenceServer.with { kamailio in
            let port = kamailio.port
            let transport = try SIPNetworkTransport(configuration: .init(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
            let bound = try await transport.start()
            let local = try #require(bound.first)
            let loop = transport.eventLoop
            let events = PeerEvents()
            let layer = SIPTransactionLayer(transport: transport, configuration: .presenceEvents)
            let routing = SIPEventRouting(nextHop: kamailio.target)
            let (subscriber, publisher) = try await loop.submit {
                let s = SubscriptionAgent(layer: layer, routing: routing, jitter: { 0 }) { events.subscriber.append($0) }
                let p = PublicationAgent(layer: layer, routing: routing, jitter: { 0 }) { events.publisher.append($0) }
                layer.start()
                s.installAsRequestHandler()
                return (s, p)
            }.get()

            let bob = SIPURI(scheme: .sip, user: "bob", host: "127.0.0.1", port: port)
            let bobAOR = SIPAddress(uri: SIPURI(scheme: .sip, user: "bob", host: "127.0.0.1"))
            // PUA: the initial PUBLISH (RFC 3903 §4.2), refreshed every ~7 s (Expires 8).
            let publication = try await loop.submit {
                try publisher.publish(PublicationClient.Configuration(target: bob, from: bobAOR, to: bobAOR, expires: 8),
                                      body: peerPIDF("sip:bob@127.0.0.1", "open", note: "first"), contentType: SIPBodyType.pidf)
            }.get()
            #expect(try await eventually(on: loop) { events.entityTags.count == 1 }, "no 200 with SIP-ETag:\n\(kamailio.log.suffix(2000))")

            // Watcher: SUBSCRIBE (RFC 3856), Expires 6 so the refresh comes within the test.
            let alice = SIPAddress(uri: SIPURI(scheme: .sip, user: "alice", host: "127.0.0.1"))
            let contact = SIPAddress(uri: SIPURI(scheme: .sip, user: "alice", host: "127.0.0.1", port: local.port))
            let subscription = try await loop.submit {
                try subscriber.subscribe(SubscriberSubscription.Configuration(
                    target: bob, from: alice, to: bobAOR, contact: contact, expires: 6))
            }.get()
            #expect(try await eventually(on: loop) { events.bodies.contains { $0.contains("open") && $0.contains("first") } },
                    "no NOTIFY with the published state: \(events.bodies)")
            #expect(try await loop.submit { subscriber.subscription(subscription)?.status }.get() == .active)

            // Modify (RFC 3903 §4.4): the watcher is notified of the new state.
            try await loop.submit {
                publisher.modify(publication, body: peerPIDF("sip:bob@127.0.0.1", "closed", note: "second"), contentType: SIPBodyType.pidf)
            }.get()
            #expect(try await eventually(on: loop) { events.bodies.contains { $0.contains("closed") && $0.contains("second") } },
                    "no NOTIFY after the modify: \(events.bodies)")

            // Both refreshes happen on their own timers: the subscription's at 5.4 s (a NOTIFY
            // follows every refresh, RFC 6665 §4.2.1.2) and the publication's at 7.2 s (a new
            // entity-tag, RFC 3903 §4.3).
            let before = try await loop.submit { events.notifications.count }.get()
            #expect(try await eventually(on: loop, within: 12) { events.notifications.count > before && events.entityTags.count >= 3 },
                    "refreshes: \(events.notifications.count) notifications, entity-tags \(events.entityTags)")
            #expect(try await loop.submit { subscriber.subscription(subscription)?.status }.get() == .active)
            let tags = try await loop.submit { events.entityTags }.get()
            #expect(Set(tags).count == tags.count, "every successful PUBLISH gets a new entity-tag (RFC 3903 §6 step 5)")

            // Remove (RFC 3903 §4.5): Kamailio then reports the presentity closed.
            let notifiedBeforeRemove = try await loop.submit { events.notifications.count }.get()
            try await loop.submit { publisher.remove(publication) }.get()
            #expect(try await eventually(on: loop) { events.publisher.contains { if case .removed = $0 { true } else { false } } })
            #expect(try await eventually(on: loop) { events.notifications.count > notifiedBeforeRemove })

            // Unsubscribe (RFC 6665 §4.1.2.3): Kamailio's final NOTIFY says terminated;reason=timeout.
            try await loop.submit { subscriber.unsubscribe(subscription) }.get()
            #expect(try await eventually(on: loop) { events.subscriber.contains { if case .ended = $0 { true } else { false } } })
            let last = try await loop.submit { events.notifications.last }.get()
            #expect(last?.state.state == .terminated)
            #expect(last?.state.reason == "timeout")
            #expect(try await loop.submit { subscriber.count }.get() == 0)
            await transport.shutdown()
        }
    }
}
