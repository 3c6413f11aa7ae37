@testable import PresenceGateway
import SIPStack
import Testing

/// HTTP Digest as the XCAP client answers an Aggregation Proxy (HTTPDigest.swift), checked
/// against the worked examples the RFCs publish.
@Suite struct HTTPDigestTests {
    /// RFC 7616 §3.9.1: Mufasa, "Circle of Life", GET /dir/index.html, one nonce and cnonce.
    static let rfc7616 = (
        credentials: HTTPDigest.Credentials(username: "Mufasa", password: "Circle of Life"),
        use: HTTPDigest.Use(
            method: "GET", uri: "/dir/index.html", nonceCount: 1, cnonce: "f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ"),
        realm: "http-auth@example.org", nonce: "7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v",
        opaque: "FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"
    )

    /// The two challenges of RFC 7616 §3.9.1's 401, as two WWW-Authenticate fields.
    static let rfc7616Fields = ["SHA-256", "MD5"].map {
        """
        Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=\($0), \
        nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"
        """
    }

    static func challenge(_ algorithm: HTTPDigest.Algorithm) -> HTTPDigest.Challenge {
        HTTPDigest.Challenge(
            realm: rfc7616.realm, nonce: rfc7616.nonce, opaque: rfc7616.opaque, algorithm: algorithm, qopAuth: true,
            stale: false, userhash: false)
    }

    @Test(arguments: [
        (HTTPDigest.Algorithm.sha256, "753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1"),
        (HTTPDigest.Algorithm.md5, "8ca523f5e9506fed4657c9700eebdbec"),
    ])
    func theResponsesOfRFC7616sWorkedExample(algorithm: HTTPDigest.Algorithm, published: String) {
        #expect(HTTPDigest.response(Self.challenge(algorithm), Self.rfc7616.credentials, Self.rfc7616.use) == published)
    }

    /// RFC 2617 §3.5: "Circle Of Life" at testrealm@host.com, cnonce 0a4f113b.
    @Test func theResponseOfRFC2617sExample() {
        let challenge = HTTPDigest.Challenge(
            realm: "testrealm@host.com", nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093",
            opaque: "5ccc069c403ebaf9f0171e9517f40e41", algorithm: .md5, qopAuth: true, stale: false, userhash: false)
        let use = HTTPDigest.Use(method: "GET", uri: "/dir/index.html", nonceCount: 1, cnonce: "0a4f113b")
        let credentials = HTTPDigest.Credentials(username: "Mufasa", password: "Circle Of Life")
        #expect(HTTPDigest.response(challenge, credentials, use) == "6629fae49393a05397450978507c4ef1")
    }

    /// RFC 7616 §3.7: the first challenge the client supports, in the server's order; the
    /// example's qop list offers auth beside auth-int.
    @Test func theFirstSupportedChallengeOfA401IsAnswered() throws {
        let challenge = try HTTPDigest.challenge(in: Self.rfc7616Fields).get()
        #expect(challenge == Self.challenge(.sha256))
        let md5 = try HTTPDigest.challenge(in: Array(Self.rfc7616Fields.reversed())).get()
        #expect(md5.algorithm == .md5)
        // Another scheme first in the same field (RFC 7235 §4.1 allows a list of challenges).
        let mixed = try HTTPDigest.challenge(in: [
            #"Basic realm="x", Negotiate, Digest realm="xdm", nonce="n1", algorithm=MD5, qop="auth""#
        ]).get()
        #expect(mixed.realm == "xdm" && mixed.nonce == "n1" && mixed.algorithm == .md5 && mixed.qopAuth)
    }

    /// The Authorization field of RFC 7616 §3.9.1, field by field.
    @Test func theAuthorizationFieldCarriesTheExamplesValues() {
        let field = HTTPDigest.authorization(Self.challenge(.sha256), Self.rfc7616.credentials, Self.rfc7616.use)
        #expect(field.hasPrefix("Digest "))
        for part in [
            #"username="Mufasa""#, #"realm="http-auth@example.org""#, #"uri="/dir/index.html""#, "algorithm=SHA-256",
            #"nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v""#, "nc=00000001",
            #"cnonce="f2/wE4q74E6zIJEtWaHKaf5wv/H5QzzpXusqGemxURZJ""#, "qop=auth",
            #"response="753927fa0e85d155564e2e272a28d1802ca10daf4496794697cf8db5856cb6c1""#,
            #"opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS""#,
        ] {
            #expect(field.contains(part), "\(part) in \(field)")
        }
        #expect(!field.contains("Circle of Life"))
    }

    /// RFC 7616 §3.3: stale=true says the nonce alone was refused; nc is 8 hex digits (§3.4).
    @Test func staleAndTheNonceCount() throws {
        let stale = try HTTPDigest.challenge(in: [#"Digest realm="r", nonce="n2", stale=TRUE"#]).get()
        #expect(stale.stale && !stale.qopAuth && stale.algorithm == .md5)
        #expect(DigestHash.nc(1) == "00000001" && DigestHash.nc(0x1a) == "0000001a")
        #expect(HTTPDigest.nextNonce(in: #"qop=auth, rspauth="ab", cnonce="c", nc=00000001, nextnonce="n3""#) == "n3")
    }

    /// RFC 2069 compatibility (RFC 7616 §3.4.1): without qop, response = H(H(A1):nonce:H(A2)).
    @Test func withoutQopTheResponseHasNoCountOrCnonce() {
        var challenge = Self.challenge(.md5)
        challenge.qopAuth = false
        let field = HTTPDigest.authorization(challenge, Self.rfc7616.credentials, Self.rfc7616.use)
        #expect(!field.contains("nc=") && !field.contains("cnonce=") && !field.contains("qop="))
        let a1 = HTTPDigest.Algorithm.md5.hash("Mufasa:http-auth@example.org:Circle of Life")
        let a2 = HTTPDigest.Algorithm.md5.hash("GET:/dir/index.html")
        #expect(HTTPDigest.response(challenge, Self.rfc7616.credentials, Self.rfc7616.use)
            == HTTPDigest.Algorithm.md5.hash("\(a1):\(Self.rfc7616.nonce):\(a2)"))
    }

    /// What the client cannot answer is refused with a reason, never a crash.
    @Test(arguments: [
        #"Digest realm="r", nonce="n", qop="auth-int""#,
        #"Digest realm="r", nonce="n", algorithm=SHA-512-256"#,
        #"Digest realm="r", nonce="n, qop=auth"#,
        #"Digest realm="r""#,
        #"Basic realm="r""#,
        "Digest " + String(repeating: "a=b, ", count: 2000),
        "Digest realm=\"r\", nonce=\"n\", \u{0}=x",
    ])
    func unanswerableChallengesAreRefused(field: String) {
        guard case .failure(let refusal) = HTTPDigest.challenge(in: [field]) else {
            Issue.record("answered: \(field)")
            return
        }
        #expect(!refusal.description.isEmpty)
    }

    /// The request-target the digest covers is the path and query as sent (RFC 7616 §3.4).
    @Test func theDigestURIIsTheRequestTarget() {
        #expect(XCAPClient.requestTarget("http://127.0.0.1:8080/xcap-root/pres-rules/users/sip:a@b/index")
            == "/xcap-root/pres-rules/users/sip:a@b/index")
        #expect(XCAPClient.requestTarget("https://ap.example/x?y=1#z") == "/x?y=1")
        #expect(XCAPClient.requestTarget("https://ap.example") == "/")
    }
}
