import SIPMessages
import SIPStack
import Testing

/// The UAS core checks of RFC 3261 §8.2, in the RFC's order.
@Suite struct UASCoreTests {
    static let gateway = SIPUASCoreConfiguration(
        allowedMethods: [.subscribe, .notify, .message, .options],
        supportedExtensions: ["eventlist"],
        bodyTypes: [.message: ["text/plain"]],
        defaultBodyTypes: ["application/pidf+xml", "multipart/related"])

    private func request(_ method: String = "MESSAGE", uri: String = "sip:gw@example.com", toTag: String? = nil,
                         extra: [String] = [], body: String = "") -> SIPRequest {
        let to = toTag.map { "<sip:gw@example.com>;tag=\($0)" } ?? "<sip:gw@example.com>"
        let text = ([
            "\(method) \(uri) SIP/2.0",
            "Via: SIP/2.0/UDP 192.0.2.4;branch=z9hG4bKcore",
            "Max-Forwards: 70",
            "From: <sip:alice@example.org>;tag=a",
            "To: \(to)",
            "Call-ID: core-1",
            "CSeq: 1 \(method)",
        ] + extra + ["Content-Length: \(body.utf8.count)", "", body]).joined(separator: "\r\n")
        do {
            return try SIPMessage(parsing: Array(text.utf8)).request ?? SIPRequest(method: "X", uri: SIPURI(host: "x"))
        } catch {
            Issue.record("\(error)")
            return SIPRequest(method: "X", uri: SIPURI(host: "x"))
        }
    }

    private func verdict(_ r: SIPRequest, _ c: SIPUASCoreConfiguration = UASCoreTests.gateway,
                         merged: Bool = false) -> SIPResponse? {
        SIPUASCore.check(r, configuration: c, toTag: "uas") { _ in merged }.response
    }

    @Test func aRequestForAnAllowedMethodWithNothingUnusualIsAccepted() {
        #expect(SIPUASCore.check(request(), configuration: Self.gateway) == .accept)
    }

    @Test func aKnownButUnsupportedMethodGets405WithAllow() throws {
        let r = try #require(verdict(request("REGISTER")))
        #expect(r.statusCode == 405)
        #expect(r.headers[.allow] == "SUBSCRIBE, NOTIFY, MESSAGE, OPTIONS")
        // §8.2.6.2: the UAS adds a To tag.
        #expect(try r.headers.to?.tag == "uas")
    }

    @Test func anUnrecognizedMethodGets501() throws {
        let r = try #require(verdict(request("FROBNICATE")))
        #expect(r.statusCode == 501)
    }

    @Test func methodInspectionComesBeforeTheURIScheme() throws {
        // §8.2: the checks run in order; 405 wins over 416.
        #expect(verdict(request("REGISTER", uri: "mailto:x@example.com"))?.statusCode == 405)
    }

    @Test func anUnsupportedRequestURISchemeGets416() {
        #expect(verdict(request(uri: "mailto:gw@example.com"))?.statusCode == 416)
        #expect(verdict(request(uri: "tel:+15551234567")) == nil)
        #expect(verdict(request(uri: "sips:gw@example.com")) == nil)
    }

    @Test func aMergedRequestGets482OnlyWithoutAToTag() {
        #expect(verdict(request(), merged: true)?.statusCode == 482)
        #expect(verdict(request(toTag: "dialog"), merged: true) == nil)
    }

    @Test func requireWithUnknownTagsGets420ListingOnlyThoseInUnsupported() throws {
        let r = try #require(verdict(request(extra: ["Require: eventlist, foo", "Require: Bar"])))
        #expect(r.statusCode == 420)
        #expect(r.headers[.unsupported] == "foo, Bar")
        #expect(verdict(request(extra: ["Require: eventlist"])) == nil)
    }

    @Test func proxyRequireIsNotTheUASsConcern() {
        #expect(verdict(request(extra: ["Proxy-Require: foo"])) == nil)
    }

    @Test func anUnknownBodyTypeGets415WithAcceptAcceptEncodingAndAcceptLanguage() throws {
        let r = try #require(verdict(request(extra: ["Content-Type: application/sdp"], body: "v=0\r\n")))
        #expect(r.statusCode == 415)
        #expect(r.headers[.accept] == "text/plain")
        #expect(r.headers["Accept-Encoding"] == "identity")
        #expect(r.headers["Accept-Language"] == "en")
        #expect(verdict(request(extra: ["Content-Type: text/plain"], body: "hi")) == nil)
        #expect(verdict(request("NOTIFY", toTag: "d", extra: ["Event: presence", "Subscription-State: active",
                                                             "Content-Type: application/pidf+xml"], body: "<x/>")) == nil)
    }

    @Test func anUnknownContentEncodingGets415() {
        #expect(verdict(request(extra: ["Content-Type: text/plain", "Content-Encoding: gzip"], body: "x"))?.statusCode == 415)
    }

    @Test func requireIsCheckedBeforeTheBody() {
        let r = verdict(request(extra: ["Require: foo", "Content-Type: application/sdp"], body: "v=0\r\n"))
        #expect(r?.statusCode == 420)
    }

    @Test func acceptExcludingEveryResponseTypeGets406WithAWarning399() throws {
        var c = Self.gateway
        c.responseBodyTypes = [.subscribe: ["application/pidf+xml"]]
        let r = try #require(verdict(request("SUBSCRIBE", extra: ["Event: presence", "Accept: text/plain"]), c))
        #expect(r.statusCode == 406)
        #expect(r.headers[.warning]?.hasPrefix("399 ") == true)
        #expect(verdict(request("SUBSCRIBE", extra: ["Event: presence", "Accept: application/*"]), c) == nil)
        #expect(verdict(request("SUBSCRIBE", extra: ["Event: presence"]), c) == nil)
    }

    @Test func theOptionsAnswerListsWhatTheUASSupports() throws {
        let r = SIPUASCore.optionsResponse(to: request("OPTIONS"), configuration: Self.gateway, toTag: "o")
        // RFC 3261 §11.2.
        #expect(r.statusCode == 200)
        #expect(r.headers[.allow] == "SUBSCRIBE, NOTIFY, MESSAGE, OPTIONS")
        #expect(r.headers[.accept] == "application/pidf+xml, multipart/related")
        #expect(r.headers[.supported] == "eventlist")
        #expect(try r.headers.to?.tag == "o")
    }
}
