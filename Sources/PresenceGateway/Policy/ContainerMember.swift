/// One member of a container's membership list ([MS-PRES] §2.2.2.5, §2.2.2.5.1):
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
            guard let value, let uri = WatcherIdentity.addressOfRecord(value) else { return nil }
            self = .user(uri)
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
}
