import Foundation

extension GatewayConfiguration {
    /// How the gateway's XCAP client makes itself known at one XCAP root (YAML `xcap-auth:`,
    /// keyed by the root as `xcap: root` or `oma: rls` names it). In an OMA/IMS domain every
    /// request of an XDM client goes to the Aggregation Proxy (PacketCable Presence §6.2.18),
    /// which authenticates it, HTTP Digest by default (§6.7), and asserts the identity to the XDMS;
    /// a deployment that trusts the gateway's network instead has it send that identity itself.
    ///
    /// ```yaml
    /// xcap-auth:
    ///   "https://ap.oma.example/xcap-root":            # HTTP Digest (RFC 7616, RFC 2617)
    ///     username: "gateway@contoso.com"
    ///     password-file: xcap-ap-password           # relative: in $CREDENTIALS_DIRECTORY if set
    ///   "http://xdms.oma.example:8080/xcap-root":     # an asserted identity instead
    ///     asserted-identity: "sip:gateway@contoso.com"
    ///     header: X-XCAP-Asserted-Identity          # the default (OMA XDM); or X-3GPP-Asserted-Identity
    /// ```
    ///
    /// docs/security.md, "XCAP credentials", says how the password file is kept.
    public enum XCAPAuthentication: Sendable, Hashable {
        /// Answer the root's 401 challenges with these credentials.
        case digest(XCAPCredentials)
        /// Send `header: "identity"` with every request (the Aggregation Proxy to XDMS hop of
        /// OMA XDM, 3GPP TS 24.109's X-3GPP-Asserted-Identity).
        case assertedIdentity(header: String, identity: String)
    }

    /// A Digest username and the password read from its file. Its description hides the password.
    public struct XCAPCredentials: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
        public var username: String
        public var password: String

        public init(username: String, password: String) {
            self.username = username
            self.password = password
        }

        public var description: String { "\(username) (password not shown)" }
        public var debugDescription: String { description }
    }

    /// Reads `xcap-auth:`: each key an XCAP root this configuration uses (`roots`), each value one
    /// way of authenticating. Absent: empty.
    static func xcapAuth(
        _ node: ConfigurationNode?, roots: Set<String>,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigurationError) -> [String: XCAPAuthentication] {
        guard let node else { return [:] }
        var result: [String: XCAPAuthentication] = [:]
        for (key, value) in try node.entries() {
            let root = try xcapRoot(key, at: value)
            guard roots.contains(root) else {
                let known = roots.isEmpty ? "none" : roots.sorted().joined(separator: ", ")
                throw value.error(
                    "'\(root)' is no XCAP root of xcap: root or oma: rls, nor content-server: url (those configured: \(known))"
                )
            }
            guard result[root] == nil else { throw value.error("'\(root)' is named twice") }
            result[root] = try xcapAuthentication(value, environment: environment)
        }
        return result
    }

    private static func xcapAuthentication(
        _ node: ConfigurationNode, environment: [String: String]
    ) throws(ConfigurationError) -> XCAPAuthentication {
        let m = try node.mapping(known: ["username", "password-file", "asserted-identity", "header"])
        if let identityNode = m["asserted-identity"] {
            if let other = m["username"] ?? m["password-file"] {
                throw other.error("asserted-identity or username and password-file, not both")
            }
            let identity = try identityNode.string()
            guard WatcherIdentity.addressOfRecord(identity) != nil, !identity.contains("\"") else {
                throw identityNode.error("'\(identity)' is not a sip:user@host URI")
            }
            var header = "X-XCAP-Asserted-Identity"
            if let headerNode = m["header"] {
                header = try headerNode.string()
                guard !header.isEmpty, header.utf8.allSatisfy(AuthParameters.isTokenByte) else {
                    throw headerNode.error("'\(header)' is not an HTTP field name")
                }
            }
            return .assertedIdentity(header: header, identity: identity)
        }
        if let header = m["header"] { throw header.error("header goes with asserted-identity") }
        guard let userNode = m["username"], let fileNode = m["password-file"] else {
            throw node.error("needs username and password-file (HTTP Digest), or asserted-identity")
        }
        let username = try userNode.string()
        // Sent as an RFC 7230 quoted-string: printable ASCII keeps it the same on every server.
        guard !username.isEmpty, username.unicodeScalars.allSatisfy({ (0x20...0x7e).contains($0.value) }) else {
            throw userNode.error("the username must be printable ASCII, not empty")
        }
        let password = try fileNode.secretFile(environment: environment)
        return .digest(XCAPCredentials(username: username, password: password))
    }

    /// The XCAP roots this configuration talks to: `xcap: root` and every `oma: rls` root, and
    /// the content server's URL, which the same client reaches (`content-server:`).
    var xcapRoots: Set<String> {
        Set(oma.rls.values).union(xcap.map { [$0.root] } ?? []).union(contentServer.map { [$0.url] } ?? [])
    }
}
