public import SIPMessages
public import SIPTransport

/// Where the event agents send a request: the first Route, else the Request-URI, when its host is
/// an IP literal (RFC 3263 §4.2: "If the TARGET was a numeric IP address, the client uses that
/// address"); otherwise the configured next hop (an outbound proxy, RFC 3261 §8.1.2). With
/// ``alwaysUseNextHop`` every request goes to the next hop (a UA behind one proxy, such as a
/// Kamailio presence server).
public struct SIPEventRouting: Sendable, Hashable {
    public var nextHop: SIPTarget?
    public var alwaysUseNextHop: Bool

    public init(nextHop: SIPTarget? = nil, alwaysUseNextHop: Bool = false) {
        self.nextHop = nextHop
        self.alwaysUseNextHop = alwaysUseNextHop
    }

    /// The transport target for `request`, nil when neither a literal host nor a next hop is known.
    public func target(for request: SIPRequest) -> SIPTarget? {
        if alwaysUseNextHop, let nextHop { return nextHop }
        let first = (try? request.headers.route)?.first?.uri ?? request.uri
        if let literal = Self.literalTarget(first, defaultKind: nextHop?.kind ?? .udp) { return literal }
        return nextHop
    }

    /// A target for a URI whose host is an IP literal: the transport from `transport=` (TLS for
    /// `sips`), else `defaultKind`; the port from the URI or the transport's default.
    public static func literalTarget(_ uri: SIPURI, defaultKind: SIPTransportKind = .udp) -> SIPTarget? {
        var host = uri.host
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        let isIPv4 = labels.count == 4 && labels.allSatisfy { UInt8($0) != nil }
        guard isIPv4 || host.contains(":") else { return nil }
        let kind: SIPTransportKind
        if uri.scheme == .sips {
            kind = .tls
        } else {
            kind = uri.parameters.value("transport").flatMap { SIPTransportKind(viaToken: $0) } ?? defaultKind
        }
        return SIPTarget(kind, host: host, port: uri.port ?? kind.defaultPort)
    }
}

extension SIPTransactionLayer {
    /// Sends a request once, outside any client transaction: a BENOTIFY takes no response
    /// ([MS-PRES] §3.4.5.1.4), so a transaction would only retransmit it and report a timeout.
    /// Adds the Via (RFC 3261 §8.1.1.7: a fresh `z9hG4bK` branch with the layer's shard mark,
    /// `rport` per RFC 3581 §3) and Max-Forwards 70 (§8.1.1.6). Returns false when the transport
    /// has no address for the target's transport kind.
    @discardableResult
    public func sendWithoutTransaction(_ request: SIPRequest, to target: SIPTarget) -> Bool {
        guard let local = transport.advertisedAddress(for: target.kind) else { return false }
        var outgoing = request
        let branch = makeBranch()
        let via = SIPVia(
            transport: target.kind.rawValue, host: local.isIPv6 ? "[\(local.host)]" : local.host, port: local.port,
            parameters: [SIPParameter(name: "branch", value: branch), SIPParameter(name: "rport", value: nil)])
        outgoing.headers.prepend(.via, via.description)
        if !outgoing.headers.contains(.maxForwards) { outgoing.headers.append(.maxForwards, "70") }
        _ = transport.send(.request(outgoing), to: target, connection: nil)
        return true
    }
}

/// Random tokens for Call-IDs and tags (RFC 3261 §19.3: "at least 32 bits of randomness").
package enum SIPEventTokens {
    package static func token() -> String { String(UInt64.random(in: 0...UInt64.max), radix: 36) }
    package static func callID(host: String) -> String { token() + token() + "@" + host }
}
