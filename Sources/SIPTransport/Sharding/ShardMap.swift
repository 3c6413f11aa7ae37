public import SIPMessages

/// Which of a gateway's shards owns a message (docs/shards.md): each shard runs its own core,
/// transaction layers and timers on an event loop of its own, and owns every dialog and
/// transaction it made.
///
/// What a shard makes carries its number, so what comes back finds it without a table:
/// - the tags of the dialogs it makes (``ShardMark/tag(_:shard:)``): a peer's request in one of
///   them carries the tag in To (RFC 3261 §12.2.1.1), and a NOTIFY in a subscription it made
///   carries it there too (RFC 6665 §4.1.2.4);
/// - the Via branch of each request it sends (``ShardMark/branch(_:shard:)``): a response carries
///   it back in its top Via (§8.1.3.3, §17.1.3).
///
/// A request outside any dialog goes to the shard of its From's address of record, so every
/// dialog one watcher opens lands on the same shard (``shard(ofAddressOfRecord:)``). A tag
/// without a mark (made before marks) is shard 0's; so is a message too broken to say. A mark
/// past the shards there are now (a state kept by more shards than run) counts modulo their
/// number: every record of one dialog carries the same mark, so they stay together.
public struct ShardMap: Sendable, Hashable {
    /// How many shards there are: 1 to ``ShardMark/maximumShards``.
    public let count: Int

    public init(count: Int) {
        precondition((1...ShardMark.maximumShards).contains(count), "1 to \(ShardMark.maximumShards) shards")
        self.count = count
    }

    /// The shard that owns `message`: a response by its top Via's branch, a request in a dialog
    /// by its To tag, any other request by its From's address of record.
    public func owner(of message: SIPMessage) -> Int {
        guard count > 1 else { return 0 }
        switch message {
        case .response(let response):
            guard let branch = try? response.headers.via.first?.branch else { return 0 }
            return ShardMark.shard(ofBranch: branch).map { $0 % count } ?? 0
        case .request(let request):
            guard let to = try? request.headers.to else { return 0 }
            if let tag = to.tag { return ShardMark.shard(ofTag: tag).map { $0 % count } ?? 0 }
            guard let from = try? request.headers.from else { return 0 }
            return shard(ofAddressOfRecord: from.uri)
        }
    }

    /// The shard of an address of record: FNV-1a (32 bits) over `user@host`, the host in lower
    /// case and the scheme left out (sip and sips name the same resource, RFC 3261 §19.1.4),
    /// modulo ``count``.
    public func shard(ofAddressOfRecord uri: SIPURI) -> Int {
        guard count > 1 else { return 0 }
        var hash: UInt32 = 2_166_136_261
        func mix(_ byte: UInt8) {
            hash ^= UInt32(byte)
            hash &*= 16_777_619
        }
        for byte in (uri.user ?? "").utf8 { mix(byte) }
        mix(UInt8(ascii: "@"))
        for byte in uri.host.utf8 { mix((UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte) }
        return Int(hash % UInt32(count))
    }
}

/// The mark of a shard in the identifiers it makes: two capital letters, `AA` for shard 0 to
/// `ZZ` for shard 675. The tags and branches the gateway made before marks, and this stack's
/// random tokens, are lower-case hexadecimal or base 36, so they never start with two.
public enum ShardMark {
    /// 26 × 26 two-letter marks.
    public static let maximumShards = 676

    /// `shard`'s mark.
    public static func mark(_ shard: Int) -> String {
        precondition((0..<maximumShards).contains(shard))
        let letters = [UInt8(ascii: "A") + UInt8(shard / 26), UInt8(ascii: "A") + UInt8(shard % 26)]
        return String(decoding: letters, as: UTF8.self)
    }

    /// A tag of `shard`: its mark, then `token` (RFC 3261 §19.3 asks 32 random bits or more of
    /// the token, not of the whole tag).
    public static func tag(_ token: String, shard: Int) -> String { mark(shard) + token }

    /// A branch of `shard`: the magic cookie (RFC 3261 §8.1.1.7), its mark, then `token`.
    public static func branch(_ token: String, shard: Int) -> String { "z9hG4bK" + mark(shard) + token }

    /// The shard a tag names; nil for a tag without a mark.
    public static func shard<S: StringProtocol>(ofTag tag: S) -> Int? {
        shard(marked: tag.utf8.prefix(2))
    }

    /// The shard a branch names; nil for a branch without the magic cookie or a mark.
    public static func shard<S: StringProtocol>(ofBranch branch: S) -> Int? {
        let bytes = branch.utf8
        guard bytes.starts(with: "z9hG4bK".utf8) else { return nil }
        return shard(marked: bytes.dropFirst(7).prefix(2))
    }

    private static func shard<C: Collection<UInt8>>(marked letters: C) -> Int? {
        let capitals = UInt8(ascii: "A")...UInt8(ascii: "Z")
        guard letters.count == 2, let first = letters.first, let second = letters.dropFirst().first,
            capitals.contains(first), capitals.contains(second)
        else { return nil }
        return Int(first - UInt8(ascii: "A")) * 26 + Int(second - UInt8(ascii: "A"))
    }
}
