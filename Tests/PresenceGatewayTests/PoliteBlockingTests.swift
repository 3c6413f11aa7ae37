import Foundation
import PresenceDocuments
import PresenceGateway
import PresenceMapping
import Testing
import XMLBridge

/// RFC 5025 pres-rules and the polite-blocking guarantee: a politely blocked watcher receives
/// exactly what a watcher of a presentity that never published receives, in every format.
@Suite struct PoliteBlockingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let shared = root.deletingLastPathComponent().appending(path: "shared")

    static func watcher(_ uri: String, _ network: SourceNetwork = .federated) -> WatcherIdentity {
        guard let w = WatcherIdentity(uri: uri, network: network) else { fatalError("bad test URI \(uri)") }
        return w
    }

    static func rules(_ xml: String) throws -> PresRules { try PresRules(bytes: Array(xml.utf8)) }

    static let ruleset = """
        <?xml version="1.0" encoding="UTF-8"?>
        <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules">
          <cr:rule id="friends"><cr:conditions><cr:identity><cr:one id="sip:alice@oma.example"/></cr:identity></cr:conditions>
            <cr:actions><pr:sub-handling>allow</pr:sub-handling></cr:actions></cr:rule>
          <cr:rule id="oma"><cr:conditions><cr:identity><cr:many domain="oma.example"><cr:except id="sip:eve@oma.example"/></cr:many></cr:identity></cr:conditions>
            <cr:actions><pr:sub-handling>confirm</pr:sub-handling></cr:actions></cr:rule>
          <cr:rule id="ex"><cr:conditions><cr:identity><cr:one id="sip:mallory@oma.example"/><cr:one id="sip:ex@oma.example"/></cr:identity></cr:conditions>
            <cr:actions><pr:sub-handling>polite-block</pr:sub-handling></cr:actions></cr:rule>
          <cr:rule id="spam"><cr:conditions><cr:identity><cr:many domain="spam.example"/></cr:identity></cr:conditions>
            <cr:actions><pr:sub-handling>block</pr:sub-handling></cr:actions></cr:rule>
          <cr:rule id="weekends"><cr:conditions><cr:sphere value="home"/></cr:conditions>
            <cr:actions><pr:sub-handling>allow</pr:sub-handling></cr:actions></cr:rule>
        </cr:ruleset>
        """

    @Test func rfc5025ExampleAllowsItsOneIdentity() throws {
        let bytes = Array(try Data(contentsOf: Self.shared.appending(path: "spec/ietf-schemas/examples/rfc5025-pres-rules.xml")))
        let rules = try PresRules(bytes: bytes)
        #expect(rules.rules.map(\.id) == ["a"])
        #expect(rules.subHandling(for: Self.watcher("sip:user@example.com")) == .allow)
        #expect(rules.subHandling(for: Self.watcher("sip:other@example.com")) == nil)
    }

    @Test func matchingRulesCombineToTheLargestSubHandling() throws {
        let rules = try Self.rules(Self.ruleset)
        // alice matches "friends" (allow) and "oma" (confirm): allow wins (RFC 4745 §10.2).
        #expect(rules.subHandling(for: Self.watcher("sip:alice@oma.example")) == .allow)
        #expect(rules.subHandling(for: Self.watcher("sip:bob@oma.example")) == .confirm)
        // mallory matches "oma" (confirm) and "ex" (polite-block).
        #expect(rules.subHandling(for: Self.watcher("sip:mallory@oma.example")) == .politeBlock)
        // eve is excepted from "oma"; the sphere rule cannot be evaluated and never applies.
        #expect(rules.subHandling(for: Self.watcher("sip:eve@oma.example")) == nil)
        #expect(rules.subHandling(for: Self.watcher("sip:x@spam.example")) == .block)
    }

    @Test func badSubHandlingIsALocatedError() throws {
        let bad = """
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules">
            <cr:rule id="r"><cr:actions>
            <pr:sub-handling>maybe</pr:sub-handling></cr:actions></cr:rule></cr:ruleset>
            """
        let error = #expect(throws: XMLError.self) { try PresRules(bytes: Array(bad.utf8)) }
        #expect(error?.line == 3)
        #expect(error?.message.contains("sub-handling") == true)
    }

    /// john's published categories: state in 100 (federated) and 200, a note in 200 only.
    static func published() -> [Category] {
        let away = MSState(type: .aggregateState, availability: 15500)
        let busy = MSState(type: .aggregateState, availability: 6500)
        return [
            Category(name: .state, instance: 1, container: 100, version: 3, publishTime: "2008-01-11T17:29:13.263", payload: .state(away)),
            Category(name: .state, instance: 1, container: 200, version: 3, publishTime: "2008-01-11T17:29:13.263", payload: .state(busy)),
            Category(name: .note, instance: 0, container: 200, version: 1, publishTime: "2008-01-11T17:29:13.263",
                     payload: .note(MSNote(bodies: [MSNote.Body(text: "in Redmond", type: "personal")]))),
        ]
    }

    static let policy = PresentityPolicy(
        containers: ContainerSet([100: [.federated], 200: [.sameEnterprise]]),
        rules: (try? rules(ruleset)) ?? PresRules(),
        defaults: [.federated: .allow, .sameEnterprise: .allow])

    @Test func allowedWatchersSeeTheirContainerOnly() throws {
        let wanted: [CategoryName] = [.state, .note]
        let federated = try #require(Self.policy.view(of: Self.published(), uri: "sip:john@contoso.com",
                                                      for: Self.watcher("sip:alice@oma.example"), categories: wanted))
        #expect(federated.categories.map(\.name) == [.state, .note])
        #expect(federated.categories[0].payload == .state(MSState(type: .aggregateState, availability: 15500)))
        #expect(federated.categories[0].container == nil && federated.categories[0].version == nil)
        // No note in a container the federated watcher resolves to: an empty category element.
        #expect(federated.categories[1] == Category(name: .note))
        let colleague = try #require(Self.policy.view(of: Self.published(), uri: "sip:john@contoso.com",
                                                      for: Self.watcher("sip:carol@contoso.com", .sameEnterprise), categories: wanted))
        #expect(colleague.categories.map(\.payload) == [
            .state(MSState(type: .aggregateState, availability: 6500)),
            .note(MSNote(bodies: [MSNote.Body(text: "in Redmond", type: "personal")])),
        ])
    }

    @Test func blockedAndUnconfirmedWatchersSeeNothing() {
        let view = { (w: WatcherIdentity) in Self.policy.view(of: Self.published(), uri: "sip:john@contoso.com", for: w, categories: [.state]) }
        #expect(view(Self.watcher("sip:x@spam.example")) == nil)
        #expect(view(Self.watcher("sip:bob@oma.example")) == nil)
        #expect(Self.policy.subHandling(for: Self.watcher("sip:x@spam.example")) == .block)
        #expect(Self.policy.subHandling(for: Self.watcher("sip:bob@oma.example")) == .confirm)
        // A network without a default is blocked (RFC 5025 §3.2.1).
        #expect(Self.policy.subHandling(for: Self.watcher("sip:z@cloud.example", .publicCloud)) == .block)
    }

    @Test func politelyBlockedWatcherSeesTheBytesOfANeverPublishedPresentity() throws {
        let mapper = PresenceMapper(tables: try MappingTables.builtIn())
        let wanted: [CategoryName] = [.state, .note, .contactCard, .calendarData, .services]
        let mallory = Self.watcher("sip:mallory@oma.example")
        #expect(Self.policy.subHandling(for: mallory) == .politeBlock)
        let blocked = try #require(Self.policy.view(of: Self.published(), uri: "sip:john@contoso.com", for: mallory, categories: wanted))
        // A watcher allowed everything, of a presentity that never published.
        let open = PresentityPolicy(defaults: [.federated: .allow])
        let never = try #require(open.view(of: [], uri: "sip:john@contoso.com", for: mallory, categories: wanted))
        #expect(blocked.serialized() == never.serialized())
        #expect(blocked.categories == wanted.map { Category(name: $0) })
        #expect(mapper.pidf(from: blocked, dialect: .rfc).0.serialized() == mapper.pidf(from: never, dialect: .rfc).0.serialized())
        #expect(mapper.pidf(from: blocked, dialect: .microsoft).0.serialized() == mapper.pidf(from: never, dialect: .microsoft).0.serialized())
        #expect(mapper.msrtc(from: blocked).0.serialized() == mapper.msrtc(from: never).0.serialized())
        // And that view says "offline": closed in PIDF, 18500 in msrtc (docs/flows.md, "Blocked view is offline").
        let pidf = String(decoding: mapper.pidf(from: blocked, dialect: .rfc).0.serialized(), as: UTF8.self)
        #expect(pidf.contains("<basic>closed</basic>"))
        let msrtc = String(decoding: mapper.msrtc(from: blocked).0.serialized(), as: UTF8.self)
        #expect(msrtc.contains("18500"))
        // The real view of an allowed federated watcher differs, so the test can tell them apart.
        let alice = try #require(Self.policy.view(of: Self.published(), uri: "sip:john@contoso.com",
                                                  for: Self.watcher("sip:alice@oma.example"), categories: wanted))
        #expect(alice.serialized() != never.serialized())
    }
}
