extension SIPResolver {
    /// Which lookups come first for a domain without port or transport.
    public enum Mode: Sendable, Hashable {
        /// RFC 3263 §4.1 as written: NAPTR, then SRV, then A/AAAA.
        case rfc3263
        /// Microsoft federation first: `_sipfederationtls._tcp.<domain>` SRV over TLS, the record
        /// Lync and Skype for Business Access Edge servers publish and look up for federated
        /// partners (Microsoft's edge DNS requirements; RFC 3263 does not know it). When that
        /// yields nothing, resolution continues as ``rfc3263``.
        case microsoftFederation
    }

    /// A uniform random integer in `0...upperBound`, for the weighted choice among SRV records
    /// of equal priority (RFC 2782). Tests inject a fixed sequence.
    public struct RandomSource: Sendable {
        public var next: @Sendable (_ upperBound: Int) -> Int
        public init(_ next: @escaping @Sendable (_ upperBound: Int) -> Int) { self.next = next }
        /// The system generator.
        public static let system = RandomSource { Int.random(in: 0...max(0, $0)) }
    }

    public struct Configuration: Sendable {
        /// Domain → ordered targets, consulted before DNS (names compare case-insensitively, a
        /// trailing dot ignored). A target host may be an IP literal or a name to look up with
        /// A/AAAA; its port is used as given. Only targets of a transport the caller supports
        /// (TLS only for a sips: URI) are returned. Default empty.
        public var overrides: [String: [SIPTarget]]
        /// Default ``Mode/rfc3263``.
        public var mode: Mode
        /// The address record types to query for a host name, in order of preference. Default
        /// `[.a, .aaaa]` (IPv4 first).
        public var addressTypes: [DNSRecordType]
        /// Default ``RandomSource/system``.
        public var random: RandomSource
        /// The most targets returned for one URI. Default 32.
        public var maxTargets: Int
        /// The most DNS lookups (cache hits included) one resolution makes, so that a hostile
        /// zone with many NAPTR or SRV records cannot make it query without end. Default 64.
        public var maxLookups: Int

        public init(
            overrides: [String: [SIPTarget]] = [:], mode: Mode = .rfc3263, addressTypes: [DNSRecordType] = [.a, .aaaa],
            random: RandomSource = .system, maxTargets: Int = 32, maxLookups: Int = 64
        ) {
            self.overrides = overrides
            self.mode = mode
            self.addressTypes = addressTypes
            self.random = random
            self.maxTargets = max(1, maxTargets)
            self.maxLookups = max(1, maxLookups)
        }
    }
}
