import SIPMessages
import Testing

private let notify = Array("""
    NOTIFY sip:alice@192.0.2.10:50926;transport=tls SIP/2.0\r
    Via: SIP/2.0/TLS 192.0.2.1:5061;branch=z9hG4bKn1\r
    From: <sip:bob@contoso.com>;tag=b1\r
    To: <sip:alice@contoso.com>;tag=a1\r
    Call-ID: c1@192.0.2.10\r
    CSeq: 7 NOTIFY\r
    Event: presence\r
    Subscription-State: active;expires=3600\r
    Content-Type: application/pidf+xml\r
    Content-Length: 12\r
    \r
    <presence/>\n
    """.utf8)

/// Compact `l`, a folded value and a body containing CRLF CRLF (which must not end the message).
private let message = Array("""
    MESSAGE sip:bob@contoso.com SIP/2.0\r
    v: SIP/2.0/TCP 192.0.2.10:50926;branch=z9hG4bKm2\r
    f: <sip:alice@contoso.com>;tag=a2\r
    t: <sip:bob@contoso.com>\r
    i: c2@192.0.2.10\r
    CSeq: 1 MESSAGE\r
    l:\r
     9\r
    \r
    hi\r\n\r\nyou
    """.utf8)

private func drain(_ framer: inout SIPStreamFramer) throws(SIPParseError) -> [SIPStreamFramer.Event] {
    var out: [SIPStreamFramer.Event] = []
    while let e = try framer.next() { out.append(e) }
    return out
}

private func events(_ chunks: [ArraySlice<UInt8>], limits: SIPParserLimits = .default) throws(SIPParseError) -> [SIPStreamFramer.Event] {
    var framer = SIPStreamFramer(limits: limits)
    var out: [SIPStreamFramer.Event] = []
    for c in chunks {
        try framer.append(c)
        out += try drain(&framer)
    }
    return out
}

private func error(_ body: () throws -> Void) -> SIPParseError? {
    do {
        try body()
        return nil
    } catch {
        return error as? SIPParseError
    }
}

@Suite("Stream framing (RFC 3261 §18.3, RFC 5626 §3.5.1)")
struct SIPStreamFramerTests {
    static let ping = Array("\r\n\r\n".utf8)
    /// Leading CRLF (a pong), a message, a ping, a message with a body, a ping.
    static let stream = Array("\r\n".utf8) + notify + ping + message + ping
    static let expected: [SIPStreamFramer.Event] = [.pong, .message(notify), .ping, .message(message), .ping]

    @Test func framesTheStreamReadInOneChunk() throws {
        #expect(try events([Self.stream[...]]) == Self.expected)
    }

    @Test func framesTheStreamSplitAtEveryByteBoundary() throws {
        for k in 0...Self.stream.count {
            let got = try events([Self.stream[..<k], Self.stream[k...]])
            #expect(got == Self.expected, "split at byte \(k)")
        }
    }

    @Test func framesTheStreamReadOneByteAtATime() throws {
        #expect(try events(Self.stream.indices.map { Self.stream[$0...$0] }) == Self.expected)
    }

    @Test func framedMessagesParseAndKeepTheirBody() throws {
        let framed = try events([Self.stream[...]]).compactMap { e -> [UInt8]? in
            if case .message(let m) = e { return m }
            return nil
        }
        #expect(framed.count == 2)
        let second = try SIPMessage(parsing: framed[1])
        #expect(second.body == Array("hi\r\n\r\nyou".utf8))
    }

    @Test func keepAlivesBetweenMessagesAreReportedInOrder() throws {
        let s = Self.ping + Self.ping + notify + Array("\r\n".utf8) + message + Self.ping
        #expect(try events([s[...]]) == [.ping, .ping, .message(notify), .pong, .message(message), .ping])
    }

    @Test func loneCRLFWaitsForTheNextByteUnlessAPongIsAwaited() throws {
        var framer = SIPStreamFramer()
        try framer.append(Array("\r\n".utf8))
        #expect(try framer.next() == nil)
        try framer.append(Array("\r\n".utf8))
        #expect(try framer.next() == .ping)

        var client = SIPStreamFramer()
        client.awaitingPong = true
        try client.append(Array("\r\n".utf8))
        #expect(try client.next() == .pong)
        #expect(client.awaitingPong == false)
        #expect(try client.next() == nil)
    }

    @Test func strayLineEndsBetweenMessagesAreSkipped() throws {
        let s = Array("\n\r".utf8) + notify
        #expect(try events([s[...]]) == [.message(notify)])
    }

    @Test func missingContentLengthIsAnErrorAndTheFramerStaysFailed() throws {
        let bare = Array("OPTIONS sip:a@h SIP/2.0\r\nVia: SIP/2.0/TCP h;branch=z9hG4bK1\r\nCall-ID: x\r\n\r\n".utf8)
        var framer = SIPStreamFramer()
        try framer.append(bare)
        let e = error { _ = try framer.next() }
        #expect(e?.code == .missingContentLength)
        #expect(error { _ = try framer.next() }?.code == .missingContentLength)
        #expect(error { try framer.append(notify) }?.code == .missingContentLength)
    }

    @Test func malformedOrDuplicateContentLengthIsAnError() throws {
        let head = "OPTIONS sip:a@h SIP/2.0\r\nCall-ID: x\r\n"
        for (extra, code) in [
            ("Content-Length: 1 2\r\n", SIPParseError.Code.invalidContentLength),
            ("Content-Length: -1\r\n", .invalidContentLength),
            ("Content-Length:\r\n", .invalidContentLength),
            ("Content-Length: 99999999999999999999\r\n", .invalidContentLength),
            ("Content-Length: 0\r\nl: 0\r\n", .duplicateContentLength),
        ] {
            let bytes = Array((head + extra + "\r\n").utf8)
            #expect(error { _ = try events([bytes[...]]) }?.code == code, "\(extra)")
        }
    }

    /// What the transport needs to answer an oversize message before closing (RFC 3261
    /// §21.4.11, §21.5.14): its header section, or the first maxMessageSize bytes of one that
    /// does not end; nil for other failures.
    @Test func oversizeMessageKeepsItsHeaderSectionForTheAnswer() throws {
        let limits = SIPParserLimits(maxMessageSize: 300)
        let head = Array("MESSAGE sip:a@h SIP/2.0\r\nCall-ID: c1\r\nContent-Length: 5000\r\n\r\n".utf8)
        var framer = SIPStreamFramer(limits: limits)
        #expect(error { try framer.append(head + Array(repeating: UInt8(ascii: "b"), count: 100)); _ = try framer.next() }?.code == .messageTooLarge)
        #expect(framer.refusedHeaderSection == head)
        var endless = SIPStreamFramer(limits: limits)
        let start = Array("MESSAGE sip:a@h SIP/2.0\r\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 400)
        #expect(error { try endless.append(start); _ = try endless.next() }?.code == .messageTooLarge)
        #expect(endless.refusedHeaderSection == Array(start[..<300]))
        var broken = SIPStreamFramer(limits: limits)
        #expect(error { try broken.append(Array("MESSAGE sip:a@h SIP/2.0\r\nContent-Length: x\r\n\r\n".utf8)); _ = try broken.next() } != nil)
        #expect(broken.refusedHeaderSection == nil)
    }

    @Test func oversizeMessagesAreErrorsBeforeTheirBytesArrive() throws {
        let limits = SIPParserLimits(maxMessageSize: 300)
        // Content-Length announces more than the limit: rejected once the header section is in.
        let big = Array("MESSAGE sip:a@h SIP/2.0\r\nContent-Length: 5000\r\n\r\n".utf8)
        #expect(error { _ = try events([big[...]], limits: limits) }?.code == .messageTooLarge)
        // A header section that never ends.
        let endless = Array("MESSAGE sip:a@h SIP/2.0\r\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 400)
        #expect(error { _ = try events([endless[...]], limits: limits) }?.code == .messageTooLarge)
        // More unconsumed bytes than the buffer allows.
        var framer = SIPStreamFramer(limits: limits, maxBufferedBytes: 100)
        #expect(error { try framer.append(Array(repeating: UInt8(ascii: "x"), count: 101)) }?.code == .streamBufferFull)
    }

    @Test func garbageStreamIsAnErrorWithoutTrapping() throws {
        var seed: UInt64 = 0x2545F4914F6CDD1D
        var framer = SIPStreamFramer()
        var failed: SIPParseError? = nil
        var fed = 0
        while failed == nil, fed < 1_000_000 {
            var chunk: [UInt8] = []
            for _ in 0..<1000 {
                seed ^= seed << 13
                seed ^= seed >> 7
                seed ^= seed << 17
                chunk.append(UInt8(truncatingIfNeeded: seed))
            }
            fed += chunk.count
            failed = error {
                try framer.append(chunk)
                _ = try drain(&framer)
            }
        }
        #expect(failed != nil)
    }
}
