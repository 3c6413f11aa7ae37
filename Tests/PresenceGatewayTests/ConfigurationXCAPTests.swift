@testable import PresenceGateway
import Testing

/// `xcap:` and `pres-rules: xcap` (GatewayConfiguration+XCAP.swift): where a presentity's
/// pres-rules document is fetched (RFC 4825 §6), and every mistake at its line and column.
@Suite struct ConfigurationXCAPTests {
    static let presentity = """
        presentities:
          "sip:erin@oma.example": { pres-rules: xcap }

        """

    @Test func theSectionAndThePresentitiesAreRead() throws {
        let config = try GatewayConfiguration(yaml: ConfigurationTests.valid + Self.presentity + """
            xcap: { root: "https://xdms.oma.example:8443/xcap-root/", auid: org.openmobilealliance.pres-rules, document: pres-rules, poll: 5, timeout: 3 }
            """)
        let xcap = try #require(config.xcap)
        #expect(xcap == GatewayConfiguration.XCAP(root: "https://xdms.oma.example:8443/xcap-root", auid: "org.openmobilealliance.pres-rules",
                                                  document: "pres-rules", pollSeconds: 5, timeoutSeconds: 3))
        #expect(config.xcapPresentities == ["sip:erin@oma.example"])
        #expect(config.presRulesFiles.isEmpty)
        #expect(config.policies["sip:erin@oma.example"] != nil)
    }

    /// RFC 4825 §6: ROOT/AUID/users/XUI/DOCUMENT, the XUI the presentity's SIP URI (RFC 5025
    /// §9.7 names a single document `index`); characters a path segment cannot hold are escaped.
    @Test func theDocumentURI() throws {
        let config = try GatewayConfiguration(yaml: ConfigurationTests.valid + Self.presentity + "xcap: { root: \"http://127.0.0.1:8080/xcap-root\" }")
        let xcap = try #require(config.xcap)
        #expect(xcap.pollSeconds == 30 && xcap.timeoutSeconds == 10)
        #expect(xcap.documentURI(of: "sip:erin@oma.example") == "http://127.0.0.1:8080/xcap-root/pres-rules/users/sip:erin@oma.example/index")
        #expect(xcap.documentURI(of: "sip:a/b?c#d@oma.example") == "http://127.0.0.1:8080/xcap-root/pres-rules/users/sip:a%2Fb%3Fc%23d@oma.example/index")
    }

    /// RFC 4826 §4.4.7: an identity's rls-services document is `index` under the
    /// `rls-services` AUID; the identities are kept in order.
    @Test func rlsServicesDocumentsAreNamedByTheirIdentities() throws {
        let config = try GatewayConfiguration(yaml: ConfigurationTests.valid + """
            xcap: { root: "http://127.0.0.1:8080/xcap-root", rls-services: ["sip:lists@contoso.com", "<sip:Team@Contoso.com>"] }
            """)
        let xcap = try #require(config.xcap)
        #expect(xcap.rlsServices == ["sip:lists@contoso.com", "sip:Team@contoso.com"])
        #expect(xcap.rlsServicesURI(of: "sip:lists@contoso.com") == "http://127.0.0.1:8080/xcap-root/rls-services/users/sip:lists@contoso.com/index")
        #expect(config.awaitingResourceLists == false, "set by the server while it fetches")
    }

    /// The lists served from XCAP beside configured ones: a configured list wins over one of the
    /// same URI, and an XCAP list with a member outside the enterprise domains in force (a reload
    /// dropped the domain) is not served.
    @Test func listsFromXCAPMeetTheConfiguredOnes() throws {
        let enterprise = try GatewayConfiguration(yaml: ConfigurationTests.valid).enterprise
        let served = GatewayServer.served(
            configured: ["sip:team@contoso.com": ["sip:bob@contoso.com"]],
            xcap: [
                "sip:team@contoso.com": ["sip:carol@contoso.com"], "sip:ops@contoso.com": ["sip:dan@contoso.com"],
                "sip:old@contoso.com": ["sip:erin@fabrikam.com"],
            ], enterprise: enterprise)
        #expect(served == ["sip:team@contoso.com": ["sip:bob@contoso.com"], "sip:ops@contoso.com": ["sip:dan@contoso.com"]])
    }

    @Test func aFileIsStillAFile() throws {
        let config = try GatewayConfiguration(yaml: ConfigurationTests.valid + """
            presentities:
              "sip:erin@oma.example": { pres-rules: ./xcap }
            """)
        #expect(config.presRulesFiles == ["sip:erin@oma.example": "./xcap"] && config.xcapPresentities.isEmpty)
    }

    @Test(arguments: [
        (Self.presentity, 7, 27, "needs the 'xcap' section"),
        ("presentities:\n  default: { pres-rules: xcap }\nxcap: { root: \"http://x.example/r\" }", 7, 12, "default policy"),
        ("xcap: { poll: 5 }", 6, 7, "needs root"),
        ("xcap: { root: \"ftp://x.example/r\" }", 6, 15, "not an http"),
        ("xcap: { root: \"http://x.example/r?q=1\" }", 6, 15, "not an http"),
        ("xcap: { root: \"http://x.example/r\", auid: \"a/b\" }", 6, 43, "one path segment"),
        ("xcap: { root: \"http://x.example/r\", poll: 0 }", 6, 43, "1"),
        ("xcap: { root: \"http://x.example/r\", user: x }", 6, 37, "user"),
        ("xcap: { root: \"http://x.example/r\", rls-services: [lists] }", 6, 52, "not a sip:user@host"),
        ("xcap: { root: \"http://x.example/r\", xcap-diff: maybe }", 6, 48, "true or false"),
        ("xcap: { root: \"http://x.example/r\", rls-services: [\"sip:l@contoso.com\", \"sip:l@contoso.com\"] }", 6, 73, "named twice"),
    ])
    func mistakesAreReportedWhereTheyAre(yaml: String, line: Int, column: Int, message: String) {
        let error = #expect(throws: ConfigurationError.self) { try GatewayConfiguration(yaml: ConfigurationTests.valid + yaml) }
        #expect(error?.line == line && error?.column == column, "\(error?.description ?? "")")
        #expect(error?.message.contains(message) == true, "\(error?.description ?? "")")
    }

    static func oma(_ rls: String) -> String {
        ConfigurationTests.valid.replacingOccurrences(
            of: "oma: { domains: [oma.example], next-hop: \"sip:127.0.0.1:5070\" }",
            with: "oma: { domains: [oma.example, oma2.example], next-hop: \"sip:127.0.0.1:5070\", rls: \(rls) }")
    }

    /// `oma: rls` names, per OMA domain, the XCAP root of its RLS's lists (RFC 4662, RFC 4826),
    /// or `off`; a domain not named keeps one subscription per resource.
    @Test func listsTowardTheOMASideArePerDomain() throws {
        let config = try GatewayConfiguration(
            yaml: Self.oma(#"{ OMA.example: "http://127.0.0.1:8080/xcap-root/", oma2.example: off }"#))
        #expect(config.oma.rls == ["oma.example": "http://127.0.0.1:8080/xcap-root"])
        #expect(try GatewayConfiguration(yaml: ConfigurationTests.valid).oma.rls.isEmpty)
    }

    @Test(arguments: [
        (#"{ other.example: "http://x.example/r" }"#, 5, 100, "not one of this side's domains"),
        (#"{ oma.example: "ftp://x.example/r" }"#, 5, 98, "not an http"),
        (#"[oma.example]"#, 5, 83, "mapping"),
    ])
    func listMistakesAreReportedWhereTheyAre(rls: String, line: Int, column: Int, message: String) {
        let error = #expect(throws: ConfigurationError.self) { try GatewayConfiguration(yaml: Self.oma(rls)) }
        #expect(error?.line == line && error?.column == column, "\(error?.description ?? "")")
        #expect(error?.message.contains(message) == true, "\(error?.description ?? "")")
    }
}
