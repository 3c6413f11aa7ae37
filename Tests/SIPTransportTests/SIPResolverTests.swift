import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import SIPMessages
import SIPTransport
import Testing

/// RFC 3263 §4 decisions against a DNS server on 127.0.0.1 serving a small zone.
extension SIPResolver {
    /// The targets for `uri`, or nil when resolution fails (the failure is recorded as an issue).
    func targets(_ uri: String, _ transports: Set<SIPTransportKind>) async -> [SIPResolvedTarget]? {
        do {
            return try await resolve(SIPURI(uri), supporting: transports)
        } catch {
            Issue.record("resolving \(uri) failed: \(error)")
            return nil
        }
    }
}

@Suite struct SIPResolverTests {
    static func naptr(_ owner: DNSName, _ order: UInt16, _ preference: UInt16, _ flags: String, _ services: String,
                      _ replacement: DNSName, regexp: String = "") -> DNSResourceRecord {
        DNSResourceRecord(name: owner, ttl: 300, data: .naptr(DNSNAPTRRecord(
            order: order, preference: preference, flags: flags, services: services, regexp: regexp,
            replacement: replacement)))
    }

    static func srv(_ owner: DNSName, _ priority: UInt16, _ weight: UInt16, _ port: UInt16, _ target: DNSName) -> DNSResourceRecord {
        DNSResourceRecord(name: owner, ttl: 300, data: .srv(DNSSRVRecord(priority: priority, weight: weight, port: port, target: target)))
    }

    static func a(_ owner: DNSName, _ last: UInt8) -> DNSResourceRecord {
        DNSResourceRecord(name: owner, ttl: 300, data: .a(DNSIPv4Address(127, 0, 0, last)))
    }

    static let zone: [DNSResourceRecord] = [
        // The RFC 3263 §4.1 example, received out of order, plus records a SIP client discards:
        // flag "u" (an ENUM-style rule) and an SCTP service.
        naptr("example.com", 100, 50, "s", "SIP+D2U", "_sip._udp.example.com"),
        naptr("example.com", 10, 10, "u", "E2U+sip", ".", regexp: "!^.*$!sip:info@example.com!"),
        naptr("example.com", 90, 50, "s", "SIP+D2T", "_sip._tcp.example.com"),
        naptr("example.com", 20, 10, "s", "SIP+D2S", "_sip._sctp.example.com"),
        naptr("example.com", 50, 50, "s", "SIPS+D2T", "_sips._tcp.example.com"),
        srv("_sips._tcp.example.com", 0, 0, 5061, "tls.example.com"),
        srv("_sip._tcp.example.com", 0, 0, 5060, "tcp.example.com"),
        srv("_sip._udp.example.com", 0, 0, 5060, "udp.example.com"),
        srv("_sip._sctp.example.com", 0, 0, 5060, "sctp.example.com"),
        a("example.com", 5),
        a("tls.example.com", 10),
        DNSResourceRecord(name: "tls.example.com", ttl: 300, data: .aaaa(DNSIPv6Address("2001:db8::10")!)),
        a("tcp.example.com", 11),
        a("udp.example.com", 12),
        a("sctp.example.com", 13),
        // No NAPTR; TCP at two priorities, UDP, and SIPS explicitly unavailable (RFC 2782 ".").
        srv("_sip._tcp.srv.test", 20, 0, 5070, "b.srv.test"),
        srv("_sip._tcp.srv.test", 10, 0, 5060, "a.srv.test"),
        srv("_sip._udp.srv.test", 0, 0, 5060, "a.srv.test"),
        srv("_sips._tcp.srv.test", 0, 0, 0, "."),
        a("a.srv.test", 21),
        a("b.srv.test", 22),
        // Only an address.
        a("aonly.test", 20),
        DNSResourceRecord(name: "alias.test", ttl: 300, data: .cname("aonly.test")),
        // Microsoft federation next to a plain UDP SRV.
        srv("_sipfederationtls._tcp.fed.test", 0, 0, 5061, "sip.fed.test"),
        a("sip.fed.test", 30),
        srv("_sip._udp.fed.test", 0, 0, 5060, "udp.fed.test"),
        a("udp.fed.test", 31),
    ] + (0..<40).map { index in
        // A hostile zone: 40 SRV targets, none with an address.
        srv("_sip._udp.many.test", 0, 1, 5060, DNSName(stringLiteral: "h\(index).many.test"))
    }

    static let all: Set<SIPTransportKind> = [.udp, .tcp, .tls]

    /// Runs `body` with a resolver whose DNS is a fresh fake server for `zone`.
    static func withResolver(
        _ configuration: SIPResolver.Configuration = SIPResolver.Configuration(),
        behaviour: FakeDNSServer.Behaviour = .answer,
        _ body: (SIPResolver, FakeDNSServer) async throws -> Void
    ) async throws {
        let server = try await FakeDNSServer.start(zone: zone, behaviour: behaviour)
        do {
            let client = try DNSClient.forTesting(server)
            try await body(SIPResolver(configuration: configuration, dns: client), server)
        } catch {
            try await server.stop()
            throw error
        }
        try await server.stop()
    }

    static func target(_ kind: SIPTransportKind, _ host: String, _ port: UInt16, _ name: String) -> SIPResolvedTarget {
        SIPResolvedTarget(target: SIPTarget(kind, host: host, port: port), serverName: name)
    }

    static func code(_ body: () async throws -> Void) async -> SIPTransportError.Code? {
        do {
            try await body()
            return nil
        } catch let error as SIPTransportError {
            return error.code
        } catch {
            return nil
        }
    }

    // MARK: - NAPTR, SRV, A

    @Test func naptrRecordsAreFilteredOrderedAndFollowedToSRVAndAddresses() async throws {
        try await Self.withResolver { resolver, _ in
            let targets = try await resolver.resolve(SIPURI("sip:alice@example.com"), supporting: Self.all)
            #expect(targets == [
                Self.target(.tls, "127.0.0.10", 5061, "example.com"),
                Self.target(.tls, "2001:db8::10", 5061, "example.com"),
                Self.target(.tcp, "127.0.0.11", 5060, "example.com"),
                Self.target(.udp, "127.0.0.12", 5060, "example.com"),
            ])
        }
    }

    @Test func naptrServicesTheClientLacksAreDiscarded() async throws {
        try await Self.withResolver { resolver, server in
            let targets = try await resolver.resolve(SIPURI("sip:alice@example.com"), supporting: [.udp])
            #expect(targets == [Self.target(.udp, "127.0.0.12", 5060, "example.com")])
            #expect(!server.questions.contains { $0.name == "_sips._tcp.example.com" })
        }
    }

    @Test func sipsURIsUseOnlySIPSD2TFromNAPTR() async throws {
        try await Self.withResolver { resolver, _ in
            let targets = try await resolver.resolve(SIPURI("sips:alice@example.com"), supporting: Self.all)
            #expect(targets.map(\.target.kind) == [.tls, .tls])
            #expect(targets.first == Self.target(.tls, "127.0.0.10", 5061, "example.com"))
        }
    }

    @Test func withoutNAPTRTheSRVQueriesGoSIPSThenTCPThenUDPInPriorityOrder() async throws {
        try await Self.withResolver { resolver, server in
            let targets = try await resolver.resolve(SIPURI("sip:bob@srv.test"), supporting: Self.all)
            #expect(targets == [
                Self.target(.tcp, "127.0.0.21", 5060, "srv.test"),
                Self.target(.tcp, "127.0.0.22", 5070, "srv.test"),
                Self.target(.udp, "127.0.0.21", 5060, "srv.test"),
            ])
            let srvQueries = server.questions.filter { $0.type == .srv }.map(\.name)
            #expect(srvQueries == ["_sips._tcp.srv.test", "_sip._tcp.srv.test", "_sip._udp.srv.test"])
        }
    }

    @Test func anSRVTargetOfDotMeansNoServiceAndSIPSFailsWithoutAddresses() async throws {
        try await Self.withResolver { resolver, _ in
            let code = await Self.code { _ = try await resolver.resolve(SIPURI("sips:bob@srv.test"), supporting: Self.all) }
            #expect(code == .noTargets)
        }
    }

    @Test func withoutNAPTRAndSRVTheAddressIsUsedWithTheDefaultPort() async throws {
        try await Self.withResolver { resolver, _ in
            #expect(await resolver.targets("sip:carol@aonly.test", Self.all)
                == [Self.target(.udp, "127.0.0.20", 5060, "aonly.test")])
            #expect(await resolver.targets("sips:carol@aonly.test", Self.all)
                == [Self.target(.tls, "127.0.0.20", 5061, "aonly.test")])
            // RFC 3263 §4.1 says UDP for sip:; a client without UDP uses TCP.
            #expect(await resolver.targets("sip:carol@aonly.test", [.tcp, .tls])
                == [Self.target(.tcp, "127.0.0.20", 5060, "aonly.test")])
        }
    }

    @Test func aliasesAreFollowedButTheServerNameStaysTheURIDomain() async throws {
        try await Self.withResolver { resolver, _ in
            #expect(await resolver.targets("sip:carol@alias.test", Self.all)
                == [Self.target(.udp, "127.0.0.20", 5060, "alias.test")])
        }
    }

    // MARK: - Port, transport, maddr, IP

    @Test func aPortInTheURISkipsNAPTRAndSRV() async throws {
        try await Self.withResolver { resolver, server in
            let targets = try await resolver.resolve(SIPURI("sip:alice@example.com:5070"), supporting: Self.all)
            #expect(targets == [Self.target(.udp, "127.0.0.5", 5070, "example.com")])
            #expect(Set(server.questions.map(\.type)) == [.a, .aaaa])
        }
    }

    @Test func aTransportParameterQueriesSRVForThatTransportOnly() async throws {
        try await Self.withResolver { resolver, server in
            #expect(await resolver.targets("sip:alice@example.com;transport=tcp", Self.all)
                == [Self.target(.tcp, "127.0.0.11", 5060, "example.com")])
            #expect(!server.questions.contains { $0.type == .naptr })
            // RFC 3263 §4.2: TLS uses "_sips", and so does TCP for a SIPS URI.
            #expect(await resolver.targets("sip:alice@example.com;transport=tls", Self.all)?.first
                == Self.target(.tls, "127.0.0.10", 5061, "example.com"))
            #expect(await resolver.targets("sips:alice@example.com;transport=tcp", Self.all)?.first
                == Self.target(.tls, "127.0.0.10", 5061, "example.com"))
        }
    }

    @Test func aTransportParameterWithoutSRVFallsBackToAddressesAndTheDefaultPort() async throws {
        try await Self.withResolver { resolver, _ in
            #expect(await resolver.targets("sip:carol@aonly.test;transport=TCP", Self.all)
                == [Self.target(.tcp, "127.0.0.20", 5060, "aonly.test")])
        }
    }

    @Test func maddrReplacesTheHostAsTheTarget() async throws {
        try await Self.withResolver { resolver, server in
            #expect(await resolver.targets("sip:alice@example.com;maddr=127.0.0.7", Self.all)
                == [Self.target(.udp, "127.0.0.7", 5060, "127.0.0.7")])
            #expect(server.questions.isEmpty)
            #expect(await resolver.targets("sip:alice@example.com:5090;maddr=aonly.test", Self.all)
                == [Self.target(.udp, "127.0.0.20", 5090, "aonly.test")])
        }
    }

    @Test func numericHostsNeedNoDNS() async throws {
        let resolver = SIPResolver(dns: nil)
        #expect(await resolver.targets("sip:127.0.0.1", Self.all)
            == [Self.target(.udp, "127.0.0.1", 5060, "127.0.0.1")])
        #expect(await resolver.targets("sip:alice@127.0.0.1:5080;transport=tcp", Self.all)
            == [Self.target(.tcp, "127.0.0.1", 5080, "127.0.0.1")])
        #expect(await resolver.targets("sips:[::1]", Self.all)
            == [Self.target(.tls, "::1", 5061, "::1")])
        #expect(await resolver.targets("sip:[2001:DB8:0::1]:5062", Self.all)
            == [Self.target(.udp, "2001:db8::1", 5062, "2001:db8::1")])
    }

    @Test func transportsTheCallerLacksOrSIPSOverUDPAreRefused() async throws {
        let resolver = SIPResolver(dns: nil)
        #expect(await Self.code { _ = try await resolver.resolve(SIPURI("sip:127.0.0.1;transport=tcp"), supporting: [.udp]) }
            == .unsupportedTransport)
        #expect(await Self.code { _ = try await resolver.resolve(SIPURI("sips:127.0.0.1;transport=udp"), supporting: Self.all) }
            == .unsupportedTransport)
        #expect(await Self.code { _ = try await resolver.resolve(SIPURI("sip:127.0.0.1;transport=sctp"), supporting: Self.all) }
            == .unsupportedTransport)
        #expect(await Self.code { _ = try await resolver.resolve(SIPURI("sips:example.com"), supporting: [.udp, .tcp]) }
            == .unsupportedTransport)
        #expect(await Self.code { _ = try await resolver.resolve(SIPURI("tel:+15551234"), supporting: Self.all) }
            == .invalidTarget)
    }

    // MARK: - Federation and overrides

    @Test func federationModeLooksUpSipFederationTLSFirst() async throws {
        try await Self.withResolver(SIPResolver.Configuration(mode: .microsoftFederation)) { resolver, server in
            #expect(await resolver.targets("sip:dave@fed.test", Self.all)
                == [Self.target(.tls, "127.0.0.30", 5061, "sip.fed.test")])
            #expect(server.questions.first == DNSQuestion(name: "_sipfederationtls._tcp.fed.test", type: .srv))
        }
    }

    @Test func federationModeFallsBackToRFC3263WhenThereIsNoFederationRecord() async throws {
        try await Self.withResolver(SIPResolver.Configuration(mode: .microsoftFederation)) { resolver, _ in
            #expect(await resolver.targets("sip:carol@aonly.test", Self.all)
                == [Self.target(.udp, "127.0.0.20", 5060, "aonly.test")])
        }
    }

    @Test func withoutFederationModeTheFederationRecordIsNotUsed() async throws {
        try await Self.withResolver { resolver, server in
            #expect(await resolver.targets("sip:dave@fed.test", Self.all)
                == [Self.target(.udp, "127.0.0.31", 5060, "fed.test")])
            #expect(!server.questions.contains { $0.name == "_sipfederationtls._tcp.fed.test" })
        }
    }

    @Test func aStaticOverrideWinsOverDNS() async throws {
        let overrides: [String: [SIPTarget]] = [
            "Example.COM.": [
                SIPTarget(.tls, host: "127.0.0.99", port: 5061),
                SIPTarget(.udp, host: "127.0.0.98", port: 5060),
                SIPTarget(.tcp, host: "aonly.test", port: 5090),
            ],
        ]
        try await Self.withResolver(SIPResolver.Configuration(overrides: overrides)) { resolver, server in
            #expect(await resolver.targets("sip:alice@example.com", Self.all) == [
                Self.target(.tls, "127.0.0.99", 5061, "example.com"),
                Self.target(.udp, "127.0.0.98", 5060, "example.com"),
                Self.target(.tcp, "127.0.0.20", 5090, "example.com"),
            ])
            #expect(server.questions.allSatisfy { $0.name == "aonly.test" })
            #expect(await resolver.targets("sip:alice@example.com", [.udp])
                == [Self.target(.udp, "127.0.0.98", 5060, "example.com")])
            #expect(await resolver.targets("sips:alice@example.com", Self.all)
                == [Self.target(.tls, "127.0.0.99", 5061, "example.com")])
        }
    }

    @Test func theConvenienceInitializerQueriesTheGivenNameservers() async throws {
        let server = try await FakeDNSServer.start(zone: Self.zone)
        let resolver = SIPResolver(
            dnsConfiguration: DNSClient.Configuration(nameservers: [try server.address], timeout: .seconds(5), attempts: 1),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        #expect(await resolver.targets("sip:carol@aonly.test", Self.all) == [Self.target(.udp, "127.0.0.20", 5060, "aonly.test")])
        #expect(!server.questions.isEmpty)
        try await server.stop()
    }

    @Test func overridesAndIPLiteralsWorkWithoutDNS() async throws {
        let resolver = SIPResolver(
            configuration: SIPResolver.Configuration(overrides: ["partner.test": [SIPTarget(.tls, host: "127.0.0.40", port: 5061)]]),
            dns: nil)
        #expect(await resolver.targets("sip:x@partner.test", Self.all)
            == [Self.target(.tls, "127.0.0.40", 5061, "partner.test")])
        #expect(await Self.code { _ = try await resolver.resolve(SIPURI("sip:x@other.test"), supporting: Self.all) } == .noTargets)
    }

    // MARK: - Failures

    @Test func aSilentNameserverMakesResolutionFailWithTimeout() async throws {
        try await Self.withResolver(behaviour: .silent) { resolver, server in
            let code = await Self.code { _ = try await resolver.resolve(SIPURI("sip:alice@example.com"), supporting: [.udp]) }
            #expect(code == .dnsTimeout)
            #expect(!server.questions.isEmpty)
        }
    }

    @Test func maxLookupsBoundsTheQueriesAHostileZoneCanCause() async throws {
        try await Self.withResolver(SIPResolver.Configuration(maxLookups: 10)) { resolver, server in
            let code = await Self.code { _ = try await resolver.resolve(SIPURI("sip:x@many.test"), supporting: [.udp]) }
            #expect(code == .dnsLimitExceeded)
            #expect(server.questions.count == 10)
        }
    }

    @Test func aHostThatIsNeitherAnIPLiteralNorANameIsInvalid() async throws {
        let resolver = SIPResolver(dns: nil)
        let uri = SIPURI(scheme: .sip, host: "[fe80::1%eth0]")
        #expect(await Self.code { _ = try await resolver.resolve(uri, supporting: Self.all) } == .invalidTarget)
    }

    @Test func maxTargetsBoundsTheList() async throws {
        try await Self.withResolver(SIPResolver.Configuration(maxTargets: 2)) { resolver, _ in
            #expect(await resolver.targets("sip:alice@example.com", Self.all)?.count == 2)
        }
    }
}
