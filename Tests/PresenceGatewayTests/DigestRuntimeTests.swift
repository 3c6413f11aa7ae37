import Foundation
import NIOCore
import PresenceGateway
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// The runtime as a Digest client (RFC 3261 §22.2) on the loopback network with an injected
/// clock: the demo's linked identity alice is PUBLISHed to a fake OMA presence server that
/// challenges, then answers, then challenges again.
@Suite struct DigestRuntimeTests {
    static let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(
        of: "- { name: kamailio, address: 127.0.0.1, port: 5070, side: oma, network: federated, rate-limit: 5000 }",
        with: """
            - { name: kamailio, address: 127.0.0.1, port: 5070, side: oma, network: federated, trusted: true,
                  credentials: { realm: oma.example, username: gw, password: "pw \\\\ \\"q\\"" } }
            """)
    static let credentials = SIPDigestCredentials(realm: "oma.example", username: "gw", password: #"pw \ "q""#)

    static func challenge(_ request: SIPRequest, nonce: String, status: Int = 407) -> SIPResponse {
        let name: SIPHeaderName = status == 401 ? "WWW-Authenticate" : "Proxy-Authenticate"
        return SIPResponse(
            replyingTo: request, statusCode: status, toTag: "ps",
            headers: [(name, #"Digest realm="oma.example", nonce="\#(nonce)", qop="auth", algorithm=MD5, opaque="o1""#)])
    }

    /// The parameter `name` of a Digest credentials value.
    static func parameter(_ name: String, in value: String) -> String? {
        for part in value.dropFirst("Digest ".count).split(separator: ",") {
            let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0] == name else { continue }
            return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return nil
    }

    /// The credentials `request` carries answer `nonce` for what it is (method, Request-URI) with
    /// nc `count`: the response is recomputed from the RFC 7616 §3.4.1 formula with its cnonce.
    static func expectAnswers(_ request: SIPRequest, nonce: String, count: String) throws {
        let value = try #require(request.headers["Proxy-Authorization"])
        #expect(request.headers["Authorization"] == nil)
        #expect(parameter("nonce", in: value) == nonce)
        #expect(parameter("nc", in: value) == count)
        #expect(parameter("uri", in: value) == request.uri.description)
        #expect(parameter("opaque", in: value) == "o1")
        let cnonce = try #require(parameter("cnonce", in: value))
        let challenge = SIPDigestChallenge(realm: "oma.example", nonce: nonce, opaque: "o1", algorithm: .md5, qopAuth: true)
        let expected = credentials.response(
            to: challenge, method: "PUBLISH", uri: request.uri.description, nonceCount: UInt32(count, radix: 16) ?? 0,
            cnonce: cnonce)
        #expect(parameter("response", in: value) == expected)
        #expect(!value.contains("pw "))
    }

    /// The runtime with alice's enterprise state answered: its first PUBLISH toward Kamailio
    /// (flow 4, publish-to-oma).
    static func firstPublish() throws -> (GatewayRuntimeTests.Setup, SIPRequest) {
        let s = try GatewayRuntimeTests.Setup(yaml: Self.yaml)
        s.run()
        let subscribe = try #require(s.edge.requests.first { GatewayRuntimeTests.names($0, "sip:alice@contoso.com") })
        s.edge.send(
            .response(GatewayRuntimeTests.categoriesOK(subscribe, "sip:alice@contoso.com", availability: 3500, tag: "e1")),
            to: GatewayRuntimeTests.Setup.enterpriseSide)
        s.run()
        return (s, try #require(s.kamailio.requests.first { $0.method == .publish }))
    }

    @Test func aChallengedPublishIsSentOnceMoreAndItsRefreshCarriesCredentials() throws {
        let (s, first) = try Self.firstPublish()
        #expect(first.headers["Proxy-Authorization"] == nil)
        // RFC 3325 §9.1: toward the trusted peer, the publisher's identity.
        #expect(first.headers["P-Asserted-Identity"] == "<sip:alice@oma.example>")
        let cseq = try #require(try first.headers.cseq?.sequence)

        s.kamailio.send(.response(Self.challenge(first, nonce: "n1")), to: GatewayRuntimeTests.Setup.omaSide)
        s.run()
        // Each PUBLISH once (a UDP transaction's retransmissions left out: the same CSeq).
        let publishes = {
            s.kamailio.requests.filter { $0.method == .publish }.reduce(into: [SIPRequest]()) { seen, request in
                if !seen.contains(where: { $0.headers[.cseq] == request.headers[.cseq] }) { seen.append(request) }
            }
        }
        #expect(publishes().count == 2)
        let second = try #require(publishes().last)
        #expect(try second.headers.cseq?.sequence == cseq + 1)
        #expect(second.headers.callID == first.headers.callID && second.body == first.body)
        try Self.expectAnswers(second, nonce: "n1", count: "00000001")
        #expect(second.headers.fields.filter { $0.name == "P-Asserted-Identity" }.count == 1)

        // The 200 to the resent PUBLISH is taken (matched by its CSeq): a refresh follows before
        // the 60 s run out, with credentials at once (nc 2) and the next CSeq.
        s.kamailio.send(
            .response(SIPResponse(replyingTo: second, statusCode: 200, toTag: "ps", headers: [(.sipETag, "e1"), (.expires, "60")])),
            to: GatewayRuntimeTests.Setup.omaSide)
        // The runtime's deadlines are the process clock's (`NIODeadline.now()`); the embedded
        // loop is moved to one past the refresh.
        s.loop.advanceTime(to: .now() + .seconds(60))
        #expect(publishes().count == 3)
        let refresh = try #require(publishes().last)
        #expect(try refresh.headers.cseq?.sequence == cseq + 2)
        #expect(refresh.headers[.sipIfMatch] == "e1")
        try Self.expectAnswers(refresh, nonce: "n1", count: "00000002")

        // The nonce went stale: one new challenge is answered with the new nonce (nc 1 again);
        // a challenge to that is not answered again.
        s.kamailio.send(.response(Self.challenge(refresh, nonce: "n2")), to: GatewayRuntimeTests.Setup.omaSide)
        s.run()
        #expect(publishes().count == 4)
        let again = try #require(publishes().last)
        #expect(try again.headers.cseq?.sequence == cseq + 3)
        try Self.expectAnswers(again, nonce: "n2", count: "00000001")
        s.kamailio.send(.response(Self.challenge(again, nonce: "n3")), to: GatewayRuntimeTests.Setup.omaSide)
        s.run(5)
        #expect(publishes().count == 4)
    }

    /// A challenge that is not for the configured realm, or hostile, is not followed.
    @Test(arguments: [
        #"Digest realm="elsewhere.example", nonce="n", qop="auth""#,
        #"Digest realm="oma.example", nonce="n", algorithm=SHA-512-256"#,
        "Digest realm=\"oma.example\", nonce=\"\(String(repeating: "x", count: 4_000))\"",
        #"Digest realm="oma.example", nonce="unterminated"#,
    ])
    func aChallengeThatIsNotForTheseCredentialsIsNotAnswered(value: String) throws {
        let (s, first) = try Self.firstPublish()
        s.kamailio.send(
            .response(SIPResponse(replyingTo: first, statusCode: 407, toTag: "ps", headers: [("Proxy-Authenticate", value)])),
            to: GatewayRuntimeTests.Setup.omaSide)
        s.run(5)
        #expect(s.kamailio.requests.filter { $0.method == .publish }.count == 1)
    }

    /// The gateway's own `presence.winfo` SUBSCRIBE (mirror-watchers, RFC 3857) challenged 401:
    /// sent again with CSeq + 1 and Authorization; its refresh, in the dialog the 200 made,
    /// numbers on (RFC 3261 §12.2.1.1) and carries credentials at once (nc 2).
    @Test func theGatewaysOwnWatcherInfoSubscribeIsAnsweredAndRefreshedInOrder() throws {
        let yaml = Self.yaml.replacingOccurrences(of: "publish-to-oma: true }", with: "publish-to-oma: true, mirror-watchers: true }")
        let s = try GatewayRuntimeTests.Setup(yaml: yaml)
        s.run()
        let winfo = {
            s.kamailio.requests.filter { $0.method == .subscribe && $0.headers[.event] == "presence.winfo" }
                .reduce(into: [SIPRequest]()) { seen, request in
                    if !seen.contains(where: { $0.headers[.cseq] == request.headers[.cseq] }) { seen.append(request) }
                }
        }
        let first = try #require(winfo().first)
        #expect(first.headers["Authorization"] == nil)
        let cseq = try #require(try first.headers.cseq?.sequence)
        s.kamailio.send(.response(Self.challenge(first, nonce: "w1", status: 401)), to: GatewayRuntimeTests.Setup.omaSide)
        s.run()
        let second = try #require(winfo().last)
        #expect(winfo().count == 2)
        #expect(try second.headers.cseq?.sequence == cseq + 1)
        let authorization = try #require(second.headers["Authorization"])
        #expect(Self.parameter("nonce", in: authorization) == "w1" && Self.parameter("nc", in: authorization) == "00000001")
        var ok = SIPResponse(replyingTo: second, statusCode: 200, toTag: "ps", headers: [(.expires, "60")])
        ok.headers.append(.contact, "<sip:presence@127.0.0.1:5070>")
        s.kamailio.send(.response(ok), to: GatewayRuntimeTests.Setup.omaSide)
        s.loop.advanceTime(to: .now() + .seconds(60))
        let refresh = try #require(winfo().last)
        #expect(winfo().count == 3)
        #expect(try refresh.headers.to?.tag == "ps")
        #expect(try refresh.headers.cseq?.sequence == cseq + 2)
        #expect(refresh.headers["Authorization"].flatMap { Self.parameter("nc", in: $0) } == "00000002")
    }

    /// Without credentials or trusted OMA peers (the demo configuration) nothing is added.
    @Test func withoutCredentialsNothingIsAdded() throws {
        let s = try GatewayRuntimeTests.Setup()
        s.run()
        let subscribe = try #require(s.edge.requests.first { GatewayRuntimeTests.names($0, "sip:alice@contoso.com") })
        s.edge.send(
            .response(GatewayRuntimeTests.categoriesOK(subscribe, "sip:alice@contoso.com", availability: 3500, tag: "e1")),
            to: GatewayRuntimeTests.Setup.enterpriseSide)
        s.run()
        let first = try #require(s.kamailio.requests.first { $0.method == .publish })
        #expect(first.headers["P-Asserted-Identity"] == nil)
        s.kamailio.send(.response(Self.challenge(first, nonce: "n1")), to: GatewayRuntimeTests.Setup.omaSide)
        s.run(5)
        #expect(s.kamailio.requests.filter { $0.method == .publish }.count == 1)
    }
}
