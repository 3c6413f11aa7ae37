import SIPTransport
import Testing

/// Wire vectors written out by hand from RFC 1035 §4.1 (header, question, RR format, §4.1.4
/// compression), RFC 2782 (SRV RDATA) and RFC 3403 §4.1 (NAPTR RDATA).
@Suite struct DNSMessageCodecTests {
    static func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A response to `_sip._udp.example.com IN SRV` whose answer owner is a pointer to the
    /// question and whose SRV target `sip1.example.com` ends in a pointer to `example` (offset 22).
    static let srvResponse: [UInt8] =
        [0x12, 0x34, 0x81, 0x80, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00]  // ID, QR RD RA, QD=1 AN=1
        + [4] + ascii("_sip") + [4] + ascii("_udp") + [7] + ascii("example") + [3] + ascii("com") + [0]  // offset 12
        + [0x00, 0x21, 0x00, 0x01]  // QTYPE SRV (33), QCLASS IN
        + [0xC0, 0x0C]  // NAME: pointer to 12
        + [0x00, 0x21, 0x00, 0x01, 0x00, 0x00, 0x0E, 0x10, 0x00, 0x0D]  // SRV IN TTL 3600 RDLENGTH 13
        + [0x00, 0x0A, 0x00, 0x3C, 0x13, 0xC4]  // priority 10, weight 60, port 5060
        + [4] + ascii("sip1") + [0xC0, 0x16]  // sip1 + pointer to "example" at 22

    @Test func parsesAHandBuiltSRVResponseWithCompressedNames() throws {
        let message = try DNSMessage(parsing: Self.srvResponse)
        #expect(message.id == 0x1234)
        #expect(message.flags.isResponse && message.flags.recursionDesired && message.flags.recursionAvailable)
        #expect(!message.flags.isTruncated && !message.flags.isAuthoritative)
        #expect(message.flags.responseCode == .noError)
        #expect(message.questions == [DNSQuestion(name: "_sip._udp.example.com", type: .srv)])
        #expect(message.answers.count == 1)
        let answer = try #require(message.answers.first)
        #expect(answer.name == "_sip._udp.example.com")
        #expect(answer.ttl == 3600)
        #expect(answer.data == .srv(DNSSRVRecord(priority: 10, weight: 60, port: 5060, target: "sip1.example.com")))
    }

    @Test func followsAPointerIntoRDataOfAnEarlierRecord() throws {
        // www.example.com A: CNAME www -> web.example.com ("web" + pointer to "example" at 16),
        // then the A record whose owner is a pointer into the CNAME's RDATA (offset 45).
        let bytes: [UInt8] =
            [0xBE, 0xEF, 0x81, 0x80, 0x00, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00]
            + [3] + Self.ascii("www") + [7] + Self.ascii("example") + [3] + Self.ascii("com") + [0]  // 12...28
            + [0x00, 0x01, 0x00, 0x01]  // 29...32
            + [0xC0, 0x0C, 0x00, 0x05, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3C, 0x00, 0x06]  // 33...44
            + [3] + Self.ascii("web") + [0xC0, 0x10]  // 45...50
            + [0xC0, 0x2D, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x3C, 0x00, 0x04, 192, 0, 2, 1]
        let message = try DNSMessage(parsing: bytes)
        #expect(message.answers.map(\.name) == ["www.example.com", "web.example.com"])
        #expect(message.answers.map(\.data) == [.cname("web.example.com"), .a(DNSIPv4Address(192, 0, 2, 1))])
        #expect(message.answers.allSatisfy { $0.ttl == 60 })
    }

    @Test func parsesTheNAPTRRecordOfRFC3263Section4Point1() throws {
        // example.com IN NAPTR 50 50 "s" "SIPS+D2T" "" _sips._tcp.example.com
        let bytes: [UInt8] =
            [0x00, 0x01, 0x84, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00]  // QR AA, AN=1
            + [7] + Self.ascii("example") + [3] + Self.ascii("com") + [0]  // 12...24
            + [0x00, 0x23, 0x00, 0x01, 0x00, 0x00, 0x0E, 0x10, 0x00, 0x1D]  // NAPTR IN 3600 RDLENGTH 29
            + [0x00, 0x32, 0x00, 0x32]  // order 50, preference 50
            + [1] + Self.ascii("s") + [8] + Self.ascii("SIPS+D2T") + [0]
            + [5] + Self.ascii("_sips") + [4] + Self.ascii("_tcp") + [0xC0, 0x0C]
        let message = try DNSMessage(parsing: bytes)
        #expect(message.flags.isAuthoritative)
        #expect(message.questions.isEmpty)
        let naptr = DNSNAPTRRecord(order: 50, preference: 50, flags: "s", services: "SIPS+D2T", regexp: "",
                                   replacement: "_sips._tcp.example.com")
        #expect(message.answers == [DNSResourceRecord(name: "example.com", ttl: 3600, data: .naptr(naptr))])
    }

    @Test func serializesAQueryInRFC1035WireForm() throws {
        let bytes = try DNSMessage.query(id: 0xABCD, name: "example.com", type: .aaaa).serialized()
        let expected: [UInt8] =
            [0xAB, 0xCD, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]  // RD only
            + [7] + Self.ascii("example") + [3] + Self.ascii("com") + [0] + [0x00, 0x1C, 0x00, 0x01]
        #expect(bytes == expected)
    }

    @Test func everyRecordTypeRoundTrips() throws {
        let soa = DNSSOARecord(primaryServer: "ns.example.com", responsibleMailbox: "hostmaster.example.com",
                               serial: 2_026_112_201, refresh: 7200, retry: 900, expire: 1_209_600, minimum: 300)
        let message = DNSMessage(
            id: 7,
            flags: DNSMessage.Flags(isResponse: true, opcode: 0, isAuthoritative: true, isTruncated: true,
                                    recursionDesired: false, recursionAvailable: true, responseCode: .nameError),
            questions: [DNSQuestion(name: "example.com", type: .naptr)],
            answers: [
                DNSResourceRecord(name: "example.com", ttl: 1, data: .a(DNSIPv4Address(127, 0, 0, 1))),
                DNSResourceRecord(name: "example.com", ttl: 2, data: .aaaa(try #require(DNSIPv6Address("2001:db8::5")))),
                DNSResourceRecord(name: "alias.example.com", ttl: 3, data: .cname("example.com")),
                DNSResourceRecord(name: "_sips._tcp.example.com", ttl: 4,
                                  data: .srv(DNSSRVRecord(priority: 1, weight: 2, port: 5061, target: "."))),
                DNSResourceRecord(name: "example.com", ttl: 5, data: .naptr(DNSNAPTRRecord(
                    order: 10, preference: 20, flags: "S", services: "SIP+D2U", regexp: "!^.*$!sip:x@y!",
                    replacement: "_sip._udp.example.com"))),
            ],
            authorities: [DNSResourceRecord(name: "example.com", ttl: 6, data: .soa(soa))],
            additionals: [DNSResourceRecord(name: "example.com", dnsClass: DNSClass(rawValue: 3), ttl: 7,
                                            data: .other(type: DNSRecordType(rawValue: 16), rdata: [3, 0x61, 0x62, 0x63]))]
        )
        let parsed = try DNSMessage(parsing: try message.serialized())
        #expect(parsed == message)
    }

    @Test func namesCompareCaseInsensitively() throws {
        #expect(try DNSName("Example.COM.") == DNSName("example.com"))
        #expect(Set([try DNSName("A.b"), try DNSName("a.B")]).count == 1)
        #expect(DNSName.root.description == ".")
        #expect(try DNSName(labels: [[0x61, 0x2E, 0x00]]).description == "a\\.\\000")
    }

    @Test func namesEnforceLabelAndLengthLimits() {
        // A variable, not a literal: `DNSName("...")` with a literal is literal coercion (SE-0213).
        let emptyLabel = "a..b"
        #expect(throws: SIPTransportError.self) { try DNSName(emptyLabel) }
        #expect((try? DNSName(String(repeating: "a", count: 63) + ".com")) != nil)
        #expect(throws: SIPTransportError.self) { try DNSName(String(repeating: "a", count: 64) + ".com") }
        let label = String(repeating: "a", count: 63)
        // 4 × (1 + 63) + 1 = 257 octets > 255.
        #expect(throws: SIPTransportError.self) { try DNSName([label, label, label, label].joined(separator: ".")) }
    }

    @Test(arguments: [
        ("2001:db8::1", "2001:db8::1"),
        ("2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
        ("::", "::"),
        ("::1", "::1"),
        ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"),  // RFC 5952 §4.2.3: the first of equal runs
        ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),  // §4.2.2: one zero group is not shortened
    ])
    func ipv6TextParsesAndPrintsCanonically(input: String, canonical: String) throws {
        #expect(try #require(DNSIPv6Address(input)).description == canonical)
    }

    @Test func ipv6TextMayEndInDottedIPv4() throws {
        // RFC 4291 §2.2 form 3.
        #expect(try #require(DNSIPv6Address("::ffff:192.0.2.1")).bytes == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 192, 0, 2, 1])
    }

    @Test(arguments: ["1:2:3:4:5:6:7", "1::2::3", ":::", "12345::", "g::1", "1:2:3:4:5:6:7:8:9", ""])
    func malformedIPv6TextIsRejected(input: String) {
        #expect(DNSIPv6Address(input) == nil)
    }

    @Test func ipv4TextIsDottedDecimalOnly() {
        #expect(DNSIPv4Address("192.0.2.10")?.bytes == [192, 0, 2, 10])
        #expect(DNSIPv4Address("256.0.0.1") == nil)
        #expect(DNSIPv4Address("1.2.3") == nil)
        #expect(DNSIPv4Address("example.com") == nil)
    }
}
