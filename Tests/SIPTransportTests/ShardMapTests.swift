import SIPMessages
import SIPTransport
import Testing

/// The marks a shard puts in its tags and branches, and the owner of every kind of message the
/// gateway receives (docs/shards.md).
@Suite struct ShardMapTests {
    static func parse(_ text: String) throws -> SIPMessage {
        try SIPMessage(parsing: Array(text.replacingOccurrences(of: "\n", with: "\r\n").utf8))
    }

    static func request(to: String, from: String = "<sip:alice@example.com>;tag=peer1") throws -> SIPMessage {
        try parse(
            """
            SUBSCRIBE sip:bob@example.org SIP/2.0
            Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKpeer
            From: \(from)
            To: \(to)
            Call-ID: c1
            CSeq: 1 SUBSCRIBE
            Event: presence
            Max-Forwards: 70
            Content-Length: 0


            """)
    }

    static func response(branch: String) throws -> SIPMessage {
        try parse(
            """
            SIP/2.0 200 OK
            Via: SIP/2.0/UDP 127.0.0.1:5060;branch=\(branch)
            From: <sip:gw@example.com>;tag=AAx
            To: <sip:bob@example.org>;tag=peer2
            Call-ID: c2
            CSeq: 1 SUBSCRIBE
            Content-Length: 0


            """)
    }

    @Test func aMarkNamesItsShardFromAAToZZ() {
        #expect(ShardMark.mark(0) == "AA" && ShardMark.mark(25) == "AZ" && ShardMark.mark(26) == "BA")
        #expect(ShardMark.mark(675) == "ZZ")
        for shard in [0, 1, 25, 26, 300, 675] {
            #expect(ShardMark.shard(ofTag: ShardMark.tag("3k9x", shard: shard)) == shard)
            #expect(ShardMark.shard(ofBranch: ShardMark.branch("9f2c", shard: shard)) == shard)
        }
    }

    /// The gateway's tags before marks were base 36 or hexadecimal in lower case; a peer's
    /// branch has no mark; a branch without the magic cookie is RFC 2543's (RFC 3261 §8.1.1.7).
    @Test func identifiersWithoutAMarkNameNoShard() {
        for tag in ["1x8k2b9q0z3c", "9f2c01ab", "t1", "A", "", "Az9", "aB"] {
            #expect(ShardMark.shard(ofTag: tag) == nil, "\(tag)")
        }
        for branch in ["z9hG4bK9f2c01ab", "z9hG4bK", "z9hG4bKA", "AB12", "z9hg4bkAB12"] {
            #expect(ShardMark.shard(ofBranch: branch) == nil, "\(branch)")
        }
    }

    /// RFC 3261 §8.1.3.3 and §17.1.3: a response finds the client transaction by the top Via's
    /// branch, which the shard that sent the request marked.
    @Test func aResponseBelongsToTheShardOfItsBranch() throws {
        let shards = ShardMap(count: 4)
        #expect(shards.owner(of: try Self.response(branch: ShardMark.branch("77", shard: 3))) == 3)
        #expect(shards.owner(of: try Self.response(branch: ShardMark.branch("77", shard: 6))) == 2)
        #expect(shards.owner(of: try Self.response(branch: "z9hG4bK77")) == 0)
    }

    /// RFC 3261 §12.2.1.1: a request in a dialog carries the gateway's tag in To, whichever side
    /// made the dialog (RFC 6665 §4.1.2.4 for a NOTIFY in the gateway's own subscription).
    @Test func aRequestInADialogBelongsToTheShardOfItsToTag() throws {
        let shards = ShardMap(count: 3)
        let to = "<sip:bob@example.org>;tag=\(ShardMark.tag("k2", shard: 2))"
        #expect(shards.owner(of: try Self.request(to: to)) == 2)
        #expect(shards.owner(of: try Self.request(to: "<sip:bob@example.org>;tag=\(ShardMark.tag("k2", shard: 4))")) == 1)
        #expect(shards.owner(of: try Self.request(to: "<sip:bob@example.org>;tag=1x8k2b9q")) == 0)
    }

    /// A request outside a dialog goes by its From's address of record: the same watcher's
    /// SUBSCRIBEs (any tag, sip or sips, the host in any case, a display name) land together.
    @Test func aNewRequestBelongsToTheShardOfItsFromsAddressOfRecord() throws {
        let shards = ShardMap(count: 8)
        let owners = try [
            "<sip:alice@example.com>;tag=a1", "\"Alice\" <sips:alice@EXAMPLE.com>;tag=b2",
            "sip:alice@Example.Com;tag=c3",
        ].map { try shards.owner(of: Self.request(to: "<sip:bob@example.org>", from: $0)) }
        #expect(Set(owners).count == 1)
        #expect(owners[0] == shards.shard(ofAddressOfRecord: try SIPURI("sip:alice@example.com")))
    }

    /// 4,000 watchers over 4 shards: each within 10 % of a quarter.
    @Test func addressesOfRecordSpreadEvenly() throws {
        let shards = ShardMap(count: 4)
        var counts = [0, 0, 0, 0]
        for n in 0..<4_000 { counts[shards.shard(ofAddressOfRecord: try SIPURI("sip:user\(n)@example.com"))] += 1 }
        #expect(counts.allSatisfy { (900...1_100).contains($0) }, "\(counts)")
    }

    @Test func oneShardOwnsEverything() throws {
        let one = ShardMap(count: 1)
        #expect(one.owner(of: try Self.response(branch: ShardMark.branch("77", shard: 3))) == 0)
        #expect(one.owner(of: try Self.request(to: "<sip:bob@example.org>", from: "<sip:zed@example.com>;tag=z")) == 0)
    }
}
