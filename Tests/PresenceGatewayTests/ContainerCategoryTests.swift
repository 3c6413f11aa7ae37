import NIOCore
import PresenceDocuments
import MSPresenceEvents
import PresenceGateway
import PresenceMapping
import SIPMessages
import Testing

/// Per-container category selection for the OMA presentities the gateway serves (docs/flows.md,
/// "Containers and polite blocking"):
/// each mapped category is placed only in the containers that expose it, and each watcher is
/// resolved per category by [MS-PRES] §3.2.5.3 (rule 7: no container holds it → empty element).
@Suite struct ContainerCategoryTests {
    static let yaml = """
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1, port: 5060 }
          - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 5061 }
        enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:5062;transport=tcp" }
        oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:5070;transport=udp" }
        presentities:
          default:
            defaults: { sameEnterprise: allow, federated: allow, publicCloud: allow }
            containers:
              100: { members: [federated], categories: [state] }
              200: { members: [sameEnterprise], categories: [state, note, contactCard] }
              300: { members: ["sip:boss@contoso.com", "domain:fabrikam.com"], categories: all }
              400: { members: [everyone], categories: [contactCard] }
              32000: { members: ["sip:ex@contoso.com"], categories: none }
        """

    static func watcher(_ uri: String, _ network: SourceNetwork) -> WatcherIdentity {
        guard let w = WatcherIdentity(uri: uri, network: network) else { fatalError("bad test URI \(uri)") }
        return w
    }

    /// The OMA state as the mapper gives it: state, note and contactCard.
    static let state: [Category] = [
        Category(name: .state, instance: 0, payload: .state(MSState(type: .aggregateState, availability: 15500))),
        Category(name: .note, instance: 0, payload: .note(MSNote(bodies: [MSNote.Body(text: "back at 3")]))),
        Category(name: .contactCard, instance: 0, payload: .contactCard(ContactCard(displayNames: [.init("John")]))),
    ]
    static let wanted: [CategoryName] = [.state, .note, .contactCard]

    /// The categories `watcher` sees with data, in the order asked.
    static func visible(_ policy: PresentityPolicy, _ watcher: WatcherIdentity) throws -> [CategoryName] {
        let published = policy.containers.publications(of: state, wanted: wanted)
        let view = try #require(policy.view(of: published, uri: "sip:john@oma.example", for: watcher, categories: wanted))
        #expect(view.categories.map(\.name) == wanted)
        return view.categories.filter { $0.payload != nil }.map(\.name)
    }

    @Test func watchersOfEachMemberTypeSeeTheCategoriesOfTheirContainer() throws {
        let policy = try GatewayConfiguration(yaml: Self.yaml).defaultPolicy
        // user member (300, all) beats the watcher's sameEnterprise container (200).
        #expect(try Self.visible(policy, Self.watcher("sip:boss@contoso.com", .sameEnterprise)) == [.state, .note, .contactCard])
        // domain member (300) beats the federated container (100).
        #expect(try Self.visible(policy, Self.watcher("sip:ann@sales.fabrikam.com", .federated)) == [.state, .note, .contactCard])
        // sameEnterprise (200): state, note, contactCard.
        #expect(try Self.visible(policy, Self.watcher("sip:carol@contoso.com", .sameEnterprise)) == [.state, .note, .contactCard])
        // federated (100): state from 100; no note anywhere it matches; contactCard from 400 (everyone).
        #expect(try Self.visible(policy, Self.watcher("sip:dave@partner.example", .federated)) == [.state, .contactCard])
        // publicCloud: no publicCloud container; only the everyone container's contactCard.
        #expect(try Self.visible(policy, Self.watcher("sip:eve@cloud.example", .publicCloud)) == [.contactCard])
    }

    @Test func containerWithNoCategoriesShowsItsMembersTheNeverPublishedBytes() throws {
        let policy = try GatewayConfiguration(yaml: Self.yaml).defaultPolicy
        let ex = Self.watcher("sip:ex@contoso.com", .sameEnterprise)
        let published = policy.containers.publications(of: Self.state, wanted: Self.wanted)
        let view = try #require(policy.view(of: published, uri: "sip:john@oma.example", for: ex, categories: Self.wanted))
        // Exactly the document of a presentity that never published (the polite-block view).
        let open = PresentityPolicy(defaults: [.sameEnterprise: .allow])
        let never = try #require(open.view(of: [], uri: "sip:john@oma.example", for: ex, categories: Self.wanted))
        #expect(view.serialized() == never.serialized())
        #expect(view.categories == Self.wanted.map { Category(name: $0) })
    }

    @Test func politeBlockStaysTheNeverPublishedViewWithCategorySelection() throws {
        var policy = try GatewayConfiguration(yaml: Self.yaml).defaultPolicy
        policy.defaults[.federated] = .politeBlock
        let dave = Self.watcher("sip:dave@partner.example", .federated)
        let published = policy.containers.publications(of: Self.state, wanted: Self.wanted)
        let blocked = try #require(policy.view(of: published, uri: "sip:john@oma.example", for: dave, categories: Self.wanted))
        let nothing = policy.containers.publications(of: nil, wanted: Self.wanted)
        var allowed = policy
        allowed.defaults[.federated] = .allow
        let never = try #require(allowed.view(of: nothing, uri: "sip:john@oma.example", for: dave, categories: Self.wanted))
        #expect(blocked.serialized() == never.serialized())
        #expect(blocked.categories == Self.wanted.map { Category(name: $0) })
    }

    @Test func containersListedByMembersOnlyTakeTheWellKnownSelection() throws {
        let yaml = Self.yaml.replacingOccurrences(of: """
              100: { members: [federated], categories: [state] }
            """, with: """
              100: [federated]
            """).replacingOccurrences(of: """
              32000: { members: ["sip:ex@contoso.com"], categories: none }
            """, with: """
              32000: ["sip:ex@contoso.com"]
            """)
        let containers = try GatewayConfiguration(yaml: yaml).defaultPolicy.containers
        #expect(containers.exposure(of: 100) == .only([.state, .contactCard]))
        #expect(containers.exposure(of: 32000) == .neverPublished)
        #expect(containers.exposure(of: 300) == .all)
        #expect(containers.members[100] == [.federated])
    }

    @Test(arguments: [
        ("categories: [legacyInterop]", "private category"),
        ("categories: [\"bad name\"]", "not a category name"),
        ("categories: some", "'some' is not a list of categories"),
        ("colour: red", "unknown key 'colour'"),
    ])
    func badContainerCategoriesAreLocatedErrors(entry: String, message: String) throws {
        let yaml = Self.yaml.replacingOccurrences(of: "100: { members: [federated], categories: [state] }",
                                                  with: "100: { members: [federated], \(entry) }")
        let error = #expect(throws: ConfigurationError.self) { try GatewayConfiguration(yaml: yaml) }
        #expect(error?.description.contains(message) == true)
        // Located at the container's line (1-based).
        let line = yaml.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains("100: {") }.map { $0 + 1 }
        #expect(error?.line == line)
    }

    @Test func enterpriseWatchersOfTheSameOMAPresentitySeeDifferentCategories() throws {
        var h = try GatewayCoreTests.Harness(yaml: Self.yaml)
        let pidf = Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" \
            xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="sip:john@oma.example">
            <tuple id="t1"><status><basic>open</basic></status></tuple>
            <dm:person id="p1"><rpid:activities><rpid:away/></rpid:activities><dm:note>back at 3</dm:note></dm:person>
            </presence>
            """.utf8)
        func firstAnswer(_ from: String, _ network: SourceNetwork) throws -> CategoriesDocument {
            let (id, actions) = h.receive(try GatewayCoreTests.enterpriseSubscribe(resources: ["sip:john@oma.example"], from: from),
                                          from: .enterprise, network: network)
            let (subscribe, context) = try #require(GatewayCoreTests.sent(actions, to: .oma).first)
            _ = h.core.receive(SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "kam1",
                                           headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                               to: subscribe, context: context, now: h.now)
            let (_, answered) = h.receive(try GatewayCoreTests.omaNotify(subscribe, cseq: 2, body: pidf), from: .oma)
            let ok = try #require(GatewayCoreTests.responses(answered, id).first)
            return try #require(try GatewayCoreTests.firstCategories(ok).categories.first)
        }
        let colleague = try firstAnswer("sip:carol@contoso.com", .sameEnterprise)
        let partner = try firstAnswer("sip:dave@partner.example", .federated)
        func named(_ d: CategoriesDocument, _ n: CategoryName) -> Category? { d.categories.first { $0.name == n } }
        // Both see the state (RPID away → 15500) ...
        #expect(GatewayCoreTests.availability(colleague).0 == 15500)
        #expect(GatewayCoreTests.availability(partner).0 == 15500)
        // ... only the colleague sees the note; the federated watcher gets it empty (rule 7).
        #expect(named(colleague, .note)?.payload != nil)
        #expect(named(partner, .note) == Category(name: .note))
    }
}
