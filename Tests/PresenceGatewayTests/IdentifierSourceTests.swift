@testable import PresenceGateway
import SIPTransport
import Testing

/// The runtime's Call-IDs and tags: unique, valid, and short enough for a Swift string to hold
/// inline (every dialog keeps them for hours); the tags carry the core's shard.
@Suite struct IdentifierSourceTests {
    @Test func randomCallIDsAreShortWordsAndDistinct() throws {
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let id = IdentifierSource.randomCallID()
            #expect(id.utf8.count == 15)
            // RFC 3261 §25.1: Call-ID = word [ "@" word ]; these characters are all `word`.
            #expect(id.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") })
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
    }

    /// RFC 3261 §19.3: a tag is a token with at least 32 random bits; the shard's mark comes
    /// first (docs/shards.md), and the whole fits the 15 bytes a Swift string holds inline.
    @Test func randomTagsCarryTheShardAndStayInline() throws {
        for shard in [0, 1, 675] {
            var ids = IdentifierSource.random(shard: shard)
            var seen = Set<String>()
            for _ in 0..<1_000 {
                let tag = ids.tag()
                #expect(tag.utf8.count <= 15 && tag.utf8.allSatisfy(\.isASCIIAlphanumeric))
                #expect(ShardMark.shard(ofTag: tag) == shard)
                seen.insert(tag)
            }
            #expect(seen.count == 1_000)
        }
    }

    /// A core's table keys say its shard (docs/shards.md), and a restored key of another shard
    /// (fewer shards run than made the state) does not move where its own keys go on.
    @Test func keysCarryTheShardAndStayInItsRange() {
        var ids = IdentifierSource.random(shard: 1)
        ids.keyBase = 3 << 40
        let first = ids.key()
        #expect(IdentifierSource.shard(ofKey: first) == 1)
        #expect(first == 3 << 40 + 1 << 32 + 1)
        ids.noteRestoredKey(3 << 40 + 2 << 32 + 500)
        ids.noteRestoredKey(3 << 40 + 1 << 32 + 40)
        #expect(ids.key() == 3 << 40 + 1 << 32 + 41)
    }
}

private extension UInt8 {
    var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
    }
}
