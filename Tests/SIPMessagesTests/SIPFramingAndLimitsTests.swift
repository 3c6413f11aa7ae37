import SIPMessages
import Testing

private func request(extraHeaders: String = "", body: String = "", contentLength: String? = nil) -> String {
    let cl = contentLength.map { "Content-Length: \($0)\r\n" } ?? ""
    return "MESSAGE sip:a@h SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\r\nFrom: <sip:b@h>;tag=x\r\nTo: <sip:a@h>\r\nCall-ID: c@h\r\nCSeq: 1 MESSAGE\r\n\(extraHeaders)\(cl)\r\n\(body)"
}

@Suite("Framing, serialization, limits and errors")
struct SIPFramingAndLimitsTests {
    @Test func bodyShorterThanContentLengthIsAnError() {
        let e = parseError(Array(request(body: "abc", contentLength: "10").utf8))
        #expect(e?.code == .bodyTruncated)
    }

    @Test func bytesBeyondContentLengthAreDiscardedAsForUDP() throws {
        let m = try parse(request(body: "abcdef", contentLength: "3"))
        #expect(m.body == Array("abc".utf8))
    }

    @Test func missingContentLengthTakesTheRestOfTheDatagram() throws {
        let m = try parse(request(body: "abcdef"))
        #expect(m.body == Array("abcdef".utf8))
    }

    @Test func contentLengthMustBeDigitsAndSingle() {
        #expect(parseError(Array(request(contentLength: "-1").utf8))?.code == .invalidContentLength)
        #expect(parseError(Array(request(contentLength: "99999999999999999999").utf8))?.code == .invalidContentLength)
        #expect(parseError(Array(request(extraHeaders: "l: 0\r\n", contentLength: "0").utf8))?.code == .duplicateContentLength)
    }

    @Test func serializerWritesCRLFAndRecomputesContentLengthOnRequest() throws {
        var m = try parse(request(body: "abc", contentLength: "3"))
        m.body = Array("hello world".utf8)
        let text = String(decoding: m.serialized(), as: UTF8.self)
        #expect(text.hasPrefix("MESSAGE sip:a@h SIP/2.0\r\n"))
        #expect(text.contains("\r\nContent-Length: 11\r\n\r\nhello world"))
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
        let preserved = String(decoding: m.serialized(contentLength: .preserve), as: UTF8.self)
        #expect(preserved.contains("Content-Length: 3\r\n"))
    }

    @Test func serializerAddsContentLengthWhenMissing() throws {
        let m = try parse(request(body: "xyz"))
        let text = String(decoding: m.serialized(), as: UTF8.self)
        #expect(text.hasSuffix("Content-Length: 3\r\n\r\nxyz"))
    }

    @Test func parseSerializeParseIsStable() throws {
        let m1 = try parse(lyncSubscribe)
        let b1 = m1.serialized()
        let m2 = try SIPMessage(parsing: b1)
        #expect(m2.serialized() == b1)
        #expect(m2 == m1)
        #expect(b1 == Array(lyncSubscribe.utf8))
    }

    @Test func builtMessagesSerializeInCanonicalForm() throws {
        var headers = SIPHeaders()
        headers.append(.via, SIPVia(transport: "TLS", host: "gw.example.com", port: 5061, parameters: [SIPParameter(name: "branch", value: "z9hG4bKx")]).description)
        headers.append(.from, SIPAddress(displayName: "A \"B\"", uri: SIPURI(user: "a", host: "example.com"), parameters: [SIPParameter(name: "tag", value: "1")]).description)
        headers.append(.to, SIPAddress(uri: SIPURI(user: "b", host: "example.com")).description)
        headers.append(.callID, "k1@gw")
        headers.append(.cseq, SIPCSeq(7, .publish).description)
        let r = SIPRequest(method: .publish, uri: SIPURI(user: "b", host: "example.com"), headers: headers, body: [])
        let text = String(decoding: r.serialized(), as: UTF8.self)
        #expect(text == "PUBLISH sip:b@example.com SIP/2.0\r\nVia: SIP/2.0/TLS gw.example.com:5061;branch=z9hG4bKx\r\nFrom: \"A \\\"B\\\"\" <sip:a@example.com>;tag=1\r\nTo: <sip:b@example.com>\r\nCall-ID: k1@gw\r\nCSeq: 7 PUBLISH\r\nContent-Length: 0\r\n\r\n")
        let back = try SIPMessage(parsing: r.serialized())
        #expect(try back.headers.from?.displayName == "A \"B\"")
    }

    @Test func defaultsAreDocumentedValues() {
        let d = SIPParserLimits.default
        #expect(d.maxMessageSize == 65_536 && d.maxHeaderCount == 256 && d.maxLineLength == 8_192 && d.maxViaCount == 64)
    }

    @Test func exceedingEachLimitGivesItsOwnCode() {
        let big = Array(request(body: String(repeating: "x", count: 100)).utf8)
        #expect(throws: SIPParseError.self) { try SIPMessage(parsing: big, limits: SIPParserLimits(maxMessageSize: 50)) }
        #expect(parseError(big, SIPParserLimits(maxMessageSize: 50))?.code == .messageTooLarge)
        #expect(parseError(big, SIPParserLimits(maxHeaderCount: 3))?.code == .tooManyHeaders)
        #expect(parseError(big, SIPParserLimits(maxLineLength: 20))?.code == .lineTooLong)
        let vias = Array(request(extraHeaders: "Via: SIP/2.0/UDP a, SIP/2.0/UDP b\r\n").utf8)
        #expect(parseError(vias, SIPParserLimits(maxViaCount: 2))?.code == .tooManyVias)
        #expect(parseError(vias, SIPParserLimits(maxViaCount: 3)) == nil)
    }

    @Test func errorsSayWhatWasExpectedAndWhere() throws {
        let text = request(extraHeaders: "Contact: <sip:x@h\r\n")
        let e = try #require(parseError(Array(text.utf8)))
        #expect(e.code == .invalidAddress)
        #expect(e.line == 7)
        #expect(e.offset != nil)
        #expect(e.header == "Contact")
        #expect(e.description.contains("line 7"))
        #expect(e.description.contains("'>'"))
    }

    @Test func headerLineWithoutColonIsRejectedWithItsLine() {
        let e = parseError(Array(request(extraHeaders: "Foobar roobar\r\n").utf8))
        #expect(e?.code == .invalidHeaderLine)
        #expect(e?.line == 7)
    }

    @Test func missingEmptyLineIsIncompleteHeaders() {
        let text = "OPTIONS sip:a@h SIP/2.0\r\nVia: SIP/2.0/UDP h\r\n"
        #expect(parseError(Array(text.utf8))?.code == .headersIncomplete)
        #expect(parseError([])?.code == .emptyMessage)
        #expect(parseError(Array("\r\n\r\n".utf8))?.code == .emptyMessage)
    }

    @Test func statusLineRangesAreChecked() {
        let tail = "\r\nVia: SIP/2.0/UDP h\r\nFrom: <sip:a@h>;tag=1\r\nTo: <sip:a@h>\r\nCall-ID: c\r\nCSeq: 1 OPTIONS\r\n\r\n"
        #expect(parseError(Array(("SIP/2.0 099 Low" + tail).utf8))?.code == .invalidStatusCode)
        #expect(parseError(Array(("SIP/2.0 700 High" + tail).utf8))?.code == .invalidStatusCode)
        #expect(parseError(Array(("SIP/3.0 200 OK" + tail).utf8))?.code == .unsupportedVersion)
        #expect(parseError(Array(("SIP/2.0 699 Fine" + tail).utf8)) == nil)
    }
}

func parseError(_ bytes: [UInt8], _ limits: SIPParserLimits) -> SIPParseError? {
    do {
        _ = try SIPMessage(parsing: bytes, limits: limits)
        return nil
    } catch {
        return error
    }
}
