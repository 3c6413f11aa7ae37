import NIOCore
import SIPMessages
import SIPStack
import Testing

/// SIP Digest as a client (RFC 3261 §22, RFC 7616, RFC 8760), checked against the RFCs'
/// published worked examples and against hostile challenges.
@Suite struct SIPDigestTests {
    /// RFC 7616 §3.9.1: the server's challenge, one line per algorithm.
    static func rfc7616Challenge(_ algorithm: String) -> String {
        """
        Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=\(algorithm), \
        nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", \
        opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"
        """
    }

    static let mufasa = SIPDigestCredentials(
        realm: "http-auth@example.org", username: "Mufasa", password: "Circle of Life")
    static let rfc7616Cnonce = "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"

    /// RFC 7616 §3.9.1: GET /dir/index.html, nc=00000001, the published responses for MD5 and
    /// SHA-256.
    @Test(arguments: [
        ("MD5", "8ca523f5e9506fed4657c9700eebdbec"),
        ("SHA-256", "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
    ])
    func responseMatchesRFC7616WorkedExample(algorithm: String, expected: String) throws {
        let challenge = try SIPDigestChallenge(Self.rfc7616Challenge(algorithm))
        #expect(challenge.qopAuth)
        #expect(challenge.realm == "http-auth@example.org")
        #expect(challenge.opaque == "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS")
        let response = Self.mufasa.response(
            to: challenge, method: "GET", uri: "/dir/index.html", nonceCount: 1, cnonce: Self.rfc7616Cnonce)
        #expect(response == expected)
        let header = Self.mufasa.authorization(
            answering: challenge, method: "GET", uri: "/dir/index.html", nonceCount: 1, cnonce: Self.rfc7616Cnonce)
        // RFC 7616 §3.9.1's Authorization, parameter by parameter.
        for part in [
            "username=\"Mufasa\"", "realm=\"http-auth@example.org\"", "uri=\"/dir/index.html\"",
            "algorithm=\(algorithm)", "nc=00000001", "cnonce=\"\(Self.rfc7616Cnonce)\"", "qop=auth",
            "response=\"\(expected)\"", "opaque=\"FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS\"",
        ] {
            #expect(header.contains(part), "\(part) in \(header)")
        }
        #expect(header.hasPrefix("Digest "))
    }

    /// RFC 2617 §3.5's example (MD5, qop=auth; the realm and password differ from RFC 7616's).
    @Test func responseMatchesRFC2617Example() throws {
        let challenge = try SIPDigestChallenge(
            #"Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41""#
        )
        let credentials = SIPDigestCredentials(realm: "testrealm@host.com", username: "Mufasa", password: "Circle Of Life")
        #expect(
            credentials.response(to: challenge, method: "GET", uri: "/dir/index.html", nonceCount: 1, cnonce: "0a4f113b")
                == "6629fae49393a05397450978507c4ef1")
    }

    /// Without qop the RFC 2069 form (RFC 7616 §3.4.1 and RFC 3261 §22.4 keep it): no nc, no
    /// cnonce; the response is H(H(A1):nonce:H(A2)), computed here from RFC 1321 MD5 values of
    /// the parts as RFC 2617 §3.5 gives H(A1) for the same user.
    @Test func withoutQopTheResponseHasNoCnonce() throws {
        let challenge = try SIPDigestChallenge(#"Digest realm="testrealm@host.com", nonce="abc""#)
        #expect(!challenge.qopAuth)
        #expect(challenge.algorithm == .md5)
        let credentials = SIPDigestCredentials(realm: "testrealm@host.com", username: "Mufasa", password: "Circle Of Life")
        let header = credentials.authorization(
            answering: challenge, method: "SUBSCRIBE", uri: "sip:bob@oma.example", nonceCount: 1, cnonce: "x")
        #expect(!header.contains("nc=") && !header.contains("cnonce=") && !header.contains("qop="))
        // Differs from the qop=auth response for the same inputs.
        var withQop = challenge
        withQop.qopAuth = true
        #expect(
            credentials.response(to: challenge, method: "SUBSCRIBE", uri: "sip:bob@oma.example", nonceCount: 1, cnonce: "x")
                != credentials.response(
                    to: withQop, method: "SUBSCRIBE", uri: "sip:bob@oma.example", nonceCount: 1, cnonce: "x"))
    }

    /// A hostile or unusable challenge is refused, not followed.
    @Test(arguments: [
        ("Digest realm=\"r\", nonce=\"\(String(repeating: "n", count: 5_000))\"", "over 2048 bytes"),
        ("Digest realm=\"r\", nonce=\"\(String(repeating: "n", count: 600))\"", "too long"),
        ("Digest realm=\"r\", nonce=\"n\", algorithm=SHA-512-256", "algorithm"),
        ("Digest realm=\"r\", nonce=\"n\", algorithm=MD5-sess", "algorithm"),
        ("Digest realm=\"r\", nonce=\"n\", qop=\"auth-int\"", "qop"),
        ("Digest realm=\"r\", nonce=\"n", "malformed"),
        ("Digest realm=\"r\" nonce=\"n\"", "comma"),
        ("Digest realm=\"r\", realm=\"s\", nonce=\"n\"", "twice"),
        ("Digest realm=\"r\"", "required"),
        ("Basic realm=\"r\"", "not a Digest"),
        ("Digest realm=\"r\", nonce=\"a\u{01}b\"", "malformed"),
        ("Digest " + (0..<20).map { "p\($0)=x" }.joined(separator: ", "), "parameters"),
    ])
    func hostileChallengeIsRefused(text: String, why: String) {
        #expect(throws: SIPDigestChallenge.Refusal.self) { try SIPDigestChallenge(text) }
        do {
            _ = try SIPDigestChallenge(text)
        } catch {
            #expect(error.description.contains(why), "\(error)")
        }
    }

    /// Arbitrary bytes from the network (a seeded generator, so a failure repeats): each value is
    /// either refused or read within the limits, never a trap; values built from the grammar's
    /// own pieces are mixed in so that the parser's deeper paths are reached.
    @Test func arbitraryChallengesAreRefusedOrReadWithinLimits() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return state
        }
        let pieces = ["Digest ", "realm=", "nonce=", "qop=", "algorithm=", "\"", "\\", ",", " ", "=", "auth", "SHA-256", "MD5", "\u{0}", "\r\n"]
        let limits = SIPDigestChallenge.Limits()
        var read = 0
        func noise(_ count: Int) -> String {
            var text = ""
            for _ in 0..<count {
                if next() % 2 == 0 {
                    text += pieces[Int(next() % UInt64(pieces.count))]
                } else {
                    text.unicodeScalars.append(Unicode.Scalar(UInt8(next() % 128)))
                }
            }
            return text
        }
        func value() -> String {
            // Mostly a plain value, sometimes noise, sometimes over the value limit.
            switch next() % 4 {
            case 0: return noise(Int(next() % 8))
            case 1: return String(repeating: "v", count: Int(next() % 700))
            default: return "v\(next() % 1000)"
            }
        }
        for _ in 0..<20_000 {
            var text: String
            if next() % 2 == 0 {
                text = noise(Int(next() % 40))
            } else {
                // Shaped as the grammar has it, with noise before, between or after.
                text = "Digest realm=\"\(value())\", nonce=\"\(value())\""
                if next() % 3 == 0 { text += ", " + noise(Int(next() % 6)) }
                if next() % 3 == 0 { text = noise(Int(next() % 3)) + text }
            }
            if next() % 50 == 0 { text += String(repeating: "n", count: Int(next() % 3_000)) }
            guard let challenge = try? SIPDigestChallenge(text, limits: limits) else { continue }
            read += 1
            #expect(text.utf8.count <= limits.maxLength)
            #expect(challenge.nonce.utf8.count <= limits.maxValueLength && !challenge.nonce.isEmpty)
            #expect(challenge.realm.utf8.count <= limits.maxValueLength)
        }
        // Some of them read (a realm and a nonce came together): the check above ran.
        #expect(read > 0)
    }

    /// RFC 8760 §2.4: of several challenges the topmost one supported is used; one for another
    /// realm never is.
    @Test func theFirstUsableChallengeOfTheConfiguredRealmIsChosen() throws {
        let values = [
            #"Digest realm="oma.example", nonce="a", algorithm=SHA-512-256, qop="auth""#,
            #"Digest realm="elsewhere", nonce="b", algorithm=SHA-256, qop="auth""#,
            #"Digest realm="oma.example", nonce="c", algorithm=SHA-256, qop="auth""#,
            #"Digest realm="oma.example", nonce="d", qop="auth""#,
        ]
        let chosen = try SIPDigestChallenge.first(in: values, realm: "oma.example").get()
        #expect(chosen.nonce == "c" && chosen.algorithm == .sha256)
        #expect(throws: SIPDigestChallenge.Refusal.self) {
            try SIPDigestChallenge.first(in: [values[1]], realm: "oma.example").get()
        }
    }

    static func subscribe(cseq: UInt32) throws -> SIPRequest {
        var headers = SIPHeaders()
        headers.append(.from, "<sip:carol@contoso.com>;tag=f1")
        headers.append(.to, "<sip:john@oma.example>")
        headers.append(.callID, "c1@gw")
        headers.append(.cseq, "\(cseq) SUBSCRIBE")
        return SIPRequest(method: .subscribe, uri: try SIPURI("sip:john@oma.example"), headers: headers)
    }

    static func challenge(_ status: Int, to request: SIPRequest, _ values: [String]) -> SIPResponse {
        var response = SIPResponse(replyingTo: request, statusCode: status, toTag: "k1")
        let name: SIPHeaderName = status == 401 ? "WWW-Authenticate" : "Proxy-Authenticate"
        for value in values { response.headers.append(name, value) }
        return response
    }

    /// RFC 3261 §22.2, §8.1.3.5: the request again with CSeq one higher; its credentials (401 →
    /// Authorization, 407 → Proxy-Authorization) computed for the request as sent; later
    /// requests to the peer carry credentials at once with nc one higher (RFC 7616 §3.4).
    @Test(arguments: [401, 407])
    func aChallengeIsAnsweredOnceAndItsNonceReused(status: Int) throws {
        let credentials = SIPDigestCredentials(realm: "oma.example", username: "gw", password: "secret")
        var client = SIPDigestClient(credentials: [3: credentials], cnonce: { "cn" })
        let first = try Self.subscribe(cseq: 7)
        let response = Self.challenge(
            status, to: first, [#"Digest realm="oma.example", nonce="N1", qop="auth", algorithm=SHA-256"#])
        var again = try client.answer(response, to: first, peer: 3).get()
        #expect(try again.headers.cseq == SIPCSeq(8, .subscribe))
        #expect(try again.headers.callID == first.headers.callID)
        client.authorize(&again, peer: 3)
        let header: SIPHeaderName = status == 401 ? "Authorization" : "Proxy-Authorization"
        let value = try #require(again.headers[header])
        let challenge = try SIPDigestChallenge(#"Digest realm="oma.example", nonce="N1", qop="auth", algorithm=SHA-256"#)
        let expected = credentials.response(
            to: challenge, method: "SUBSCRIBE", uri: "sip:john@oma.example", nonceCount: 1, cnonce: "cn")
        #expect(value.contains("response=\"\(expected)\"") && value.contains("nc=00000001"), "\(value)")
        #expect(!value.contains("secret"))
        var refresh = try Self.subscribe(cseq: 9)
        client.authorize(&refresh, peer: 3)
        #expect(refresh.headers[header]?.contains("nc=00000002") == true)
        #expect(refresh.headers.fields.filter { $0.name == header }.count == 1)
        // Another peer gets nothing, and a forgotten challenge is not reused.
        var other = try Self.subscribe(cseq: 1)
        client.authorize(&other, peer: 4)
        #expect(other.headers[header] == nil)
        client.forget(3)
        var afterForget = try Self.subscribe(cseq: 10)
        client.authorize(&afterForget, peer: 3)
        #expect(afterForget.headers[header] == nil)
    }

    /// A server's 401 and a proxy's 407 are two nonces (RFC 3261 §22.3): each is kept, and a
    /// later request answers both, each with its own nc; one does not replace the other.
    @Test func aServersAndAProxysChallengesAreBothKept() throws {
        var client = SIPDigestClient(
            credentials: [0: SIPDigestCredentials(realm: "oma.example", username: "gw", password: "secret")])
        let first = try Self.subscribe(cseq: 1)
        _ = try client.answer(Self.challenge(401, to: first, [#"Digest realm="oma.example", nonce="S", qop="auth""#]), to: first, peer: 0).get()
        var publish = try Self.subscribe(cseq: 5)
        client.authorize(&publish, peer: 0)
        _ = try client.answer(Self.challenge(407, to: publish, [#"Digest realm="oma.example", nonce="P", qop="auth""#]), to: publish, peer: 0).get()
        var later = try Self.subscribe(cseq: 9)
        client.authorize(&later, peer: 0)
        let server = try #require(later.headers["Authorization"])
        let proxy = try #require(later.headers["Proxy-Authorization"])
        #expect(server.contains(#"nonce="S""#) && server.contains("nc=00000002"), "\(server)")
        #expect(proxy.contains(#"nonce="P""#) && proxy.contains("nc=00000001"), "\(proxy)")
        #expect(later.headers.fields.filter { $0.name == "Authorization" }.count == 1)
    }

    /// A challenge for a realm the credentials are not for is not answered.
    @Test func aChallengeOfAnotherRealmIsNotAnswered() throws {
        var client = SIPDigestClient(
            credentials: [0: SIPDigestCredentials(realm: "oma.example", username: "gw", password: "secret")])
        let first = try Self.subscribe(cseq: 1)
        let response = Self.challenge(401, to: first, [#"Digest realm="attacker.example", nonce="N", qop="auth""#])
        let answered = client.answer(response, to: first, peer: 0)
        #expect(throws: SIPDigestChallenge.Refusal.self) { try answered.get() }
    }

    /// The credentials never show their password, whichever way they are printed.
    @Test func credentialsNeverPrintTheirPassword() {
        let credentials = SIPDigestCredentials(realm: "oma.example", username: "gw", password: "hunter2-secret")
        var dumped = ""
        dump(credentials, to: &dumped)
        for text in ["\(credentials)", String(reflecting: credentials), dumped, "\([credentials])"] {
            #expect(!text.contains("hunter2"), "\(text)")
        }
    }
}
