import Foundation
import PresenceDocuments
import PresenceGateway
import PresenceMapping
import SIPMessages
import Testing
import XMLBridge

/// RFC 5025 §3.3 transformations: what an allowed watcher is shown of the presentity's PIDF,
/// and through the mapping, of its categories.
@Suite struct PresRulesPermissionsTests {
    static let user = WatcherIdentity(uri: "sip:user@example.com", network: .federated)!
    static let other = WatcherIdentity(uri: "sip:other@example.com", network: .federated)!
    static let shared = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "../../../shared")

    /// Two services (a SIP and a tel contact), one person with activities, mood, user input,
    /// a note and a display name.
    static let pidf = try! PIDFDocument(bytes: Array("""
        <?xml version="1.0" encoding="UTF-8"?>
        <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model"
          xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" xmlns:ci="urn:ietf:params:xml:ns:pidf:cipid" entity="sip:erin@oma.example">
          <tuple id="sip"><status><basic>open</basic></status><contact>sip:erin@oma.example</contact><note>desk</note></tuple>
          <tuple id="tel"><status><basic>open</basic></status><contact>tel:+15551234</contact></tuple>
          <dm:person id="p1"><rpid:activities><rpid:busy/></rpid:activities><rpid:mood><rpid:happy/></rpid:mood>
            <rpid:user-input idle-threshold="600" last-input="2026-11-26T08:00:00Z">idle</rpid:user-input>
            <ci:display-name>Erin</ci:display-name><dm:note>In a meeting</dm:note></dm:person>
        </presence>
        """.utf8))

    /// The RFC 5025 example: services with a sip or mailto contact, every person, activities,
    /// bare user input and a vendor attribute; nothing else.
    @Test func theRFC5025ExampleShowsWhatItGrants() throws {
        let bytes = Array(try Data(contentsOf: Self.shared.appending(path: "spec/ietf-schemas/examples/rfc5025-pres-rules.xml")))
        let permissions = try #require(try PresRules(bytes: bytes).permissions(for: Self.user))
        #expect(permissions.services.uriSchemes == ["sip", "mailto"] && !permissions.services.all)
        #expect(permissions.persons.all && !permissions.devices.all)
        #expect(permissions.attributes == [.activities] && permissions.userInput == .bare && !permissions.allAttributes)
        #expect(permissions.unknownAttributes == [XMLName("urn:vendor-specific:foo-namespace", "foo")])

        let shown = permissions.apply(to: Self.pidf)
        #expect(shown.tuples.map(\.id) == ["sip"])
        #expect(shown.tuples.first?.contact?.uri == "sip:erin@oma.example" && shown.tuples.first?.status.basic == .open)
        #expect(shown.tuples.first?.notes == [], "no provide-note")
        let person = try #require(shown.persons.first)
        #expect(person.rpid.activities.flatMap(\.tokens) == ["busy"])
        #expect(person.rpid.mood == nil && person.notes.isEmpty && person.cipid.isEmpty)
        let input = try #require(person.rpid.userInput)
        #expect(input.value == .idle && input.idleThreshold == nil && input.lastInput == nil, "bare: the value alone")
    }

    /// Without transformations an allowed watcher is shown nothing but the presentity; a watcher
    /// no rule speaks of is decided by the configured defaults and shown everything.
    @Test func aRuleWithoutTransformationsGrantsNothing() throws {
        let rules = try PresRules(bytes: Array("""
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules">
              <cr:rule id="a"><cr:conditions><cr:identity><cr:one id="sip:user@example.com"/></cr:identity></cr:conditions>
                <cr:actions><pr:sub-handling>allow</pr:sub-handling></cr:actions></cr:rule></cr:ruleset>
            """.utf8))
        let shown = try #require(rules.permissions(for: Self.user)).apply(to: Self.pidf)
        #expect(shown.tuples.isEmpty && shown.persons.isEmpty && shown.entity == "sip:erin@oma.example")
        #expect(rules.permissions(for: Self.other) == nil)
    }

    /// Matching rules combine (RFC 4745 §10): one grants the note, another the activities and
    /// full user input; the watcher gets both, and the mapping shows busy with the note.
    @Test func permissionsOfMatchingRulesCombine() throws {
        let rules = try PresRules(bytes: Array("""
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules">
              <cr:rule id="notes"><cr:conditions><cr:identity><cr:many domain="example.com"/></cr:identity></cr:conditions>
                <cr:actions><pr:sub-handling>allow</pr:sub-handling></cr:actions>
                <cr:transformations><pr:provide-persons><pr:occurrence-id>p1</pr:occurrence-id></pr:provide-persons>
                  <pr:provide-note>true</pr:provide-note><pr:provide-user-input>bare</pr:provide-user-input></cr:transformations></cr:rule>
              <cr:rule id="activities"><cr:conditions><cr:identity><cr:one id="sip:user@example.com"/></cr:identity></cr:conditions>
                <cr:transformations><pr:provide-services><pr:occurrence-id>sip</pr:occurrence-id></pr:provide-services>
                  <pr:provide-activities>true</pr:provide-activities><pr:provide-user-input>full</pr:provide-user-input>
                  <pr:provide-unknown-attribute ns="urn:ietf:params:xml:ns:pidf:cipid" name="display-name">true</pr:provide-unknown-attribute>
                </cr:transformations></cr:rule>
            </cr:ruleset>
            """.utf8))
        let user = try #require(rules.permissions(for: Self.user))
        #expect(user.attributes == [.note, .activities] && user.userInput == .full)
        let shown = user.apply(to: Self.pidf)
        #expect(shown.tuples.map(\.id) == ["sip"] && shown.tuples.first?.notes.map(\.text) == ["desk"])
        #expect(shown.persons.first?.notes.map(\.text) == ["In a meeting"])
        #expect(shown.persons.first?.cipid.displayNames.map(\.text) == ["Erin"])
        #expect(shown.persons.first?.rpid.userInput?.lastInput == "2026-11-26T08:00:00Z")

        // Only the first rule for the other watcher: the person and its note, no activities, no
        // service: the mapping has no busy to show.
        let other = try #require(rules.permissions(for: Self.other)).apply(to: Self.pidf)
        #expect(other.tuples.isEmpty && other.persons.first?.rpid.activities.isEmpty == true)
        let mapper = PresenceMapper(tables: try MappingTables.builtIn())
        let full = mapper.categoriesDocument(from: Self.pidf)
        let narrowed = mapper.categoriesDocument(from: other)
        func availability(_ document: CategoriesDocument) -> UInt32? {
            document.categories(named: .state).compactMap { category -> UInt32? in
                if case .state(let state)? = category.payload { return state.availability } else { return nil }
            }.first
        }
        #expect(availability(full).map { (6000...8999).contains($0) } == true, "busy (or busy-idle) in full: \(String(describing: availability(full)))")
        #expect(availability(narrowed).map { (6000...8999).contains($0) } != true, "no busy without activities: \(String(describing: availability(narrowed)))")
    }

    @Test(arguments: [
        ("<pr:provide-user-input>sometimes</pr:provide-user-input>", "false, bare, thresholds or full"),
        ("<pr:provide-note>yes</pr:provide-note>", "true or false"),
        ("<pr:provide-unknown-attribute name=\"x\">true</pr:provide-unknown-attribute>", "ns and name"),
        ("<pr:provide-services><pr:deviceIDx>a</pr:deviceIDx></pr:provide-services>", "does not select"),
    ])
    func aBadTransformationIsALocatedError(transformation: String, message: String) {
        let error = #expect(throws: XMLError.self) {
            try PresRules(bytes: Array("""
                <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules">
                <cr:rule id="a"><cr:transformations>
                \(transformation)
                </cr:transformations></cr:rule></cr:ruleset>
                """.utf8))
        }
        #expect(error?.line == 3 && error?.message.contains(message) == true, "\(String(describing: error))")
    }
}

/// The gateway shows an enterprise watcher what the transformations grant, in its first
/// notification ([MS-PRES] §3.4.5.1.3 piggybacked in the 200 OK).
@Suite struct TransformationViewTests {
    typealias T = GatewayCoreTests
    static let mary = PendingResourceTests.mary

    static func rules(_ handling: String, _ transformations: String) throws -> PresRules {
        try PresRules(bytes: Array("""
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules">
              <cr:rule id="carol"><cr:conditions><cr:identity><cr:one id="sip:carol@contoso.com"/></cr:identity></cr:conditions>
                <cr:actions><pr:sub-handling>\(handling)</pr:sub-handling></cr:actions>\(transformations)</cr:rule></cr:ruleset>
            """.utf8))
    }

    /// Carol subscribes to Mary, who is busy; the categories body of the 200 OK.
    static func firstView(_ rules: PresRules) throws -> [UInt8] {
        var h = try T.Harness(yaml: PendingResourceTests.marysYAML("allow"))
        _ = h.core.replacePresRules(rules, of: mary, now: h.now)
        let (id, legs) = try PendingResourceTests.subscribe(&h, resources: [mary])
        let leg = try #require(legs[mary])
        let (_, answered) = h.receive(try T.omaNotify(leg, cseq: 2, body: T.pidf(mary, activity: "busy")), from: .oma)
        let ok = try #require(T.responses(answered, id).first)
        let multipart = try #require(try SIPMessage.response(ok).multipartBody())
        return try #require(multipart.parts.first { $0.headers.contains { $0.value.contains("msrtc-event-categories") } }).body
    }

    /// Allowed with no transformation is exactly the politely blocked (never-published) view.
    @Test func grantingNothingIsTheNeverPublishedView() throws {
        let nothing = try Self.firstView(try Self.rules("allow", ""))
        let politelyBlocked = try Self.firstView(try Self.rules("polite-block", ""))
        #expect(nothing == politelyBlocked, "\(String(decoding: nothing, as: UTF8.self))")
        let everything = try Self.firstView(try Self.rules("allow", "<cr:transformations><pr:provide-services><pr:all-services/></pr:provide-services><pr:provide-persons><pr:all-persons/></pr:provide-persons><pr:provide-all-attributes/></cr:transformations>"))
        #expect(T.availability(try CategoriesDocument(bytes: everything)).0 == 6500)
        // Services alone: open, without the activity: Online.
        let services = try Self.firstView(try Self.rules("allow", "<cr:transformations><pr:provide-services><pr:all-services/></pr:provide-services></cr:transformations>"))
        #expect(T.availability(try CategoriesDocument(bytes: services)).0 == 3500)
    }
}

/// RFC 4745 §7.2 sphere conditions: a rule applies only while the OMA presentity publishes one
/// of the spheres it names (RFC 4480 §3.12); each change of sphere resolves its watchers again.
@Suite struct SphereConditionTests {
    typealias T = GatewayCoreTests
    static let mary = PendingResourceTests.mary

    static func pidf(sphere: String) -> [UInt8] {
        Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" \
            xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="\(mary)">
            <tuple id="t1"><status><basic>open</basic></status></tuple>
            <dm:person id="p1"><rpid:activities><rpid:busy/></rpid:activities><rpid:sphere>\(sphere)</rpid:sphere></dm:person>
            </presence>
            """.utf8)
    }

    @Test func parsedAndDecided() throws {
        let rules = try PresRules(bytes: Array("""
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules">
              <cr:rule id="w"><cr:conditions><cr:sphere value="work  office"/></cr:conditions>
                <cr:actions><pr:sub-handling>allow</pr:sub-handling></cr:actions></cr:rule></cr:ruleset>
            """.utf8))
        let watcher = WatcherIdentity(uri: "sip:carol@contoso.com", network: .sameEnterprise)!
        #expect(rules.dependsOnSphere && rules.rules.first?.spheres == ["work", "office"])
        #expect(rules.subHandling(for: watcher) == nil, "undecided, the rule does not match")
        #expect(rules.decidingSphere("office").subHandling(for: watcher) == .allow)
        #expect(rules.decidingSphere("home").subHandling(for: watcher) == nil)
        #expect(rules.decidingSphere(nil).subHandling(for: watcher) == nil)
        let bad = #expect(throws: XMLError.self) {
            try PresRules(bytes: Array(#"<cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy"><cr:rule id="a"><cr:conditions><cr:sphere value=" "/></cr:conditions></cr:rule></cr:ruleset>"#.utf8))
        }
        #expect(bad?.message.contains("<sphere> needs a value") == true)
    }

    /// Carol is allowed while Mary is at work; otherwise the default (polite-block) decides.
    /// Each NOTIFY that changes Mary's sphere changes what Carol is shown, without a new document.
    @Test func aWatcherFollowsThePresentitysSphere() throws {
        var h = try T.Harness(yaml: PendingResourceTests.marysYAML("polite-block"))
        _ = h.core.replacePresRules(try PresRules(bytes: Array("""
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules">
              <cr:rule id="work"><cr:conditions><cr:identity><cr:one id="sip:carol@contoso.com"/></cr:identity><cr:sphere value="work"/></cr:conditions>
                <cr:actions><pr:sub-handling>allow</pr:sub-handling></cr:actions>
                <cr:transformations><pr:provide-services><pr:all-services/></pr:provide-services>\
            <pr:provide-persons><pr:all-persons/></pr:provide-persons><pr:provide-all-attributes/></cr:transformations></cr:rule></cr:ruleset>
            """.utf8)), of: Self.mary, now: h.now)
        // Before Mary says where she is, the rule does not apply: the leg is politely blocked.
        let (id, legs) = try PendingResourceTests.subscribe(&h, resources: [Self.mary])
        let leg = try #require(legs[Self.mary])
        let (_, first) = h.receive(try T.omaNotify(leg, cseq: 2, body: Self.pidf(sphere: "<rpid:work/>")), from: .oma)
        let ok = try #require(T.responses(first, id).first)
        #expect(T.availability(try T.firstCategories(ok).categories.first).0 == 6500, "at work: allowed, busy")

        func shown(after sphere: String, cseq: Int) throws -> [UInt32?] {
            let (_, actions) = h.receive(try T.omaNotify(leg, cseq: cseq, body: Self.pidf(sphere: sphere)), from: .oma)
            // A BENOTIFY carries the categories alone, or with RLMI in multipart/related.
            return try T.sent(actions, to: .enterprise).flatMap { request, _ -> [[UInt8]] in
                if let multipart = try SIPMessage.request(request).multipartBody() {
                    return multipart.parts.filter { $0.headers.contains { $0.value.contains("msrtc-event-categories") } }.map(\.body)
                }
                return [request.body]
            }.map { T.availability(try CategoriesDocument(bytes: $0)).0 }
        }
        let home = try shown(after: "<rpid:home/>", cseq: 3)
        #expect(home == [nil], "at home: the never-published view: \(home)")
        #expect(try shown(after: "<rpid:home/>", cseq: 4) == [], "nothing changed: nothing sent")
        #expect(try shown(after: "<rpid:work/>", cseq: 5) == [6500], "at work again: busy")
    }
}
