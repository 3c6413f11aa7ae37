@testable import PresenceGateway
import Testing

/// The runtime files the core's timers under 8-byte keys; each must come back as the very timer.
@Suite struct TimerKeyTests {
    static let contexts: [GatewayCore.Context] = [
        .enterpriseWatch(1), .omaLeg(2), .omaWatch(3), .enterpriseLeg(4), .linkedPublication(5),
        .enterpriseLeg((1 << 56) - 1), .omaWatch(0),
    ]

    @Test func everyNumberedTimerPacksAndUnpacksToItself() {
        var seen = Set<TimerKey>()
        for context in Self.contexts {
            for timer in [GatewayCore.Timer.expiry(context), .refresh(context), .firstAnswer(context), .cleanup(context), .retry(context),
                          .rateControl(context)] {
                let key = TimerKey.packed(timer)
                #expect(key?.unpacked == timer)
                if let key { seen.insert(key) }
            }
        }
        #expect(seen.count == Self.contexts.count * 6)  // no two timers share a key
    }

    @Test func timersNamedByAStringAreNumberedWhileTheyRun() {
        var keys = TimerKeys()
        let publication = GatewayCore.Timer.publicationExpiry("etag-1")
        let service = GatewayCore.Timer.refresh(.servicePublish("sip:alice@contoso.com"))
        #expect(TimerKey.packed(publication) == nil)
        #expect(TimerKey.packed(.expiry(.omaLeg(-1))) == nil)  // out of range: numbered instead
        #expect(keys.existingKey(for: publication) == nil)
        let a = keys.key(for: publication)
        let b = keys.key(for: service)
        #expect(a != b)
        #expect(keys.key(for: publication) == a)
        #expect(keys.timer(for: a) == publication)
        #expect(keys.timer(for: b) == service)
        keys.release(a)
        #expect(keys.existingKey(for: publication) == nil)
        #expect(keys.timer(for: a) == nil)
        // A new run gets a new number: an entry of the old one still queued matches nothing.
        #expect(keys.key(for: publication) != a)
        // Packed keys need no number and are never forgotten.
        let packed = keys.key(for: .expiry(.omaWatch(7)))
        keys.release(packed)
        #expect(keys.timer(for: packed) == .expiry(.omaWatch(7)))
    }
}
