extension SIPURI {
    /// URI comparison per RFC 3261 §19.1.4.
    ///
    /// - sip and sips URIs never match each other; schemes compare case-insensitively.
    /// - userinfo (user and password) compares case-sensitively, after unescaping.
    /// - host compares case-insensitively; a port present in one URI must be present and equal
    ///   in the other (an explicit 5060 does not match an absent port).
    /// - `user`, `ttl`, `method`, `maddr` and `transport` parameters present in either URI must be
    ///   present in both and match; other parameters must match only when present in both.
    ///   Parameter names and values compare case-insensitively.
    /// - URI headers are never ignored: each must be present in both and match.
    ///
    /// Other schemes (tel, opaque) match when scheme and content are identical
    /// (tel parameters: same set, case-insensitively).
    public func isEquivalent(to other: SIPURI) -> Bool {
        guard scheme == other.scheme else { return false }
        if opaque != nil || other.opaque != nil { return opaque == other.opaque }
        guard user == other.user, password == other.password else { return false }
        guard Self.equalFolded(host, other.host), port == other.port else { return false }
        let mustMatch = ["user", "ttl", "method", "maddr", "transport"]
        for name in mustMatch {
            let a = parameters[name]
            let b = other.parameters[name]
            switch (a, b) {
            case (nil, nil): continue
            case (.some(let x), .some(let y)):
                guard Self.equalFolded(x ?? "", y ?? ""), (x == nil) == (y == nil) else { return false }
            default: return false
            }
        }
        for p in parameters where !mustMatch.contains(where: { SIPParameters.sameName($0, p.name) }) {
            if let theirs = other.parameters[p.name] {
                guard Self.equalFolded(p.value ?? "", theirs ?? "") else { return false }
            }
        }
        guard headers.count == other.headers.count else { return false }
        for h in headers {
            guard
                other.headers.contains(where: {
                    SIPParameters.sameName($0.name, h.name) && $0.value == h.value
                })
            else { return false }
        }
        return true
    }

    static func equalFolded(_ a: String, _ b: String) -> Bool {
        let x = a.utf8
        let y = b.utf8
        guard x.count == y.count else { return false }
        return zip(x, y).allSatisfy { SIPByte.lower($0) == SIPByte.lower($1) }
    }
}
