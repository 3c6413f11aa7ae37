import PresenceGateway
import Testing

/// [MS-PRES] §3.2.5.3 container resolution and the decisions in docs/flows.md.
@Suite struct ContainerResolutionTests {
    static func watcher(_ uri: String, _ network: SourceNetwork = .federated) -> WatcherIdentity {
        guard let w = WatcherIdentity(uri: uri, network: network) else { fatalError("bad test URI \(uri)") }
        return w
    }

    let containers = ContainerSet([
        100: [.federated],
        200: [.sameEnterprise],
        300: [.user("sip:alice@fabrikam.com")],
        400: [.sameEnterprise, .domain("contoso.com")],
        32000: [.user("sip:mallory@fabrikam.com")],
    ])

    @Test func userMemberBeatsAHigherContainerOfAWeakerType() {
        // Guide §5: "a URI-listed subscriber in container 300 beats a sameEnterprise rule in 400".
        let alice = Self.watcher("sip:alice@fabrikam.com", .sameEnterprise)
        #expect(containers.resolve(alice, holding: [0, 100, 200, 300, 400]) == 300)
    }

    @Test func domainBeatsNetworkAndHighestContainerWinsWithinAType() {
        let bob = Self.watcher("<sip:bob@Contoso.COM>;tag=1", .sameEnterprise)
        #expect(containers.resolve(bob, holding: [0, 200, 400]) == 400)
        let carol = Self.watcher("sip:carol@litware.com", .sameEnterprise)
        // Both 200 and 400 list sameEnterprise: the higher number wins.
        #expect(containers.resolve(carol, holding: [0, 200, 400]) == 400)
        #expect(containers.resolve(carol, holding: [0, 100, 200]) == 200)
    }

    @Test func onlyContainersHoldingTheCategoryTakePart() {
        let alice = Self.watcher("sip:alice@fabrikam.com")
        // alice is listed in 300, but 300 holds no publication of this category.
        #expect(containers.resolve(alice, holding: [0, 100]) == 100)
        #expect(containers.resolve(alice, holding: [0]) == 0)
        #expect(containers.resolve(alice, holding: [200]) == nil)
        #expect(containers.resolve(alice, holding: []) == nil)
    }

    @Test func networkTypesMatchOnlyTheirNetwork() {
        let holding: Set<UInt32> = [100, 200]
        #expect(containers.resolve(Self.watcher("sip:x@a.example", .federated), holding: holding) == 100)
        #expect(containers.resolve(Self.watcher("sip:x@a.example", .sameEnterprise), holding: holding) == 200)
        #expect(containers.resolve(Self.watcher("sip:x@a.example", .publicCloud), holding: holding) == nil)
    }

    @Test func everyoneRanksAfterTheNetworkTypesAndBeforeContainerZero() {
        let set = ContainerSet([50: [.everyone], 100: [.federated]])
        #expect(set.resolve(Self.watcher("sip:x@a.example", .federated), holding: [0, 50, 100]) == 100)
        #expect(set.resolve(Self.watcher("sip:x@a.example", .publicCloud), holding: [0, 50, 100]) == 50)
        #expect(set.resolve(Self.watcher("sip:x@a.example", .publicCloud), holding: [0, 100]) == 0)
    }

    @Test func domainMembersCoverSubdomainsOnLabelBoundaries() {
        let set = ContainerSet([300: [.domain("contoso.com")]])
        #expect(set.resolve(Self.watcher("sip:a@eu.contoso.com"), holding: [300]) == 300)
        #expect(set.resolve(Self.watcher("sip:a@contoso.com"), holding: [300]) == 300)
        #expect(set.resolve(Self.watcher("sip:a@notcontoso.com"), holding: [300]) == nil)
    }

    @Test func membersAreReadFromTheirSchemaForm() {
        #expect(ContainerMember(type: "user", value: "sip:Alice@Fabrikam.com") == .user("sip:Alice@fabrikam.com"))
        #expect(ContainerMember(type: "domain", value: "Contoso.com") == .domain("contoso.com"))
        #expect(ContainerMember(type: "everyone", value: nil) == .everyone)
        #expect(ContainerMember(type: "user", value: nil) == nil)
        #expect(ContainerMember(type: "friends", value: nil) == nil)
    }
}
