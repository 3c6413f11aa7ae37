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

    /// The request is anonymous: its identity is the one RFC 3323 §4.1.1.3 gives a user agent
    /// that hides it, `sip:anonymous@anonymous.invalid` (what OMA's `anonymous-request`
    /// condition looks for; no identity condition of RFC 4745 §7.1 names it).
    public var isAnonymous: Bool { uri == "sip:anonymous@anonymous.invalid" }

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
    /// (RFC 3261 §19.1.4: the user part compares case-sensitively), read on the UTF-8 bytes: every
    /// delimiter is ASCII, and comparing Characters cost 3 % of the CPU of a relayed NOTIFY.
    static func userAndHost(_ text: String) -> (String, String)? {
        let bytes = Array(text.utf8)
        var start = bytes.first == UInt8(ascii: "<") ? 1 : 0
        for scheme in ["sips:", "sip:"] {
            let prefix = scheme.utf8
            guard bytes.count - start >= prefix.count,
                zip(bytes[start...], prefix).allSatisfy({ ($0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0) == $1 })
            else { continue }
            start += prefix.count
        }
        let end = bytes[start...].firstIndex {
            $0 == UInt8(ascii: ";") || $0 == UInt8(ascii: ">") || $0 == UInt8(ascii: "?")
        }
        let part = bytes[start..<(end ?? bytes.count)]
        guard let at = part.lastIndex(of: UInt8(ascii: "@")) else { return nil }
        let user = part[..<at]
        var host = part[(at + 1)...]
        if let colon = host.lastIndex(of: UInt8(ascii: ":")), host.last != UInt8(ascii: "]"),
            host.firstIndex(of: UInt8(ascii: ":")) == colon
        {
            host = host[..<colon]
        }
        guard !user.isEmpty, !host.isEmpty else { return nil }
        return (String(decoding: user, as: UTF8.self), String(decoding: host, as: UTF8.self).lowercased())
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
