public import GatewayState

extension GatewayConfiguration {
    /// Where the gateway keeps its state so that no bridged subscription is lost on a crash, an
    /// upgrade or the loss of a node (YAML `state:`; docs/state.md).
    ///
    /// ```yaml
    /// state:
    ///   store: sqlite                 # sqlite (the default), postgres, or memory (nothing kept)
    ///   path: state/presence-gateway.db   # sqlite: the file, relative to the working directory
    ///   synchronous: full             # sqlite: full (a commit survives a power loss) or normal
    ///   url: "postgres://gateway:secret@127.0.0.1:5432/gateway"   # postgres; may end in
    ///                                 # ?sslmode=verify-full&sslrootcert=/etc/ssl/pg-ca.pem
    ///   node: gw1                     # postgres: this node's name, one per node
    ///   lease: 30                     # postgres: seconds before a stopped node's dialogs are taken over
    ///   recovery-rate: 1000           # subscriptions refreshed per second after a restart or takeover
    /// shutdown: keep                  # on SIGTERM: keep (continue after the next start) or terminate
    /// ```
    public struct State: Sendable, Hashable {
        public enum Store: Sendable, Hashable {
            case memory
            case sqlite(path: String, synchronous: Synchronous)
            case postgres(Postgres)
        }

        /// SQLite's `PRAGMA synchronous` in WAL mode.
        public enum Synchronous: String, Sendable, Hashable, CaseIterable {
            case full, normal
        }

        /// A PostgreSQL database several nodes share.
        public struct Postgres: Sendable, Hashable {
            public var host: String
            public var port: Int
            public var user: String
            public var password: String?
            public var database: String
            public var node: String
            /// Seconds a node's dialogs stay its own after it last renewed its lease.
            public var leaseSeconds: Int
            /// How the connection is secured (`sslmode`, `sslrootcert` in the URL's query, as
            /// libpq reads them; `prefer` when not given).
            public var tls = PostgresTLS()

            /// Where, for messages: no credentials.
            public var location: String { "postgres://\(host):\(port)/\(database)" }
        }

        public var store: Store
        /// Subscriptions refreshed per second after a restart or a takeover.
        public var recoveryRate: Int

        public init(store: Store = .sqlite(path: State.defaultPath, synchronous: .full), recoveryRate: Int = 1000) {
            self.store = store
            self.recoveryRate = recoveryRate
        }

        /// The store file when `state:` says nothing: under `state/` in the working directory.
        public static let defaultPath = "state/presence-gateway.db"

        public var isDurable: Bool {
            if case .memory = store { return false }
            return true
        }
    }

    /// What SIGTERM does to the bridged subscriptions (YAML `shutdown:`).
    public enum Shutdown: String, Sendable, Hashable, CaseIterable {
        /// Stop answering, write what is pending to the store and exit: the next start continues
        /// every dialog (for upgrades). The default with a durable store.
        case keep
        /// Final NOTIFYs (`terminated;reason=deactivated`) and unsubscribes, then exit. The default
        /// without one.
        case terminate
    }

    /// Reads `state:`; absent: SQLite at ``State/defaultPath``.
    static func state(_ node: ConfigurationNode?) throws(ConfigurationError) -> State {
        guard let node else { return State() }
        let m = try node.mapping(known: [
            "store", "path", "synchronous", "url", "password-file", "node", "lease", "recovery-rate",
        ])
        var state = State()
        if let v = m["recovery-rate"] { state.recoveryRate = try v.integer(in: 1...1_000_000) }
        let kind = try m["store"]?.choice(["sqlite": "sqlite", "postgres": "postgres", "memory": "memory"]) ?? "sqlite"
        func only(_ keys: [String], for store: String) throws(ConfigurationError) {
            for (key, value) in m where !keys.contains(key) && !["store", "recovery-rate"].contains(key) {
                throw value.error("'\(key)' does not apply to store: \(store)")
            }
        }
        switch kind {
        case "memory":
            try only([], for: kind)
            state.store = .memory
        case "postgres":
            try only(["url", "password-file", "node", "lease"], for: kind)
            guard let url = m["url"], let name = m["node"] else {
                throw node.error("store: postgres needs url and node")
            }
            var postgres = try Self.postgres(url)
            if let file = m["password-file"] {
                // The password out of the URL and the configuration (docs/state.md, "Secrets").
                guard postgres.password == nil else { throw file.error("a password in the url and a password-file") }
                postgres.password = try file.secretFile()
            }
            postgres.node = try name.string()
            guard !postgres.node.isEmpty, postgres.node.count <= 64,
                postgres.node.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
            else {
                throw name.error("a node name is 1 to 64 letters, digits, '-', '_' or '.'")
            }
            if let v = m["lease"] { postgres.leaseSeconds = try v.integer(in: 3...300) }
            state.store = .postgres(postgres)
        default:
            try only(["path", "synchronous"], for: kind)
            let path = try m["path"]?.string() ?? State.defaultPath
            guard !path.isEmpty else {
                throw m["path"].map { $0.error("an empty path") } ?? node.error("an empty path")
            }
            let synchronous =
                try m["synchronous"]?.choice(["full": State.Synchronous.full, "normal": .normal]) ?? .full
            state.store = .sqlite(path: path, synchronous: synchronous)
        }
        return state
    }

    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=MODE&sslrootcert=FILE]` (or
    /// `postgresql://`); the host an IP literal or a name, IPv6 in brackets.
    static func postgres(_ node: ConfigurationNode) throws(ConfigurationError) -> State.Postgres {
        var text = try node.string()
        let expected = "expected postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=...]"
        var tls = PostgresTLS()
        if let question = text.firstIndex(of: "?") {
            tls = try Self.postgresTLS(query: text[text.index(after: question)...], node: node)
            text = String(text[..<question])
        }
        var rest = Substring(text)
        guard let scheme = ["postgres://", "postgresql://"].first(where: { rest.hasPrefix($0) }) else {
            throw node.error(expected)
        }
        rest = rest.dropFirst(scheme.count)
        guard let at = rest.lastIndex(of: "@"), let slash = rest[at...].firstIndex(of: "/") else {
            throw node.error(expected)
        }
        let credentials = rest[..<at]
        let address = rest[rest.index(after: at)..<slash]
        let database = String(rest[rest.index(after: slash)...])
        let user: Substring
        var password: String?
        if let colon = credentials.firstIndex(of: ":") {
            user = credentials[..<colon]
            password = String(credentials[credentials.index(after: colon)...]).removingPercentEncodingIfPossible
        } else {
            user = credentials
        }
        let (host, port) = try Self.postgresHostAndPort(address, node: node, expected: expected)
        guard !user.isEmpty, !host.isEmpty, !database.isEmpty, !database.contains("/"), !database.contains("?") else {
            throw node.error(expected)
        }
        return State.Postgres(
            host: String(host), port: port, user: String(user).removingPercentEncodingIfPossible, password: password,
            database: database, node: "", leaseSeconds: 30, tls: tls)
    }

    /// The TLS settings of a PostgreSQL URL's query (`sslmode=MODE&sslrootcert=FILE`, as libpq
    /// reads them); any other parameter is refused.
    private static func postgresTLS(query: Substring, node: ConfigurationNode) throws(ConfigurationError)
        -> PostgresTLS
    {
        var tls = PostgresTLS()
        for parameter in query.split(separator: "&") {
            let pair = parameter.split(separator: "=", maxSplits: 1).map(String.init)
            switch (pair.first, pair.count == 2 ? pair[1] : nil) {
            case ("sslmode", let value?):
                guard let mode = PostgresTLS.Mode(rawValue: value) else {
                    let modes = PostgresTLS.Mode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw node.error("sslmode=\(value): expected one of \(modes)")
                }
                tls.mode = mode
            case ("sslrootcert", let value?) where !value.isEmpty:
                tls.rootCertificates = value.removingPercentEncodingIfPossible
            default:
                throw node.error("\(parameter): only sslmode and sslrootcert are read from the URL's query")
            }
        }
        return tls
    }

    /// The host and port of a PostgreSQL URL's `HOST[:PORT]` (IPv6 in brackets; 5432 when no
    /// port is given).
    private static func postgresHostAndPort(
        _ address: Substring, node: ConfigurationNode, expected: String
    ) throws(ConfigurationError) -> (host: Substring, port: Int) {
        var host = address
        var port = 5432
        if address.hasPrefix("[") {
            guard let close = address.firstIndex(of: "]") else { throw node.error(expected) }
            host = address[address.index(after: address.startIndex)..<close]
            let after = address[address.index(after: close)...]
            if after.hasPrefix(":") {
                guard let p = Int(after.dropFirst()), (1...65_535).contains(p) else {
                    throw node.error("\(expected): bad port")
                }
                port = p
            } else if !after.isEmpty {
                throw node.error(expected)
            }
        } else if let colon = address.lastIndex(of: ":") {
            host = address[..<colon]
            guard let p = Int(address[address.index(after: colon)...]), (1...65_535).contains(p) else {
                throw node.error("\(expected): bad port")
            }
            port = p
        }
        return (host, port)
    }
}

extension String {
    /// `%XX` escapes decoded (RFC 3986 §2.1), for user names and passwords in a URL; the text as
    /// written when an escape is malformed.
    fileprivate var removingPercentEncodingIfPossible: String {
        guard contains("%") else { return self }
        var bytes: [UInt8] = []
        var utf8 = Array(self.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
                let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16)
            {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
