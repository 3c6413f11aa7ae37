public import SIPStack

extension GatewayConfiguration {
    /// Who a side takes requests from (YAML `accept:` in `enterprise:` or `oma:`).
    public enum Acceptance: String, Sendable, Hashable {
        /// Anyone, within the checks and limits of docs/security.md (the default).
        case any
        /// Only the configured peers of that side: anything else is answered 403 before any other
        /// work (docs/security.md, "Who may send").
        case configuredPeers = "configured-peers"
    }

    static let acceptances: [String: Acceptance] = ["any": .any, "configured-peers": .configuredPeers]

    /// Reads a peer's `credentials:`, the user name and password the gateway answers that peer's
    /// Digest challenges with (RFC 3261 §22.2; docs/security.md, "Credentials"):
    ///
    /// ```yaml
    /// credentials: { realm: oma.example, username: gateway, password-file: oma-ps.password }
    /// ```
    ///
    /// `realm` is required: a challenge for any other realm is not answered, so the credentials
    /// are never hashed for a realm they were not given for. The password comes from
    /// `password-file` (a relative name in `$CREDENTIALS_DIRECTORY`, as `admin.token-file`) or
    /// `password`, not both.
    static func credentials(_ node: ConfigurationNode) throws(ConfigurationError) -> SIPDigestCredentials {
        let m = try node.mapping(known: ["realm", "username", "password", "password-file"])
        guard let realm = m["realm"], let username = m["username"] else {
            throw node.error("credentials need realm, username and password or password-file")
        }
        let password: String
        switch (m["password"], m["password-file"]) {
        case (.some(let text), nil): password = try text.string()
        case (nil, .some(let file)): password = try file.secretFile()
        case (.some, .some(let file)): throw file.error("credentials: password or password-file, not both")
        case (nil, nil): throw node.error("credentials need password or password-file")
        }
        let realmText = try realm.string()
        let user = try username.string()
        // Values that go into a quoted-string of the Authorization header (RFC 3261 §25.1): no
        // control characters, so that no header can be cut or added.
        for (text, field) in [(realmText, realm), (user, username)]
        where text.isEmpty || text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw field.error("must be non-empty, without control characters")
        }
        guard !password.isEmpty else { throw node.error("the password is empty") }
        return SIPDigestCredentials(realm: realmText, username: user, password: password)
    }
}
