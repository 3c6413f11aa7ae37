import SIPMessages
import SIPTransport
import Testing

/// RFC 3261 §16.3, §18.2, §21.4.1: a 400 for a malformed request when a response can be formed.
@Suite struct SIPBadRequestTests {
    private func bytes(_ lines: [String]) -> [UInt8] { Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8) }

    private let brokenContact = [
        "OPTIONS sip:gateway.test SIP/2.0",
        "Via: SIP/2.0/UDP 192.0.2.1:5070;branch=z9hG4bKbad1",
        "Max-Forwards: 70",
        "From: <sip:alice@partner.example>;tag=a1",
        "To: <sip:gateway.test>",
        "Call-ID: bad-contact-1@192.0.2.1",
        "CSeq: 7 OPTIONS",
        "Contact: <sip:alice@192.0.2.1",
        "Content-Length: 0",
    ]

    private func parseError(_ b: [UInt8]) throws -> SIPParseError {
        do {
            _ = try SIPMessage(parsing: b)
        } catch {
            return error
        }
        Issue.record("expected a parse error")
        throw SIPParseError(.emptyMessage, expected: "a parse error")
    }

    /// A request past the parser's limits is not malformed: 513 Message Too Large for its header
    /// section (RFC 3261 §21.5.14), 413 Request Entity Too Large for the body its Content-Length
    /// announces (§21.4.11); the same fields copied as for a 400.
    @Test func requestPastALimitGets513OrItsBody413() throws {
        var vias = brokenContact
        vias[7] = "Contact: <sip:alice@192.0.2.1>"
        vias.insert(contentsOf: (1...70).map { "Via: SIP/2.0/UDP 10.0.0.\($0):5060;branch=z9hG4bK\($0)" }, at: 2)
        let b = bytes(vias)
        let tooManyVias = try parseError(b)
        #expect(tooManyVias.code == .tooManyVias)
        let response = try #require(SIPResponse.badRequest(salvaging: b, error: tooManyVias, toTag: "t1"))
        #expect(response.statusCode == 513)
        #expect(response.reasonPhrase == "Message Too Large (too-many-vias)")
        // The top Via routes the answer; at most maxViaCount (64) are copied, so it stays small.
        #expect(response.headers.values(named: .via).count == 64)
        #expect(response.headers.values(named: .via).first == "SIP/2.0/UDP 192.0.2.1:5070;branch=z9hG4bKbad1")
        #expect(response.headers.callID == "bad-contact-1@192.0.2.1")
        // 1,000 Vias before From, To, Call-ID and CSeq (past the header count too): still answered.
        var many = vias
        many.insert(contentsOf: (71...1000).map { "Via: SIP/2.0/UDP 10.0.\($0 / 250).\($0 % 250):5060;branch=z9hG4bK\($0)" }, at: 2)
        let thousand = bytes(many)
        let crowded = try #require(SIPResponse.badRequest(salvaging: thousand, error: try parseError(thousand), toTag: "t2"))
        #expect(crowded.statusCode == 513)
        #expect(try crowded.headers.cseq == SIPCSeq(7, .options))
        #expect(crowded.headers.values(named: .via).count == 64)
        let long = SIPParseError(.lineTooLong, expected: "a shorter line", offset: 0)
        #expect(SIPResponse.refusalStatus(for: long) == 513)
        let body = SIPParseError(.messageTooLarge, expected: "less", offset: 0, header: "Content-Length")
        #expect(SIPResponse.refusalStatus(for: body) == 413)
        #expect(SIPResponse.refusalStatus(for: SIPParseError(.messageTooLarge, expected: "less", offset: 0)) == 513)
        #expect(SIPResponse.refusalStatus(for: try parseError(bytes(brokenContact))) == 400)
    }

    @Test func malformedRequestGetsA400CopyingViaFromToCallIDAndCSeq() throws {
        let b = bytes(brokenContact)
        let error = try parseError(b)
        let response = try #require(SIPResponse.badRequest(salvaging: b, error: error, toTag: "t1"))
        #expect(response.statusCode == 400)
        #expect(response.reasonPhrase.hasPrefix("Bad Request"))
        #expect(response.reasonPhrase.contains("Contact"))
        #expect(response.headers[.via] == "SIP/2.0/UDP 192.0.2.1:5070;branch=z9hG4bKbad1")
        #expect(response.headers.callID == "bad-contact-1@192.0.2.1")
        #expect(response.headers[.cseq] == "7 OPTIONS")
        #expect(try response.headers.to?.tag == "t1")
        #expect(try response.headers.from?.tag == "a1")
        // The 400 itself is well formed.
        let reparsed = try SIPMessage(parsing: SIPMessage.response(response).serialized())
        #expect(reparsed.response?.statusCode == 400)
    }

    @Test func compactHeaderNamesAndAnExistingToTagAreKept() throws {
        let b = bytes([
            "NOTIFY sip:gateway.test SIP/2.0",
            "v: SIP/2.0/TCP 192.0.2.1;branch=z9hG4bKc1",
            "f: <sip:alice@partner.example>;tag=a1",
            "t: <sip:bob@gateway.test>;tag=b2",
            "i: compact-1",
            "CSeq: 9 NOTIFY",
            "Contact: <<>>",
            "l: 0",
        ])
        let response = try #require(SIPResponse.badRequest(salvaging: b, error: try parseError(b), toTag: "new"))
        #expect(try response.headers.to?.tag == "b2")
        #expect(response.headers.callID == "compact-1")
        #expect(try response.headers.via.first?.transport == "TCP")
    }

    @Test func malformedResponseIsNeverAnswered() throws {
        let b = bytes(["SIP/2.0 200 OK", "Via: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bK1", "From: <sip:a@b>;tag=1",
                       "To: <sip:c@d>", "CSeq: 1 OPTIONS", "Content-Length: 0"])
        let error = try parseError(b)
        #expect(SIPResponse.badRequest(salvaging: b, error: error, toTag: "t") == nil)
    }

    @Test func requestWithoutCallIDOrWithAnUnparseableViaIsDropped() throws {
        let noCallID = bytes(brokenContact.filter { !$0.hasPrefix("Call-ID") })
        #expect(SIPResponse.badRequest(salvaging: noCallID, error: try parseError(noCallID), toTag: "t") == nil)
        let badVia = bytes(brokenContact.map { $0.hasPrefix("Via") ? "Via: SIP/2.0/UDP" : $0 })
        #expect(SIPResponse.badRequest(salvaging: badVia, error: try parseError(badVia), toTag: "t") == nil)
    }
}
