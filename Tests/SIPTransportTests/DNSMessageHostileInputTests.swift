import SIPTransport
import Testing

/// Responses built to break a parser: each must fail with its stable code, never trap.
@Suite struct DNSMessageHostileInputTests {
    static func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// A response header with the given counts.
    static func header(qd: UInt16 = 0, an: UInt16 = 0, ns: UInt16 = 0, ar: UInt16 = 0) -> [UInt8] {
        [0x00, 0x01, 0x81, 0x80] + [qd, an, ns, ar].flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    static func code(of bytes: [UInt8], limits: DNSMessage.ParseLimits = DNSMessage.ParseLimits()) -> SIPTransportError.Code? {
        do {
            _ = try DNSMessage(parsing: bytes, limits: limits)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func aPointerToItselfIsRejected() {
        // QNAME at 12 is a pointer to 12.
        #expect(Self.code(of: Self.header(qd: 1) + [0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01]) == .dnsBadPointer)
    }

    @Test func aForwardPointerIsRejectedSoNoLoopCanForm() {
        // QNAME "a" then a pointer to 17, the answer's owner, which points back to 12: a loop
        // made of one backward and one forward pointer.
        let bytes = Self.header(qd: 1, an: 1)
            + [1, 0x61, 0xC0, 0x11, 0x00]  // 12...16: "a" + pointer to 17 (forward)
            + [0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x04, 1, 2, 3, 4]
        #expect(Self.code(of: bytes) == .dnsBadPointer)
    }

    @Test func aPointerIntoTheHeaderIsRejected() {
        #expect(Self.code(of: Self.header(qd: 1) + [0xC0, 0x02, 0x00, 0x01, 0x00, 0x01]) == .dnsBadPointer)
    }

    @Test func aPointerAtTheEndOfTheMessageIsTruncation() {
        // QNAME "abc" followed by the first octet of a pointer, and nothing after it.
        #expect(Self.code(of: Self.header(qd: 1) + [3] + Self.ascii("abc") + [0xC0]) == .dnsTruncated)
    }

    @Test(arguments: [UInt8(0x40), 0x7F, 0x80, 0xBF])
    func labelLengthOctetsAbove63AreRejected(octet: UInt8) {
        let bytes = Self.header(qd: 1) + [octet] + [UInt8](repeating: 0x61, count: 70) + [0, 0x00, 0x01, 0x00, 0x01]
        #expect(Self.code(of: bytes) == .dnsBadLabel)
    }

    @Test func namesLongerThan255OctetsAreRejected() {
        // Five labels of 63 octets: 5 × 64 + 1 = 321 octets.
        let label = [63] + [UInt8](repeating: 0x61, count: 63)
        let bytes = Self.header(qd: 1) + Array([[UInt8]](repeating: label, count: 5).joined()) + [0, 0x00, 0x01, 0x00, 0x01]
        #expect(Self.code(of: bytes) == .dnsNameTooLong)
    }

    @Test func namesMadeTooLongThroughPointersAreRejected() {
        // The question is 3 labels of 63 (193 octets); the answer adds two more labels in front
        // of a pointer to it: 2 × 64 + 193 = 321.
        let label = [63] + [UInt8](repeating: 0x62, count: 63)
        var bytes = Self.header(qd: 1, an: 1) + label + label + label + [0, 0x00, 0x01, 0x00, 0x01]
        bytes += label + label + [0xC0, 0x0C] + [0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x04, 1, 2, 3, 4]
        #expect(Self.code(of: bytes) == .dnsNameTooLong)
    }

    @Test func countsLargerThanTheMessageAreRejectedBeforeParsing() {
        #expect(Self.code(of: Self.header(an: 0xFFFF) + [UInt8](repeating: 0, count: 20)) == .dnsCountExceedsMessage)
        #expect(Self.code(of: Self.header(qd: 3) + [0, 0, 1, 0, 1]) == .dnsCountExceedsMessage)
    }

    @Test func aShortHeaderIsTruncation() {
        #expect(Self.code(of: [0x12, 0x34, 0x81]) == .dnsTruncated)
        #expect(Self.code(of: []) == .dnsTruncated)
    }

    @Test func rdataRunningPastTheMessageIsTruncation() {
        // An SRV answer whose RDLENGTH is 20 but only 8 octets follow.
        let bytes = Self.header(an: 1) + [0, 0x00, 0x21, 0x00, 0x01, 0, 0, 0, 60, 0x00, 0x14]
            + [0, 1, 0, 1, 0x13, 0xC4, 1, 0x61]
        #expect(Self.code(of: bytes) == .dnsTruncated)
    }

    @Test func aRecordCutInsideItsFixedFieldsIsTruncation() {
        // Owner, TYPE, CLASS and TTL (11 octets, enough for the count check), then the message
        // ends where RDLENGTH should be.
        let bytes = Self.header(an: 1) + [1, 0x61, 0, 0x00, 0x01, 0x00, 0x01, 0, 0, 0, 1]
        #expect(Self.code(of: bytes) == .dnsTruncated)
    }

    @Test func anARecordWithFiveOctetsIsBadRData() {
        let bytes = Self.header(an: 1) + [0, 0x00, 0x01, 0x00, 0x01, 0, 0, 0, 60, 0x00, 0x05, 1, 2, 3, 4, 5]
        #expect(Self.code(of: bytes) == .dnsBadRData)
    }

    @Test func anSRVWhoseTargetOverrunsRDLengthIsBadRData() {
        // RDLENGTH 8 but the target "abc" needs 5 octets after the 6 fixed ones; another record
        // follows so the octets exist.
        let bytes = Self.header(an: 2) + [0, 0x00, 0x21, 0x00, 0x01, 0, 0, 0, 60, 0x00, 0x08]
            + [0, 1, 0, 1, 0x13, 0xC4, 3] + Self.ascii("abc") + [0]
            + [0, 0x00, 0x01, 0x00, 0x01, 0, 0, 0, 60, 0x00, 0x04, 1, 2, 3, 4]
        #expect(Self.code(of: bytes) == .dnsBadRData)
    }

    @Test func aNAPTRCharacterStringPastTheEndIsTruncation() {
        let bytes = Self.header(an: 1) + [0, 0x00, 0x23, 0x00, 0x01, 0, 0, 0, 60, 0x00, 0x06]
            + [0, 1, 0, 1, 200, 0x73]
        #expect(Self.code(of: bytes) == .dnsTruncated)
    }

    @Test func limitsBoundMessageSizeRecordCountAndPointers() {
        let srv = DNSMessageCodecTests.srvResponse
        #expect(Self.code(of: srv, limits: DNSMessage.ParseLimits(maxMessageSize: 40)) == .dnsLimitExceeded)
        #expect(Self.code(of: srv, limits: DNSMessage.ParseLimits(maxRecords: 1)) == .dnsLimitExceeded)
        // The SRV target needs one pointer, the answer owner one: a limit of 0 pointers fails.
        #expect(Self.code(of: srv, limits: DNSMessage.ParseLimits(maxPointersPerName: 0)) == .dnsLimitExceeded)
        #expect(Self.code(of: srv) == nil)
    }

    @Test func errorsGiveTheByteOffset() {
        do {
            _ = try DNSMessage(parsing: Self.header(qd: 1) + [0xC0, 0x0C, 0x00, 0x01, 0x00, 0x01])
            Issue.record("expected a failure")
        } catch {
            #expect(error.detail.hasPrefix("at byte 12:"))
        }
    }

    @Test func mutatedResponsesNeverTrap() {
        // Deterministic mutations of a valid response: every outcome is a value or a thrown
        // SIPTransportError; reaching the end of the loop is the assertion.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        let base = DNSMessageCodecTests.srvResponse
        var parsed = 0
        var failed = 0
        for _ in 0..<5_000 {
            var bytes = base
            for _ in 0..<(1 + Int(next() % 4)) {
                bytes[Int(next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: next())
            }
            if next() % 4 == 0 { bytes.removeLast(Int(next() % UInt64(bytes.count))) }
            if (try? DNSMessage(parsing: bytes)) != nil { parsed += 1 } else { failed += 1 }
        }
        #expect(parsed + failed == 5_000)
        #expect(failed > 0)
    }
}
