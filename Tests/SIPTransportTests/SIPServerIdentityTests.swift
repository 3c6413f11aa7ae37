import NIOSSL
import PeerTestSupport
@testable import SIPTransport
import Testing

/// Matching a server certificate's names to the names the gateway expects (RFC 6125 §6.4).
@Suite struct SIPServerIdentityTests {
    /// (presented, reference, matches)
    static let cases: [(String, String, Bool)] = [
        ("edge.contoso.com", "edge.contoso.com", true),
        ("Edge.Contoso.COM", "edge.contoso.com.", true),  // case and a trailing dot (§6.4.1)
        ("edge.contoso.com", "sip.contoso.com", false),
        ("*.fabrikam.com", "sip.fabrikam.com", true),  // one label (§6.4.3)
        ("*.fabrikam.com", "a.b.fabrikam.com", false),  // never two
        ("*.fabrikam.com", "fabrikam.com", false),  // nor none
        ("*.com", "fabrikam.com", false),  // too broad
        ("s*.fabrikam.com", "sip.fabrikam.com", false),  // partial-label wildcards are refused
        ("sip.*.com", "sip.fabrikam.com", false),  // only the left-most label
        ("127.0.0.1", "127.0.0.1", false),  // an IP address is never a reference name
        ("*.fabrikam.com", "*.fabrikam.com", false),  // a reference is no pattern
        ("", "", false),
    ]

    @Test(arguments: cases)
    func namesMatchByRFC6125(_ presented: String, _ reference: String, _ matches: Bool) {
        #expect(SIPServerIdentity.matches(presented: presented, reference: reference) == matches)
    }

    @Test func certificateIdentitiesAreItsDNSNamesNeverItsIPAddress() throws {
        let evil = try NIOSSLCertificate(bytes: Array(TestCertificates.evilCertificate.utf8), format: .pem)
        #expect(SIPServerIdentity.presentedNames(of: evil) == ["evil.example"])
        let wildcard = try NIOSSLCertificate(bytes: Array(TestCertificates.wildcardCertificate.utf8), format: .pem)
        #expect(SIPServerIdentity.presentedNames(of: wildcard) == ["*.fabrikam.com"])
    }

    @Test func knownServerNamesComeBeforeTheTargetsNameAndAnIPAloneGivesNone() {
        var configuration = SIPNetworkTransport.Configuration()
        configuration.knownServers = [
            .init(host: "192.0.2.1", names: ["edge.contoso.com"]),
            .init(host: "192.0.2.1", port: 5062, names: ["edge2.contoso.com"]),
        ]
        #expect(configuration.expectedServerNames(for: SIPTarget(.tls, host: "192.0.2.1", port: 5061)) == ["edge.contoso.com"])
        #expect(configuration.expectedServerNames(for: SIPTarget(.tls, host: "192.0.2.1", port: 5062)) == ["edge2.contoso.com"])
        #expect(configuration.expectedServerNames(for: SIPTarget(.tls, host: "192.0.2.1", port: 5061, serverName: "x.example"))
                == ["edge.contoso.com"])
        #expect(configuration.expectedServerNames(for: SIPTarget(.tls, host: "192.0.2.9", port: 5061, serverName: "sip.fabrikam.com"))
                == ["sip.fabrikam.com"])
        #expect(configuration.expectedServerNames(for: SIPTarget(.tls, host: "192.0.2.9", port: 5061, serverName: "192.0.2.9")) == [])
        #expect(configuration.expectedServerNames(for: SIPTarget(.tls, host: "192.0.2.9", port: 5061)) == [])
    }
}
