/// Which CALLBACK URLs a subscription may name: http URLs whose host is an IP literal in loopback
/// or in one of the allowed networks. A DNS name is refused: the device would otherwise send
/// NOTIFYs wherever a name resolves to (UDA 1.1 §4.1.2 lets a publisher refuse with 412).
public struct CallbackPolicy: Sendable, Hashable {
    public var allowedNetworks: [IPNetwork]

    public init(allowedNetworks: [IPNetwork] = []) {
        self.allowedNetworks = allowedNetworks
    }

    /// True when every URL is allowed.
    public func allows(_ urls: [String]) -> Bool {
        urls.allSatisfy { url in
            guard let host = Self.host(of: url) else { return false }
            return (IPNetwork.loopback + allowedNetworks).contains { $0.contains(host) }
        }
    }

    /// The host of an `http://host[:port]/path` URL (IPv6 in brackets), nil if there is none.
    static func host(of url: String) -> String? {
        guard url.lowercased().hasPrefix("http://") else { return nil }
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.contains("@") else { return nil }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            return String(authority[authority.startIndex...close])
        }
        let host = authority.prefix { $0 != ":" }
        return host.isEmpty ? nil : String(host)
    }
}
