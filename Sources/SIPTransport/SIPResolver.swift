public import NIOCore
public import SIPMessages

/// Finds the ordered list of targets to try for a SIP or SIPS URI (RFC 3263 §4).
///
/// The decisions, in order (TARGET is `maddr` when present, else the host, RFC 3263 §4):
///
/// 1. A numeric IP TARGET is used as is: port from the URI or the transport's default; the
///    transport from the `transport` parameter, else UDP for sip: (TCP when UDP is not
///    supported) and TLS for sips: (§4.1, §4.2).
/// 2. A static override for the domain (``Configuration/overrides``) replaces DNS.
/// 3. A port in the URI: A/AAAA lookups of TARGET (§4.2).
/// 4. A `transport` parameter: SRV for that transport (`_sip._udp`, `_sip._tcp`, `_sips._tcp`
///    for TLS or a sips: URI), else A/AAAA with the default port (§4.2).
/// 5. Otherwise, in ``Mode/microsoftFederation``: SRV `_sipfederationtls._tcp` (TLS) first.
/// 6. NAPTR (§4.1): services `SIPS+D2T`, `SIP+D2T`, `SIP+D2U` the caller supports (only
///    `SIPS+D2T` for sips:), flag `S`, ordered by order then preference; each replacement is an
///    SRV name. Records with other flags or services are discarded.
/// 7. Without usable NAPTR records: SRV `_sips._tcp`, `_sip._tcp`, `_sip._udp` in that order
///    (sips: only `_sips._tcp`), for the supported transports (§4.1).
/// 8. Without SRV records: A/AAAA with the default port, UDP for sip: (TCP when UDP is not
///    supported), TLS for sips: (§4.1, §4.2).
///
/// SRV records are ordered per RFC 2782 (``orderSRV(_:random:)``); a lone SRV record with
/// target `.` means no service. Every target found along the chosen path is returned, in order,
/// so the caller can fail over (§4.3); duplicates are dropped, at most
/// ``Configuration/maxTargets`` are returned and at most ``Configuration/maxLookups`` lookups made.
///
/// Deviation, on purpose: when NAPTR records exist but none is usable, or their SRV names give
/// no address, resolution continues with step 7 rather than failing.
///
/// Errors (``SIPTransportError``): `invalid-target` (not sip:/sips:, or a malformed host),
/// `unsupported-transport` (the `transport` parameter names a transport the caller lacks, or
/// sips: over UDP), `no-targets` (nothing found). A DNS failure (`dns-timeout`,
/// `dns-server-failure`, ...) is thrown only when no target was found at all.
public final class SIPResolver: Sendable {
    public let configuration: Configuration
    let dns: (any DNSLookup)?
    let overrides: [DNSName: [SIPTarget]]

    /// - Parameter dns: where lookups go; nil resolves IP literals and overrides only.
    public init(configuration: Configuration = Configuration(), dns: (any DNSLookup)?) {
        self.configuration = configuration
        self.dns = dns
        var table: [DNSName: [SIPTarget]] = [:]
        for (domain, targets) in configuration.overrides {
            if let name = try? DNSName(domain), !name.isRoot { table[name, default: []] += targets }
        }
        self.overrides = table
    }

    /// A resolver whose lookups go to a ``DNSClient`` with `dnsConfiguration`, e.g.
    /// `try DNSClient.Configuration.system()` for the nameservers of /etc/resolv.conf.
    public convenience init(
        configuration: Configuration = Configuration(), dnsConfiguration: DNSClient.Configuration,
        eventLoopGroup: any EventLoopGroup, cache: DNSCache = DNSCache()
    ) {
        self.init(
            configuration: configuration,
            dns: DNSClient(configuration: dnsConfiguration, eventLoopGroup: eventLoopGroup, cache: cache))
    }

    /// The targets to try for `uri`, in order, given the transports this side supports.
    public func resolve(_ uri: SIPURI, supporting transports: Set<SIPTransportKind>) async throws(SIPTransportError)
        -> [SIPResolvedTarget]
    {
        guard uri.isSIP else {
            throw SIPTransportError(.invalidTarget, "only sip: and sips: URIs are resolved, not \(uri.scheme):")
        }
        let secure = uri.scheme == .sips
        let allowed = secure ? transports.intersection([.tls]) : transports
        guard !allowed.isEmpty else {
            throw SIPTransportError(.unsupportedTransport, secure ? "a sips: URI needs TLS" : "no transport supported")
        }
        var explicit: SIPTransportKind?
        if let parameter = uri.transport {
            explicit = try Self.kind(forTransportParameter: parameter, secure: secure, allowed: allowed)
        }
        let targetText = Self.stripBrackets(uri.maddr ?? uri.host)

        if let literal = Self.ipLiteral(targetText) {
            let kind = explicit ?? Self.defaultKind(secure: secure, allowed: allowed)
            return [
                SIPResolvedTarget(
                    target: SIPTarget(kind, host: literal, port: uri.port ?? kind.defaultPort),
                    serverName: literal)
            ]
        }
        // A name never contains ":"; this is a malformed IPv6 reference or one with a zone index.
        guard !targetText.contains(":") else {
            throw SIPTransportError(.invalidTarget, "host \"\(targetText)\" is neither an IP literal nor a domain name")
        }
        let domain: DNSName
        do {
            domain = try DNSName(targetText)
        } catch {
            throw SIPTransportError(.invalidTarget, "host \"\(targetText)\" is not a domain name: \(error)")
        }
        guard !domain.isRoot else { throw SIPTransportError(.invalidTarget, "empty host in \(uri)") }
        let serverName = domain.description.lowercased()
        var run = Run(resolver: self, serverName: serverName)

        // Overrides replace DNS entirely; the URI's port and the transport parameter's SRV step
        // do not apply (a transport parameter still filters the entries).
        if let entries = overrides[domain] {
            for entry in entries where allowed.contains(entry.kind) && (explicit == nil || entry.kind == explicit) {
                let host = Self.stripBrackets(entry.host)
                if let literal = Self.ipLiteral(host) {
                    run.append(SIPTarget(entry.kind, host: literal, port: entry.port))
                } else if let name = try? DNSName(host), !name.isRoot {
                    await run.addresses(of: name, port: entry.port, kind: entry.kind)
                }
            }
            return try run.finish(uri)
        }

        if let port = uri.port {
            await run.addresses(
                of: domain, port: port, kind: explicit ?? Self.defaultKind(secure: secure, allowed: allowed))
            return try run.finish(uri)
        }

        if let kind = explicit {
            await run.srv(Self.service(for: kind, secure: secure), domain, kind: kind)
            if run.isEmpty { await run.addresses(of: domain, port: kind.defaultPort, kind: kind) }
            return try run.finish(uri)
        }

        if configuration.mode == .microsoftFederation, allowed.contains(.tls) {
            await run.srv("_sipfederationtls._tcp", domain, kind: .tls, serverNameFromTarget: true)
            if !run.isEmpty { return try run.finish(uri) }
        }

        await run.naptr(domain, secure: secure, allowed: allowed)
        if !run.isEmpty { return try run.finish(uri) }

        for kind in [SIPTransportKind.tls, .tcp, .udp] where allowed.contains(kind) {
            await run.srv(Self.service(for: kind, secure: secure), domain, kind: kind)
        }
        if !run.isEmpty { return try run.finish(uri) }

        let kind = Self.defaultKind(secure: secure, allowed: allowed)
        await run.addresses(of: domain, port: kind.defaultPort, kind: kind)
        return try run.finish(uri)
    }

    // MARK: - Decisions

    /// The transport of a `transport` uri-parameter (RFC 3261 §19.1.1): `tcp` on a sips: URI
    /// is TLS; `udp` on a sips: URI is refused (RFC 3261 §26.2.2: SIPS runs over TLS).
    static func kind(forTransportParameter parameter: String, secure: Bool, allowed: Set<SIPTransportKind>)
        throws(SIPTransportError) -> SIPTransportKind
    {
        let kind: SIPTransportKind
        switch parameter.lowercased() {
        case "udp":
            guard !secure else { throw SIPTransportError(.unsupportedTransport, "sips: over UDP is not possible") }
            kind = .udp
        case "tcp": kind = secure ? .tls : .tcp
        case "tls": kind = .tls
        default: throw SIPTransportError(.unsupportedTransport, "transport=\(parameter) is not supported")
        }
        guard allowed.contains(kind) else {
            throw SIPTransportError(
                .unsupportedTransport, "transport=\(parameter) needs \(kind), which is not supported")
        }
        return kind
    }

    /// UDP for sip: (SHOULD, RFC 3263 §4.1), falling back to TCP and then TLS when the caller
    /// lacks it; TLS for sips:.
    static func defaultKind(secure: Bool, allowed: Set<SIPTransportKind>) -> SIPTransportKind {
        if secure { return .tls }
        for kind in [SIPTransportKind.udp, .tcp, .tls] where allowed.contains(kind) { return kind }
        return .udp
    }

    /// The SRV service and protocol labels (RFC 3263 §4.2: "_sips" for SIPS URIs and for TLS).
    static func service(for kind: SIPTransportKind, secure: Bool) -> String {
        switch kind {
        case .udp: "_sip._udp"
        case .tcp: secure ? "_sips._tcp" : "_sip._tcp"
        case .tls: "_sips._tcp"
        }
    }

    /// The NAPTR service field for a transport (RFC 3263 §4.1, RFC 3263 §10.1).
    static func naptrService(_ services: [UInt8]) -> SIPTransportKind? {
        switch String(decoding: services, as: UTF8.self).uppercased() {
        case "SIP+D2U": .udp
        case "SIP+D2T": .tcp
        case "SIPS+D2T": .tls
        default: nil
        }
    }

    static func stripBrackets(_ host: String) -> String {
        if host.hasPrefix("["), host.hasSuffix("]"), host.count >= 2 { return String(host.dropFirst().dropLast()) }
        return host
    }

    /// The canonical text of an IPv4 or IPv6 literal, nil for a name.
    static func ipLiteral(_ host: String) -> String? {
        if let v4 = DNSIPv4Address(host) { return v4.description }
        if let v6 = DNSIPv6Address(host) { return v6.description }
        return nil
    }
}

extension SIPResolver {
    /// The state of one resolution: targets found so far and the first DNS error.
    struct Run {
        let resolver: SIPResolver
        let serverName: String
        var targets: [SIPResolvedTarget] = []
        var seen: Set<SIPResolvedTarget> = []
        var firstError: SIPTransportError?
        var lookups = 0

        init(resolver: SIPResolver, serverName: String) {
            self.resolver = resolver
            self.serverName = serverName
        }

        var isEmpty: Bool { targets.isEmpty }
        var isFull: Bool { targets.count >= resolver.configuration.maxTargets }

        mutating func append(_ target: SIPTarget, serverName name: String? = nil) {
            guard !isFull else { return }
            let resolved = SIPResolvedTarget(target: target, serverName: name ?? serverName)
            if seen.insert(resolved).inserted { targets.append(resolved) }
        }

        mutating func lookup(_ name: DNSName, _ type: DNSRecordType) async -> [DNSResourceRecord] {
            guard lookups < resolver.configuration.maxLookups else {
                if firstError == nil {
                    firstError = SIPTransportError(
                        .dnsLimitExceeded, "more than \(resolver.configuration.maxLookups) lookups for one resolution")
                }
                return []
            }
            lookups += 1
            guard let dns = resolver.dns else {
                if firstError == nil {
                    firstError = SIPTransportError(.noTargets, "no DNS configured to look up \(name) \(type)")
                }
                return []
            }
            do {
                return try await dns.lookup(name, type)
            } catch {
                if firstError == nil { firstError = error }
                return []
            }
        }

        /// A/AAAA of `name`, in the configured order of types (RFC 3263 §4.2).
        mutating func addresses(of name: DNSName, port: UInt16, kind: SIPTransportKind, serverName: String? = nil) async
        {
            for type in resolver.configuration.addressTypes where !isFull {
                for record in await lookup(name, type) {
                    switch record.data {
                    case .a(let address):
                        append(SIPTarget(kind, host: address.description, port: port), serverName: serverName)
                    case .aaaa(let address):
                        append(SIPTarget(kind, host: address.description, port: port), serverName: serverName)
                    default: break
                    }
                }
            }
        }

        /// SRV for `service.domain`, ordered per RFC 2782, each target's addresses in turn.
        mutating func srv(
            _ service: String, _ domain: DNSName, kind: SIPTransportKind, serverNameFromTarget: Bool = false
        ) async {
            guard let name = try? domain.prepending(service) else { return }
            await srv(name, kind: kind, serverNameFromTarget: serverNameFromTarget)
        }

        mutating func srv(_ name: DNSName, kind: SIPTransportKind, serverNameFromTarget: Bool = false) async {
            let records = await lookup(name, .srv).compactMap { record -> DNSSRVRecord? in
                if case .srv(let srv) = record.data { return srv }
                return nil
            }
            // RFC 2782: a target of "." means the service is decidedly not available.
            let usable = records.filter { !$0.target.isRoot }
            for record in SIPResolver.orderSRV(usable, random: resolver.configuration.random) where !isFull {
                let name = serverNameFromTarget ? record.target.description.lowercased() : nil
                await addresses(of: record.target, port: record.port, kind: kind, serverName: name)
            }
        }

        /// NAPTR of the domain, filtered and ordered per RFC 3263 §4.1, each replacement's SRV.
        mutating func naptr(_ domain: DNSName, secure: Bool, allowed: Set<SIPTransportKind>) async {
            let records = await lookup(domain, .naptr).compactMap { record -> DNSNAPTRRecord? in
                if case .naptr(let naptr) = record.data { return naptr }
                return nil
            }
            let usable = records.enumerated().compactMap { index, record -> (Int, DNSNAPTRRecord, SIPTransportKind)? in
                guard record.flags.count == 1, record.flags[0] | 0x20 == UInt8(ascii: "s"),
                    let kind = SIPResolver.naptrService(record.services), allowed.contains(kind),
                    !secure || kind == .tls, !record.replacement.isRoot
                else { return nil }
                return (index, record, kind)
            }.sorted { a, b in
                (a.1.order, a.1.preference, a.0) < (b.1.order, b.1.preference, b.0)
            }
            for (_, record, kind) in usable where !isFull {
                await srv(record.replacement, kind: kind)
            }
        }

        func finish(_ uri: SIPURI) throws(SIPTransportError) -> [SIPResolvedTarget] {
            if !targets.isEmpty { return targets }
            throw firstError ?? SIPTransportError(.noTargets, "no target found for \(uri)")
        }
    }
}
