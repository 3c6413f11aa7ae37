import Foundation
import PresenceDocuments
@testable import PresenceGateway
import Testing
import XMLBridge

/// OMA's pres-rules extensions beyond the golden vectors: what each `provide-*` lets through,
/// how an `external-list` anchor is resolved, and the hostile anchors never fetched.
@Suite struct OMAPresRulesTests {
    static let root = "https://xdms.oma.example:8443/xcap-root"

    /// Only the XCAP server's own URIs are fetched: another host, port or scheme, user
    /// information, a path beside the root or climbing out of it are not.
    @Test(arguments: [
        ("https://xdms.oma.example:8443/xcap-root/resource-lists/users/sip:erin@oma.example/index", true),
        ("https://XDMS.oma.example:8443/xcap-root/resource-lists/users/x/index/~~/resource-lists/list%5B@name=%22a%22%5D", true),
        ("http://xdms.oma.example:8443/xcap-root/resource-lists/users/x/index", false),
        ("https://xdms.oma.example/xcap-root/resource-lists/users/x/index", false),
        ("https://evil.example:8443/xcap-root/resource-lists/users/x/index", false),
        ("https://user@xdms.oma.example:8443/xcap-root/resource-lists/users/x/index", false),
        ("https://xdms.oma.example:8443/xcap-rootless/secret", false),
        ("https://xdms.oma.example:8443/xcap-root/../admin", false),
        ("https://xdms.oma.example:8443/xcap-root/%2e%2e/admin", false),
        ("file:///etc/passwd", false),
        ("not a uri at all", false),
    ])
    func onlyAnchorsUnderTheXCAPRootAreFetched(_ anchor: String, _ fetched: Bool) {
        #expect(XCAPExternalLists.isUnder(root: Self.root, anchor) == fetched, "\(anchor)")
    }

    /// A list answer that is neither a list nor a resource-lists document is an error, not members.
    @Test func aListAnswerOfAnotherKindIsRefused() {
        #expect(throws: XMLError.self) {
            try XCAPExternalLists.entries(Array(#"<ruleset xmlns="urn:ietf:params:xml:ns:common-policy"/>"#.utf8))
        }
        #expect(throws: XMLError.self) { try XCAPExternalLists.entries(Array("<list".utf8)) }
    }

    /// A SIP URI anchor names a list the gateway serves (PacketCable Presence §6.1.5).
    @Test func aSIPAnchorIsResolvedAgainstTheServedLists() throws {
        let rules = try PresRules(bytes: Array("""
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules" xmlns:ocp="urn:oma:xml:xdm:common-policy">
              <cr:rule id="f"><cr:conditions><ocp:external-list><ocp:entry anc="sip:friends@example.com"/><ocp:entry/></ocp:external-list></cr:conditions>
                <cr:actions><pr:sub-handling>allow</pr:sub-handling></cr:actions></cr:rule></cr:ruleset>
            """.utf8))
        #expect(rules.unresolvedExternalLists == ["sip:friends@example.com"], "an entry without anc names no list")
        let alice = try #require(WatcherIdentity(uri: "sip:alice@example.com", network: .sameEnterprise))
        #expect(rules.subHandling(for: alice) == nil, "unresolved: names nobody")
        let served = GatewayServer.resolvingServedLists(rules, ["sip:friends@example.com": ["sip:alice@example.com"]])
        #expect(served.unresolvedExternalLists.isEmpty)
        #expect(served.subHandling(for: alice) == .allow)
        let bob = try #require(WatcherIdentity(uri: "sip:bob@example.com", network: .sameEnterprise))
        #expect(served.subHandling(for: bob) == nil)
    }

    /// Each OMA boolean provide-* lets its own elements through and no other; provide-geopriv
    /// full lets the location through.
    @Test(arguments: PresRules.Permissions.omaGrants.keys.sorted())
    func eachOMAProvideLetsItsElementsThrough(_ transformation: String) throws {
        let rules = try PresRules(bytes: Array("""
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules" xmlns:op="urn:oma:xml:prs:pres-rules">
              <cr:rule id="a"><cr:actions><pr:sub-handling>allow</pr:sub-handling></cr:actions>
                <cr:transformations><pr:provide-services><pr:all-services/></pr:provide-services>
                  <pr:provide-persons><pr:all-persons/></pr:provide-persons><pr:provide-devices><pr:all-devices/></pr:provide-devices>
                  <op:\(transformation)>true</op:\(transformation)><op:provide-geopriv>full</op:provide-geopriv></cr:transformations></cr:rule></cr:ruleset>
            """.utf8))
        let watcher = try #require(WatcherIdentity(uri: "sip:w@oma.example", network: .federated))
        let doc = try PIDFDocument(bytes: Array(Data(contentsOf: PolicyVectorTests.vectors.appendingPathComponent("input/oma-presentity.xml"))))
        let shown = try #require(rules.permissions(for: watcher)).apply(to: doc)
        let kept = Set((shown.tuples.flatMap(\.extensions) + shown.persons.flatMap(\.extensions) + shown.devices.flatMap(\.extensions)).map(\.name.local))
        let granted = Set(PresRules.Permissions.omaGrants[transformation, default: []].map(\.local))
        let present: Set = ["willingness", "overriding-willingness", "session-participation", "registration-state", "barring-state", "network-availability"]
        #expect(kept == granted.intersection(present).union(["service-description"]), "\(transformation)")
    }

    /// Another provide-services selector of OMA's: the tuple whose service-description names it.
    @Test func omaServiceIDSelectsTheTupleOfThatService() throws {
        let rules = try PresRules(bytes: Array("""
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules" xmlns:op="urn:oma:xml:prs:pres-rules">
              <cr:rule id="a"><cr:actions><pr:sub-handling>allow</pr:sub-handling></cr:actions>
                <cr:transformations><pr:provide-services><op:service-id>org.openmobilealliance:IM-session</op:service-id></pr:provide-services></cr:transformations></cr:rule></cr:ruleset>
            """.utf8))
        let watcher = try #require(WatcherIdentity(uri: "sip:w@oma.example", network: .federated))
        let doc = try PIDFDocument(bytes: Array(Data(contentsOf: PolicyVectorTests.vectors.appendingPathComponent("input/oma-presentity.xml"))))
        #expect(try #require(rules.permissions(for: watcher)).apply(to: doc).tuples.map(\.id) == ["t1"])
        var other = doc
        other.tuples = other.tuples.map { var t = $0; t.extensions = []; return t }
        #expect(try #require(rules.permissions(for: watcher)).apply(to: other).tuples.isEmpty)
    }

    /// An anonymous request meets no identity condition, not even `many` (RFC 4745 §7.1), and is
    /// not "another identity" either.
    @Test func anAnonymousRequestMeetsOnlyAnonymousRequest() throws {
        let rules = try PresRules(bytes: Array("""
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules" xmlns:ocp="urn:oma:xml:xdm:common-policy">
              <cr:rule id="m"><cr:conditions><cr:identity><cr:many/></cr:identity></cr:conditions><cr:actions><pr:sub-handling>allow</pr:sub-handling></cr:actions></cr:rule>
              <cr:rule id="o"><cr:conditions><ocp:other-identity/></cr:conditions><cr:actions><pr:sub-handling>confirm</pr:sub-handling></cr:actions></cr:rule>
            </cr:ruleset>
            """.utf8))
        let anonymous = try #require(WatcherIdentity(uri: "<sip:anonymous@anonymous.invalid>;tag=1", network: .federated))
        #expect(anonymous.isAnonymous)
        #expect(rules.subHandling(for: anonymous) == nil)
        let named = try #require(WatcherIdentity(uri: "sip:x@oma.example", network: .federated))
        #expect(rules.subHandling(for: named) == .allow, "many names x: other-identity does not hold")
    }
}
