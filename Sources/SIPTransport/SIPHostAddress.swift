internal import NIOCore

/// Comparing and normalising host text as it appears in Via headers and targets.
///
/// RFC 3261 §18.2.1 compares the sent-by host with the packet's source address; an IPv6 literal
/// may be written with brackets (`[::1]`, RFC 3261 §25.1 IPv6reference), in long or compressed
/// form, and a host name never equals an address. RFC 5118 §4.1 notes that textual comparison of
/// IPv6 literals is wrong, so literals are compared as parsed addresses.
enum SIPHostAddress {
    /// The host without the brackets of an IPv6 reference.
    static func unbracketed(_ host: String) -> String {
        if host.hasPrefix("["), host.hasSuffix("]"), host.count >= 2 {
            return String(host.dropFirst().dropLast())
        }
        return host
    }

    /// The canonical text of an IP literal (brackets removed, IPv6 compressed as NIO prints it),
    /// or nil when `host` is not an IP literal.
    static func canonicalIP(_ host: String) -> String? {
        let bare = unbracketed(host)
        guard let address = try? SocketAddress(ipAddress: bare, port: 0) else { return nil }
        return address.ipAddress
    }

    /// Whether two hosts name the same address: equal IP literals, or equal names ignoring case.
    static func same(_ a: String, _ b: String) -> Bool {
        switch (canonicalIP(a), canonicalIP(b)) {
        case (let x?, let y?): return x == y
        case (nil, nil): return unbracketed(a).lowercased() == unbracketed(b).lowercased()
        default: return false
        }
    }

    /// A target with its host in canonical form when it is an IP literal (the key for
    /// connection lookup).
    static func normalized(_ target: SIPTarget) -> SIPTarget {
        var t = target
        t.host = canonicalIP(target.host) ?? unbracketed(target.host)
        return t
    }

    /// The target for a socket address, or nil for a Unix socket.
    static func target(_ kind: SIPTransportKind, _ address: SocketAddress?) -> SIPTarget? {
        guard let address, let ip = address.ipAddress, let port = address.port, let p = UInt16(exactly: port) else {
            return nil
        }
        return SIPTarget(kind, host: ip, port: p)
    }
}
