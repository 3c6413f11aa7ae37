/// Who is asking for a presentity's state, as far as containers and pres-rules need to know.
public struct WatcherIdentity: Sendable, Hashable {
    /// The watcher's address of record, `sip:user@host` without parameters, host lower-cased.
    public var uri: String
    public var network: SourceNetwork

    /// The host part of ``uri``: derived when asked (container and pres-rules decisions) rather
    /// than kept beside it in every watch.
    public var domain: String {
        guard let at = uri.utf8.lastIndex(of: UInt8(ascii: "@")) else { return "" }
        return String(uri[uri.utf8.index(after: at)...])
    }

    /// `uri` may carry a scheme, parameters or angle brackets; they are dropped. Returns nil when
    /// it has no `user@host` part.
    public init?(uri text: String, network: SourceNetwork) {
        guard let (user, host) = Self.userAndHost(text) else { return nil }
        self.uri = "sip:\(user)@\(host)"
        self.network = network
    }

    /// The address of record in the form every table of the gateway is keyed by,
    /// `sip:user@host` (see ``uri``); nil when `text` has no `user@host` part.
    public static func addressOfRecord(_ text: String) -> String? {
        userAndHost(text).map { "sip:\($0.0)@\($0.1)" }
    }

    /// `user@host` of a SIP or SIPS URI (or a bare `user@host`), host lower-cased, user as written
    /// (RFC 3261 §19.1.4: the user part compares case-sensitively).
    static func userAndHost(_ text: String) -> (String, String)? {
        var s = Substring(text)
        if s.hasPrefix("<") { s = s.dropFirst() }
        for scheme in ["sips:", "sip:"] where s.lowercased().hasPrefix(scheme) {
            s = s.dropFirst(scheme.count)
        }
        let end = s.firstIndex { ";>?".contains($0) } ?? s.endIndex
        s = s[..<end]
        guard let at = s.lastIndex(of: "@") else { return nil }
        let user = s[..<at]
        var host = s[s.index(after: at)...]
        if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]"), host.firstIndex(of: ":") == colon {
            host = host[..<colon]
        }
        guard !user.isEmpty, !host.isEmpty else { return nil }
        return (String(user), host.lowercased())
    }
}

/// Whether a domain entry (a container member, a partner list entry, a served domain) covers
/// `host`: equal, or a sub-domain of it on a label boundary (docs/flows.md, "Domain members": the schema calls a domain
/// member a "domain suffix", §2.2.2.5.1, while §3.2.5.3 says "equals"; the suffix rule
/// contains the equal case and is what an operator listing `example.com` expects for
/// `eu.example.com`).
func domain(_ domain: String, covers host: String) -> Bool {
    host == domain || host.hasSuffix("." + domain)
}

/// The network a watcher comes from ([MS-PRES] §1.3.1.3.5 membership types; §3.4.5.1.3,
/// §3.4.5.1.3: learnt from the source-network information of the request).
public enum SourceNetwork: String, Sendable, Hashable, CaseIterable {
    case sameEnterprise
    case federated
    case publicCloud
}
