/// One member of a container's membership list ([MS-PRES] §2.2.2.5, lines 2701-2737):
///
/// ```
/// <member type="user|domain|sameEnterprise|federated|publicCloud|everyone" value="..."/>
/// ```
///
/// `value` is a SIP URI for `user` and a domain for `domain`, absent otherwise.
public enum ContainerMember: Sendable, Hashable {
    case user(String)
    case domain(String)
    case sameEnterprise
    case federated
    case publicCloud
    case everyone

    /// Reads a member from its `type` and `value` attributes; nil for an unknown type or a
    /// `user`/`domain` member without value.
    public init?(type: String, value: String?) {
        switch type {
        case "user":
            guard let value, let (user, host) = WatcherIdentity.userAndHost(value) else { return nil }
            self = .user("sip:\(user)@\(host)")
        case "domain":
            guard let value, !value.isEmpty else { return nil }
            self = .domain(value.lowercased())
        case "sameEnterprise": self = .sameEnterprise
        case "federated": self = .federated
        case "publicCloud": self = .publicCloud
        case "everyone": self = .everyone
        default: return nil
        }
    }

    /// Whether a `domain` member covers `domain`: equal, or a sub-domain of it (guide Q3: the
    /// schema calls the value a "domain suffix", line 2734, while §3.2.5.3 says "equals", line
    /// 6089; a suffix on a label boundary contains the equal case and is what an operator listing
    /// `example.com` expects for `eu.example.com`).
    static func domain(_ member: String, covers domain: String) -> Bool {
        domain == member || domain.hasSuffix("." + member)
    }
}
