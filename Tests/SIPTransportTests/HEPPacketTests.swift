import SIPTransport
import Testing

/// The HEP v3 encoder against bytes computed by hand from the "HEP3 Network Protocol
/// Specification" (chunk layout: vendor id, type id, length with the 6-byte chunk header, data;
/// integers in network order), and the Call-ID scan that feeds its correlation chunk.
@Suite struct HEPPacketTests {
    static func address(_ bytes: [UInt8]) -> HEPPacket.Address { HEPPacket.Address(bytes: bytes)! }

    @Test func anIPv4UDPPacketIsTheSpecificationsChunksInKamailiosOrder() throws {
        let packet = HEPPacket(transport: .udp, source: Self.address([192, 168, 1, 10]), sourcePort: 5060,
                               destination: Self.address([10, 0, 0, 1]), destinationPort: 5080,
                               seconds: 1_600_000_000, microseconds: 123_456, captureID: 2001,
                               correlationID: Array("ab".utf8), payload: Array("XY".utf8))
        let expected: [UInt8] = [
            0x48, 0x45, 0x50, 0x33, 0x00, 0x6d,                          // "HEP3", total length 109
            0x00, 0x00, 0x00, 0x01, 0x00, 0x07, 0x02,                    // IP family: AF_INET
            0x00, 0x00, 0x00, 0x02, 0x00, 0x07, 0x11,                    // IP protocol: 17 (UDP)
            0x00, 0x00, 0x00, 0x03, 0x00, 0x0a, 0xc0, 0xa8, 0x01, 0x0a,  // IPv4 source 192.168.1.10
            0x00, 0x00, 0x00, 0x04, 0x00, 0x0a, 0x0a, 0x00, 0x00, 0x01,  // IPv4 destination 10.0.0.1
            0x00, 0x00, 0x00, 0x07, 0x00, 0x08, 0x13, 0xc4,              // source port 5060
            0x00, 0x00, 0x00, 0x08, 0x00, 0x08, 0x13, 0xd8,              // destination port 5080
            0x00, 0x00, 0x00, 0x09, 0x00, 0x0a, 0x5f, 0x5e, 0x10, 0x00,  // seconds 1,600,000,000
            0x00, 0x00, 0x00, 0x0a, 0x00, 0x0a, 0x00, 0x01, 0xe2, 0x40,  // microseconds 123,456
            0x00, 0x00, 0x00, 0x0b, 0x00, 0x07, 0x01,                    // protocol type 1: SIP
            0x00, 0x00, 0x00, 0x0c, 0x00, 0x0a, 0x00, 0x00, 0x07, 0xd1,  // capture agent id 2001
            0x00, 0x00, 0x00, 0x11, 0x00, 0x08, 0x61, 0x62,              // correlation id "ab"
            0x00, 0x00, 0x00, 0x0f, 0x00, 0x08, 0x58, 0x59,              // payload "XY"
        ]
        #expect(packet.encoded() == expected)
        #expect(packet.encodedCount == 109)
    }

    @Test func anIPv6TLSPacketUsesChunksFiveAndSixAndTCPAndOmitsAnEmptyCorrelation() throws {
        var v6 = [UInt8](repeating: 0, count: 16)
        v6[15] = 1  // ::1
        var doc: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 12)
        doc[15] = 1  // 2001:db8::1
        let packet = HEPPacket(transport: .tls, source: Self.address(v6), sourcePort: 5061, destination: Self.address(doc),
                               destinationPort: 40_000, seconds: 1, microseconds: 2, captureID: 0, correlationID: [],
                               payload: Array("X".utf8))
        let bytes = try #require(packet.encoded())
        // 6 + 7 + 7 + 22 + 22 + 8 + 8 + 10 + 10 + 7 + 10 + 7 = 124.
        #expect(bytes.count == 124)
        #expect(Array(bytes[0..<6]) == [0x48, 0x45, 0x50, 0x33, 0x00, 0x7c])
        #expect(Array(bytes[6..<13]) == [0x00, 0x00, 0x00, 0x01, 0x00, 0x07, 0x0a])   // AF_INET6
        #expect(Array(bytes[13..<20]) == [0x00, 0x00, 0x00, 0x02, 0x00, 0x07, 0x06])  // TLS rides TCP: 6
        #expect(Array(bytes[20..<42]) == [0x00, 0x00, 0x00, 0x05, 0x00, 0x16] + v6)
        #expect(Array(bytes[42..<64]) == [0x00, 0x00, 0x00, 0x06, 0x00, 0x16] + doc)
        #expect(Array(bytes[64..<72]) == [0x00, 0x00, 0x00, 0x07, 0x00, 0x08, 0x13, 0xc5])
        #expect(Array(bytes[72..<80]) == [0x00, 0x00, 0x00, 0x08, 0x00, 0x08, 0x9c, 0x40])
        #expect(Array(bytes[117...]) == [0x00, 0x00, 0x00, 0x0f, 0x00, 0x07, 0x58])   // no 0x0011 chunk before it
    }

    @Test func mixedFamiliesGoOutAsIPv6WithTheIPv4AddressMapped() throws {
        let v6 = Self.address([UInt8](repeating: 0, count: 15) + [1])
        let packet = HEPPacket(transport: .udp, source: Self.address([127, 0, 0, 1]), sourcePort: 1, destination: v6,
                               destinationPort: 2, seconds: 0, microseconds: 0, captureID: 0, correlationID: [], payload: [])
        let bytes = try #require(packet.encoded())
        #expect(bytes[12] == 10)
        #expect(Array(bytes[20..<42]) == [0x00, 0x00, 0x00, 0x05, 0x00, 0x16] + [UInt8](repeating: 0, count: 10) + [0xff, 0xff, 127, 0, 0, 1])
    }

    @Test func aPacketBeyondTheSixteenBitLengthIsNotEncoded() {
        let packet = HEPPacket(transport: .tcp, source: Self.address([127, 0, 0, 1]), sourcePort: 1,
                               destination: Self.address([127, 0, 0, 1]), destinationPort: 2, seconds: 0, microseconds: 0,
                               captureID: 0, correlationID: [], payload: [UInt8](repeating: 65, count: 70_000))
        #expect(packet.encoded() == nil)
        #expect(HEPPacket.Address(bytes: [1, 2, 3]) == nil)
    }

    @Test(arguments: [
        ("INVITE sip:a@b SIP/2.0\r\nVia: SIP/2.0/UDP h\r\nCall-ID: abc@host\r\nCSeq: 1 INVITE\r\n\r\n", "abc@host"),
        ("SIP/2.0 200 OK\r\ni:compact-1\r\n\r\n", "compact-1"),
        ("NOTIFY sip:a@b SIP/2.0\r\ncall-id \t:   spaced@x  \r\n\r\n", "spaced@x"),
        ("NOTIFY sip:a@b SIP/2.0\nCALL-ID: bare-lf\n\n", "bare-lf"),
        ("NOTIFY sip:a@b SIP/2.0\r\nCall-Info: <http://x>\r\nX-Call-ID: no\r\nCall-ID: real\r\n\r\n", "real"),
        ("NOTIFY sip:a@b SIP/2.0\r\nTo: <sip:a@b>\r\n\r\nCall-ID: in-the-body\r\n", ""),
        ("", ""),
    ])
    func theCallIDIsReadFromTheHeaderSectionOnly(_ message: String, _ expected: String) {
        #expect(HEPPacket.callID(in: Array(message.utf8)) == Array(expected.utf8))
    }
}
