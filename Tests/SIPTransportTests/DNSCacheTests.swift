import SIPTransport
import Testing

@Suite struct DNSCacheTests {
    static let record = DNSResourceRecord(name: "a.test", ttl: 10, data: .a(DNSIPv4Address(127, 0, 0, 1)))

    @Test func entriesExpireOnTheInjectedClock() {
        let clock = ManualClock()
        let cache = DNSCache(clock: { clock.read() })
        cache.store([Self.record], for: "a.test", .a, ttl: 10)
        #expect(cache.records(for: "A.TEST", .a) == [Self.record])
        #expect(cache.records(for: "a.test", .aaaa) == nil)
        clock.advance(by: .seconds(10))
        #expect(cache.records(for: "a.test", .a) == nil)
    }

    @Test func ttlsAreCappedAndTopBitTTLsAreZero() {
        let clock = ManualClock()
        let cache = DNSCache(maxTTL: .seconds(5), clock: { clock.read() })
        cache.store([Self.record], for: "a.test", .a, ttl: 86_400)
        cache.store([Self.record], for: "b.test", .a, ttl: 0x8000_0001)  // RFC 2181 §8
        #expect(cache.records(for: "b.test", .a) == nil)
        clock.advance(by: .seconds(5))
        #expect(cache.records(for: "a.test", .a) == nil)
    }

    @Test func aFullCacheEvictsTheEntryClosestToExpiry() {
        let clock = ManualClock()
        let cache = DNSCache(maxEntries: 2, clock: { clock.read() })
        cache.store([], for: "short.test", .a, ttl: 5)
        cache.store([], for: "long.test", .a, ttl: 500)
        cache.store([], for: "new.test", .a, ttl: 50)
        #expect(cache.count == 2)
        #expect(cache.records(for: "short.test", .a) == nil)
        #expect(cache.records(for: "long.test", .a) != nil)
        #expect(cache.records(for: "new.test", .a) != nil)
    }
}
