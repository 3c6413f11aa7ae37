import PresenceDocuments
public import SIPMessages
public import SIPStack
public import SIPTransport

/// Everything an operator sets for one gateway: where it listens, which domains it serves on
/// each side and where their traffic goes, which peers it trusts, the linked identities and the
/// presentity policies. Read from YAML by ``init(yaml:)``, which checks every key and value and
/// reports the line of the first problem.
public struct GatewayConfiguration: Sendable {
    /// The two faces of the gateway.
    public enum Side: String, Sendable, Hashable, CaseIterable {
        /// Microsoft enhanced presence (an enterprise edge or pool).
        case enterprise
        /// OMA/IMS SIMPLE presence.
        case oma
    }

    /// A socket the gateway listens on; every message arriving there comes from `side`.
    public struct Listener: Sendable, Hashable {
        public var side: Side
        public var transport: SIPTransportKind
        public var host: String
        public var port: UInt16
    }

    /// Certificate material for TLS listeners and clients (PEM files).
    public struct TLS: Sendable, Hashable {
        public var certificateChain: String
        public var privateKey: String
        public var trustRoots: String?
        /// Mutual TLS: peers must present a certificate, and its names must match the domain the
        /// peer speaks for.
        public var requireClientCertificate: Bool
    }

    /// Where requests for one side's domains go.
    public enum NextHop: Sendable, Hashable {
        /// A fixed URI (host, port and `transport` parameter).
        case uri(SIPURI)
        /// RFC 3263 resolution of the Request-URI's domain; `federation` looks up
        /// `_sipfederationtls._tcp` first, as Microsoft federation does.
        case dns(federation: Bool)
    }

    /// The domains served on one side and where their requests go.
    public struct Domains: Sendable, Hashable {
        public var domains: [String]
        public var nextHop: NextHop
        /// OMA side: PIDF carries the RPID signals beyond the [MS-PRES] §3.7.5.4 row
        /// (`rpid-extensions`, `Mappings/README.md`), for OMA peers known to handle them.
        public var rpidExtensions = false
        /// OMA side: RFC 6446 rate control the gateway asks of the OMA presence servers in its
        /// PIDF SUBSCRIBEs (`rate-control: { min-interval: 5, max-interval: 600 }`, seconds
        /// between two notifications, sent as `max-rate=0.2;min-rate=0.001667`).
        public var minInterval: UInt32?
        public var maxInterval: UInt32?
        /// OMA side: the gateway's PIDF SUBSCRIBEs accept partial notifications (RFC 5263,
        /// `partial-notifications: true`); each subscription whose server sends them keeps the
        /// last full document to apply the next diff to.
        public var partialNotifications = false
        /// Enterprise side: an OMA watcher's category SUBSCRIBE for a new resource carries a
        /// `context`, so the watcher joins that enterprise user's subscriber list and the user
        /// is told of it, as when a contact adds them ([MS-PRES] §2.2.2.4.1, §3.6). Default: on,
        /// except toward a UDP next hop, where the longer SUBSCRIBE would have to go over TCP
        /// (RFC 3261 §18.1.1).
        public var subscriberList = true
        /// OMA side: the domains whose resource list server the gateway subscribes to lists at
        /// (RFC 4662, `rls: { DOMAIN: XCAP-ROOT }`), each with the root of the XCAP server (RFC
        /// 4825) where it keeps the lists as RFC 4826 `rls-services` documents of the watchers
        /// (docs/flows.md, "Lists toward the OMA side"). A domain not named, or named `off`,
        /// gets one subscription per resource.
        public var rls: [String: String] = [:]
        /// Who may send requests on this side (YAML `accept:`; GatewayConfiguration+Credentials.swift).
        public var accept: Acceptance = .any
    }

    /// A peer the gateway knows by address.
    public struct Peer: Sendable, Hashable {
        public var name: String
        public var host: String
        /// nil: any source port.
        public var port: UInt16?
        public var side: Side
        /// The network its watchers count as ([MS-PRES] §3.2.5.3 rules 3-5).
        public var network: SourceNetwork
        /// Whether `ms-edge-proxy-message-trust` / source-network information from it is believed;
        /// from untrusted peers such headers are removed.
        public var trusted: Bool
        /// Certificate names it must present over mutual TLS (empty: not checked).
        public var certificateNames: [String]
        /// Requests per second it may send before getting 503 with Retry-After (nil: unlimited).
        public var rateLimit: Double?
        /// Subscription dialogs it may hold through the gateway (nil: unlimited).
        public var maxSubscriptions: Int?
        /// The user name and password for its Digest challenges (YAML `credentials:`;
        /// GatewayConfiguration+Credentials.swift). nil: a 401 or 407 from it is a failure.
        public var credentials: SIPDigestCredentials? = nil
    }

    /// A person with an identity on each side.
    public struct LinkedIdentity: Sendable, Hashable {
        public var oma: String
        public var enterprise: String
        /// Publish the OMA side's composed presence into the enterprise as a SERVICE category publish.
        public var publishToEnterprise: Bool
        /// PUBLISH the enterprise categories as PIDF to the OMA presence server.
        public var publishToOMA: Bool
        /// Subscribe to the OMA identity's watcher information at the OMA presence server (RFC
        /// 3857) and subscribe into the enterprise on behalf of each OMA watcher listed, so that
        /// the enterprise identity's subscriber list shows them ([MS-PRES] §3.6; docs/flows.md,
        /// "Watchers at the OMA presence server"). Needs `publish-to-oma`.
        public var mirrorWatchers = false
    }

    /// Subscription timing.
    public struct Subscriptions: Sendable, Hashable {
        /// How long the gateway waits for the OMA side's first NOTIFY before answering an
        /// enterprise SUBSCRIBE without a piggybacked body.
        public var piggybackWaitMilliseconds: Int = 500
        public var defaultExpires: UInt32 = 3600
        public var minimumExpires: UInt32 = 60
        public var maximumExpires: UInt32 = 86_400
    }

    /// The HTTP endpoint for `/metrics` (Prometheus text) and `/health`.
    public struct Admin: Sendable, Hashable {
        public var host: String
        public var port: UInt16
        /// `Authorization: Bearer <token>` for the admin API (everything but `/metrics` and
        /// `/health`); without one, the API answers loopback clients only.
        public var token: String?
        /// Host names the API answers under besides IP literals and `localhost` (YAML
        /// `host-names`): a request whose Host names another is refused, so that a web page
        /// whose name was rebound to the gateway cannot reach the API.
        public var hostNames: [String] = []
        /// Whether state-changing requests (`DELETE /subscriptions/{id}`, `POST /reload`) are
        /// taken without a token (YAML `tokenless-control`; default false: they need `token`).
        public var tokenlessControl = false
    }

    public var listeners: [Listener]
    public var tls: TLS?
    public var enterprise: Domains
    public var oma: Domains
    /// Partner domains allowed to federate (nil: any that is not blocked).
    public var allowedPartners: [String]?
    public var blockedPartners: [String]
    public var peers: [Peer]
    public var linkedIdentities: [LinkedIdentity]
    /// The policy of presentities without their own entry.
    public var defaultPolicy: PresentityPolicy
    /// Per-presentity policies (key: `sip:user@host`). Their pres-rules files are read by the
    /// caller (``presRulesFiles``) when the configuration is loaded.
    public var policies: [String: PresentityPolicy]
    /// Presentity → path of its RFC 5025 pres-rules document.
    public var presRulesFiles: [String: String]
    /// Where `pres-rules: xcap` documents are fetched (YAML `xcap:`; GatewayConfiguration+XCAP.swift).
    public var xcap: XCAP?
    /// How the XCAP client authenticates at each XCAP root, by root (YAML `xcap-auth:`;
    /// GatewayConfiguration+XCAPAuth.swift); a root not named sends no credentials.
    public var xcapAuth: [String: XCAPAuthentication]
    /// The OMA domain's content server for content indirection (YAML `content-server:`;
    /// GatewayConfiguration+ContentServer.swift); nil: references are refused with 415.
    public var contentServer: ContentServer?
    /// The UPnP Presence:1 device (YAML `upnp:`; GatewayConfiguration+UPnP.swift); nil: off.
    public var upnp: UPnP?
    /// The presentities whose pres-rules come from ``xcap``.
    public var xcapPresentities: Set<String>
    /// List URI → its members, the lists served to OMA watchers (YAML `resource-lists:`;
    /// GatewayConfiguration+ResourceLists.swift). From ``resourceListsFile`` when that is set:
    /// read by the caller when the configuration is loaded.
    public var resourceLists: [String: [String]]
    /// The path of the RFC 4826 rls-services document the lists come from, if they do.
    public var resourceListsFile: String?
    /// Not read from YAML: true while an rls-services document of ``XCAP/rlsServices`` has not
    /// been answered yet. A URI not known as a list may then be one, so a SUBSCRIBE that could
    /// take a list (`Supported: eventlist`) is asked to come back (503 with Retry-After).
    public var awaitingResourceLists = false
    public var subscriptions: Subscriptions
    /// What one peer or watcher may make the gateway hold and send.
    public var limits: Limits
    public var admin: Admin?
    /// Replaces the built-in mapping tables (like `presence-map --mappings`).
    public var mappingsDirectory: String?
    /// This gateway's host name for Via, Record-Route and Contact (defaults to the first listener's host).
    public var hostName: String?
    /// Connection limits and timeouts (YAML `connections:`; GatewayConfiguration+Connections.swift).
    public var connections: Connections
    /// The log format the file asks for (`log-format: json|text`; nil: not set). The command
    /// line's `--log-format` wins over it (``LogFormat/effective(flag:configured:)``).
    public var logFormat: LogFormat?
    /// HEP v3 capture of every SIP message (YAML `capture:`; GatewayConfiguration+Capture.swift);
    /// nil: off.
    public var capture: Capture?
    /// Where the state is kept (YAML `state:`; GatewayConfiguration+State.swift): SQLite by default.
    public var state: State
    /// What SIGTERM does (YAML `shutdown:`): keep by default with a durable store, else terminate.
    public var shutdown: Shutdown
    /// The shards the gateway runs, each an event loop with its own core (YAML `threads:`,
    /// GatewayConfiguration+Threads.swift; docs/shards.md): 1 by default.
    public var threads = 1
}

extension GatewayConfiguration {
    /// The policy of `presentity`: its own entry, else the default one.
    public func policy(for presentity: String) -> PresentityPolicy {
        // Without entries the address need not be read (it is, for every relayed NOTIFY).
        guard !policies.isEmpty else { return defaultPolicy }
        return policies[WatcherIdentity.addressOfRecord(presentity) ?? presentity] ?? defaultPolicy
    }

    /// Reads a configuration from YAML text. Every key is checked; the first problem is thrown
    /// with its line and column.
    public init(yaml text: String) throws(ConfigurationError) {
        let root = try ConfigurationNode.parse(text)
        let top = try root.mapping(known: [
            "listen", "tls", "enterprise", "oma", "partners", "peers", "linked-identities", "presentities",
            "subscriptions", "limits", "admin", "mappings", "host-name", "connections", "log-format",
            "capture", "state", "shutdown", "xcap", "resource-lists", "xcap-auth", "content-server", "upnp",
            "threads",
        ])
        guard let listen = top["listen"] else { throw root.error("'listen' is required: at least one listener") }
        self.listeners = try Self.listeners(listen)
        self.tls = try top["tls"].map { node throws(ConfigurationError) in try Self.tls(node) }
        if listeners.contains(where: { $0.transport == .tls }), tls == nil {
            throw listen.error("a TLS listener needs the 'tls' section")
        }
        (self.enterprise, self.oma) = try Self.servedDomains(enterprise: top["enterprise"], oma: top["oma"], root: root)
        allowedPartners = nil
        blockedPartners = []
        if let partners = try top["partners"]?.mapping(known: ["allowed", "blocked"]) {
            allowedPartners = try partners["allowed"]?.strings().map { $0.lowercased() }
            blockedPartners = try partners["blocked"]?.strings().map { $0.lowercased() } ?? []
        }
        peers = []
        for item in try top["peers"]?.list() ?? [] { peers.append(try Self.peer(item)) }
        linkedIdentities = try Self.linkedIdentities(top["linked-identities"], enterprise: self.enterprise)
        xcap = try Self.xcap(top["xcap"])
        xcapAuth = [:]
        (defaultPolicy, policies, presRulesFiles, xcapPresentities) = try Self.presentities(
            top["presentities"], xcap: xcap)
        subscriptions = try Self.subscriptions(top["subscriptions"])
        limits = try top["limits"].map { node throws(ConfigurationError) in try Self.limits(node) } ?? Limits()
        (resourceLists, resourceListsFile) = try Self.resourceLists(
            top["resource-lists"], enterprise: self.enterprise, limit: limits.resourcesPerBatch)
        admin = try Self.admin(top["admin"])
        mappingsDirectory = try top["mappings"]?.string()
        hostName = try top["host-name"]?.string()
        connections = try Self.connections(top["connections"])
        logFormat = try top["log-format"]?.choice(Self.logFormats)
        capture = try Self.capture(top["capture"])
        state = try Self.state(top["state"])
        shutdown = try Self.shutdown(top["shutdown"], state: state)
        contentServer = try Self.contentServer(top["content-server"])
        upnp = try Self.upnp(top["upnp"])
        if let upnp, let host = try? SIPURI(upnp.user).host, servingSide(of: host) == nil {
            throw (top["upnp"] ?? root).error("upnp user \(upnp.user) is in no domain of the gateway's")
        }
        xcapAuth = try Self.xcapAuth(top["xcap-auth"], roots: xcapRoots)
        threads = try Self.threads(top["threads"])
    }

    /// Reads `listen:`: at least one listener, and one for each side.
    private static func listeners(_ listen: ConfigurationNode) throws(ConfigurationError) -> [Listener] {
        var listeners: [Listener] = []
        for item in try listen.list() { listeners.append(try Self.listener(item)) }
        guard !listeners.isEmpty else { throw listen.error("at least one listener is required") }
        for side in Side.allCases where !listeners.contains(where: { $0.side == side }) {
            throw listen.error("no listener for the \(side.rawValue) side")
        }
        return listeners
    }

    /// Reads `enterprise:` and `oma:`, both required, whose domains must not overlap.
    private static func servedDomains(
        enterprise: ConfigurationNode?, oma: ConfigurationNode?, root: ConfigurationNode
    ) throws(ConfigurationError) -> (enterprise: Domains, oma: Domains) {
        guard let enterprise else { throw root.error("'enterprise' is required") }
        guard let oma else { throw root.error("'oma' is required") }
        let enterpriseDomains = try Self.domains(enterprise, extraKeys: ["subscriber-list", "accept"])
        let omaDomains = try Self.domains(
            oma, extraKeys: ["rpid-extensions", "rate-control", "partial-notifications", "rls", "accept"])
        let overlap = Set(enterpriseDomains.domains).intersection(omaDomains.domains)
        if let both = overlap.sorted().first { throw oma.error("domain \(both) is served on both sides") }
        return (enterpriseDomains, omaDomains)
    }

    /// Reads `linked-identities:`; `enterprise` is the enterprise side already read.
    private static func linkedIdentities(
        _ node: ConfigurationNode?, enterprise: Domains
    ) throws(ConfigurationError) -> [LinkedIdentity] {
        var linkedIdentities: [LinkedIdentity] = []
        for item in try node?.list() ?? [] {
            let identity = try Self.linked(item)
            // What puts a mirrored watcher on the subscriber list is the context subscriber-list sends.
            if identity.mirrorWatchers, !enterprise.subscriberList {
                throw item.error("mirror-watchers needs enterprise: subscriber-list")
            }
            linkedIdentities.append(identity)
        }
        return linkedIdentities
    }

    /// Reads `presentities:`: the default policy (its `default` entry, else the built-in one), each
    /// presentity's policy, the pres-rules files to read, and the presentities whose pres-rules
    /// come from `xcap` (the `xcap:` section already read).
    private static func presentities(
        _ section: ConfigurationNode?, xcap: XCAP?
    ) throws(ConfigurationError) -> (
        defaultPolicy: PresentityPolicy, policies: [String: PresentityPolicy], presRulesFiles: [String: String],
        xcapPresentities: Set<String>
    ) {
        var defaultPolicy = PresentityPolicy(defaults: [
            .sameEnterprise: .allow, .federated: .allow, .publicCloud: .politeBlock,
        ])
        var policies: [String: PresentityPolicy] = [:]
        var presRulesFiles: [String: String] = [:]
        var xcapPresentities: Set<String> = []
        for (key, node) in try section?.entries() ?? [] {
            let (policy, rulesFile) = try Self.policy(node, base: defaultPolicy)
            let fromXCAP = rulesFile == "xcap"
            if fromXCAP, xcap == nil {
                throw node.error("pres-rules: xcap needs the 'xcap' section (a file named xcap is written ./xcap)")
            }
            if key == "default" {
                if fromXCAP { throw node.error("the default policy has no presentity whose document could be fetched") }
                defaultPolicy = policy
                continue
            }
            guard let uri = WatcherIdentity.addressOfRecord(key) else {
                throw node.error("'\(key)' is not a sip:user@host presentity")
            }
            policies[uri] = policy
            if fromXCAP {
                xcapPresentities.insert(uri)
            } else if let rulesFile {
                presRulesFiles[uri] = rulesFile
            }
        }
        return (defaultPolicy, policies, presRulesFiles, xcapPresentities)
    }

    /// Reads `subscriptions:`; absent: the defaults of ``Subscriptions``.
    private static func subscriptions(_ node: ConfigurationNode?) throws(ConfigurationError) -> Subscriptions {
        var subscriptions = Subscriptions()
        if let s = try node?.mapping(known: [
            "piggyback-wait-ms", "default-expires", "minimum-expires", "maximum-expires",
        ]) {
            if let v = s["piggyback-wait-ms"] {
                subscriptions.piggybackWaitMilliseconds = try v.integer(in: 0...30_000)
            }
            if let v = s["default-expires"] { subscriptions.defaultExpires = try v.integer(in: 1...604_800) }
            if let v = s["minimum-expires"] { subscriptions.minimumExpires = try v.integer(in: 1...604_800) }
            if let v = s["maximum-expires"] { subscriptions.maximumExpires = try v.integer(in: 1...604_800) }
            if subscriptions.minimumExpires > subscriptions.maximumExpires
                || !(subscriptions.minimumExpires...subscriptions.maximumExpires).contains(subscriptions.defaultExpires)
            {
                throw node.map { $0.error("need minimum-expires ≤ default-expires ≤ maximum-expires") }
                    ?? ConfigurationError("subscriptions")
            }
        }
        return subscriptions
    }

    /// Reads `admin:`; absent: no admin endpoint.
    private static func admin(_ node: ConfigurationNode?) throws(ConfigurationError) -> Admin? {
        guard
            let a = try node?.mapping(known: [
                "address", "port", "token", "token-file", "host-names", "tokenless-control",
            ])
        else {
            return nil
        }
        guard let host = a["address"], let port = a["port"] else {
            throw node.map { $0.error("admin needs address and port") } ?? ConfigurationError("admin")
        }
        if let file = a["token-file"], a["token"] != nil {
            throw file.error("admin: token or token-file, not both")
        }
        let tokenNode = a["token-file"] ?? a["token"]
        let token: String?
        if let file = a["token-file"] { token = try file.secretFile() } else { token = try a["token"]?.string() }
        if let token, token.count < 16 || !token.allSatisfy({ $0.isASCII && !$0.isWhitespace }) {
            throw tokenNode.map { $0.error("admin token: at least 16 printable ASCII characters") }
                ?? ConfigurationError("admin")
        }
        return Admin(
            host: try Self.loopbackOrIP(host), port: try port.integer(in: 0...65_535), token: token,
            hostNames: try a["host-names"]?.strings().map { $0.lowercased() } ?? [],
            tokenlessControl: try a["tokenless-control"]?.bool() ?? false)
    }

    /// Reads `shutdown:`; absent: keep with a durable `state`, else terminate.
    private static func shutdown(_ node: ConfigurationNode?, state: State) throws(ConfigurationError) -> Shutdown {
        let shutdown =
            try node?.choice(["keep": Shutdown.keep, "terminate": .terminate])
            ?? (state.isDurable ? .keep : .terminate)
        if shutdown == .keep, !state.isDurable, let node {
            throw node.error(
                "shutdown: keep needs a durable store (state.store: sqlite or postgres); nothing would be kept")
        }
        return shutdown
    }

    static let sides: [String: Side] = ["enterprise": .enterprise, "oma": .oma]
    static let transports: [String: SIPTransportKind] = ["udp": .udp, "tcp": .tcp, "tls": .tls]
    static let networks: [String: SourceNetwork] = [
        "sameEnterprise": .sameEnterprise, "federated": .federated, "publicCloud": .publicCloud,
    ]
    static let handlings: [String: SubHandling] = Dictionary(
        uniqueKeysWithValues: SubHandling.allCases.map { ($0.token, $0) })

    static func listener(_ node: ConfigurationNode) throws(ConfigurationError) -> Listener {
        let m = try node.mapping(known: ["side", "transport", "address", "port"])
        guard let side = m["side"], let transport = m["transport"], let address = m["address"] else {
            throw node.error("a listener needs side, transport and address")
        }
        let kind: SIPTransportKind = try transport.choice(transports)
        let port: UInt16 = try m["port"]?.integer(in: 0...65_535) ?? kind.defaultPort
        return Listener(side: try side.choice(sides), transport: kind, host: try loopbackOrIP(address), port: port)
    }

    /// An IP literal (IPv6 without brackets). Names are not resolved for listeners.
    static func loopbackOrIP(_ node: ConfigurationNode) throws(ConfigurationError) -> String {
        var text = try node.string()
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        let isIPv4 =
            text.split(separator: ".", omittingEmptySubsequences: false).count == 4
            && text.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { UInt8($0) != nil }
        let isIPv6 = text.contains(":") && text.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        guard isIPv4 || isIPv6 else { throw node.error("'\(text)' is not an IPv4 or IPv6 address") }
        return text
    }

    static func tls(_ node: ConfigurationNode) throws(ConfigurationError) -> TLS {
        let m = try node.mapping(known: [
            "certificate-chain", "private-key", "trust-roots", "require-client-certificate",
        ])
        guard let chain = m["certificate-chain"], let key = m["private-key"] else {
            throw node.error("tls needs certificate-chain and private-key (PEM files)")
        }
        return TLS(
            certificateChain: try chain.string(), privateKey: try key.string(),
            trustRoots: try m["trust-roots"]?.string(),
            requireClientCertificate: try m["require-client-certificate"]?.bool() ?? false)
    }

    static func domains(_ node: ConfigurationNode, extraKeys: [String] = []) throws(ConfigurationError) -> Domains {
        let m = try node.mapping(known: Set(["domains", "next-hop"] + extraKeys))
        guard let domains = m["domains"], let hop = m["next-hop"] else {
            throw node.error("needs domains and next-hop")
        }
        let names = try domains.strings().map { $0.lowercased() }
        guard !names.isEmpty else { throw domains.error("at least one domain") }
        let text = try hop.string()
        let nextHop: NextHop
        switch text {
        case "dns": nextHop = .dns(federation: false)
        case "dns-federation": nextHop = .dns(federation: true)
        default:
            do { nextHop = .uri(try SIPURI(text)) } catch {
                throw hop.error("'\(text)' is not a SIP URI, 'dns' or 'dns-federation': \(error)")
            }
        }
        var result = Domains(
            domains: names, nextHop: nextHop, rpidExtensions: try m["rpid-extensions"]?.bool() ?? false,
            partialNotifications: try m["partial-notifications"]?.bool() ?? false)
        if case .uri(let uri) = nextHop, uri.scheme == .sip, (uri.transport ?? "udp").lowercased() == "udp" {
            result.subscriberList = false
        }
        if let list = m["subscriber-list"] { result.subscriberList = try list.bool() }
        if let accept = m["accept"] { result.accept = try accept.choice(acceptances) }
        if let rls = m["rls"] {
            for (domain, value) in try rls.entries() {
                let name = domain.lowercased()
                guard names.contains(name) else { throw value.error("'\(domain)' is not one of this side's domains") }
                if try value.string() != "off" { result.rls[name] = try xcapRoot(value) }
            }
        }
        if let rate = m["rate-control"] {
            let r = try rate.mapping(known: ["min-interval", "max-interval"])
            result.minInterval = try r["min-interval"]?.integer(UInt32.self, in: 0...UInt32.max)
            result.maxInterval = try r["max-interval"]?.integer(UInt32.self, in: 0...UInt32.max)
        }
        return result
    }

    static func peer(_ node: ConfigurationNode) throws(ConfigurationError) -> Peer {
        let m = try node.mapping(known: [
            "name", "address", "port", "side", "network", "trusted", "certificate-names", "rate-limit",
            "max-subscriptions", "credentials",
        ])
        guard let name = m["name"], let address = m["address"], let side = m["side"] else {
            throw node.error("a peer needs name, address and side")
        }
        let peerSide: Side = try side.choice(sides)
        return Peer(
            name: try name.string(), host: try loopbackOrIP(address), port: try m["port"]?.integer(in: 1...65_535),
            side: peerSide,
            network: try m["network"]?.choice(networks) ?? (peerSide == .enterprise ? .sameEnterprise : .federated),
            trusted: try m["trusted"]?.bool() ?? false, certificateNames: try m["certificate-names"]?.strings() ?? [],
            rateLimit: try m["rate-limit"]?.number(in: 0.1...1_000_000),
            maxSubscriptions: try m["max-subscriptions"]?.integer(in: 1...100_000_000),
            credentials: try m["credentials"].map { node throws(ConfigurationError) in try Self.credentials(node) })
    }

    static func linked(_ node: ConfigurationNode) throws(ConfigurationError) -> LinkedIdentity {
        let m = try node.mapping(known: [
            "oma", "enterprise", "publish-to-enterprise", "publish-to-oma", "mirror-watchers",
        ])
        guard let oma = m["oma"], let enterprise = m["enterprise"] else {
            throw node.error("needs oma and enterprise URIs")
        }
        guard let o = WatcherIdentity.addressOfRecord(try oma.string()) else {
            throw oma.error("not a sip:user@host URI")
        }
        guard let e = WatcherIdentity.addressOfRecord(try enterprise.string()) else {
            throw enterprise.error("not a sip:user@host URI")
        }
        var identity = LinkedIdentity(
            oma: o, enterprise: e, publishToEnterprise: try m["publish-to-enterprise"]?.bool() ?? false,
            publishToOMA: try m["publish-to-oma"]?.bool() ?? true)
        if let mirror = m["mirror-watchers"] {
            identity.mirrorWatchers = try mirror.bool()
            // The OMA watchers see the identity's state only where the gateway publishes it.
            if identity.mirrorWatchers, !identity.publishToOMA { throw mirror.error("needs publish-to-oma") }
        }
        return identity
    }

    static func policy(_ node: ConfigurationNode, base: PresentityPolicy) throws(ConfigurationError) -> (
        PresentityPolicy, String?
    ) {
        let m = try node.mapping(known: ["defaults", "containers", "pres-rules"])
        var policy = base
        if let defaults = m["defaults"] {
            policy.defaults = [:]
            for (key, value) in try defaults.entries() {
                guard let network = networks[key] else {
                    throw value.error("'\(key)' is not sameEnterprise, federated or publicCloud")
                }
                policy.defaults[network] = try value.choice(handlings)
            }
        }
        if let containers = m["containers"] {
            var set: [UInt32: [ContainerMember]] = [:]
            var exposure: [UInt32: ContainerExposure] = [:]
            for (key, value) in try containers.entries() {
                guard let id = UInt32(key), id <= 32_767 else {
                    throw value.error("container ids are 0 to 32767 ([MS-PRES] schema 6.1)")
                }
                // `100: [members]`, or `100: { members: [...], categories: [...] | all | none }`.
                let memberList: ConfigurationNode
                if value.node.mapping != nil {
                    let c = try value.mapping(known: ["members", "categories"])
                    guard let listed = c["members"] else { throw value.error("a container needs 'members'") }
                    memberList = listed
                    exposure[id] =
                        try c["categories"].map { node throws(ConfigurationError) in try Self.exposure(node) }
                        ?? ContainerExposure.wellKnown(id)
                } else {
                    memberList = value
                    exposure[id] = ContainerExposure.wellKnown(id)
                }
                var members: [ContainerMember] = []
                for item in try memberList.list() {
                    let text = try item.string()
                    let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
                    let member =
                        parts.count == 2 && parts[0] == "domain"
                        ? ContainerMember(type: "domain", value: parts[1])
                        : text.hasPrefix("sip:") || text.hasPrefix("sips:")
                            ? ContainerMember(type: "user", value: text)
                            : ContainerMember(type: text, value: nil)
                    guard let member else {
                        throw item.error(
                            "'\(text)' is not a member (sip:user@host, domain:NAME, sameEnterprise, federated, publicCloud, everyone)"
                        )
                    }
                    members.append(member)
                }
                set[id] = members
            }
            policy.containers = ContainerSet(set, exposure: exposure)
        }
        return (policy, try m["pres-rules"]?.string())
    }

    /// A container's `categories`: a list of category names, `all`, or `none` (the never-published
    /// view, as [MS-PRES] container 32000 holds for blocked watchers).
    static func exposure(_ node: ConfigurationNode) throws(ConfigurationError) -> ContainerExposure {
        if node.node.scalar != nil {
            switch try node.string() {
            case "all": return .all
            case "none": return .neverPublished
            case let other: throw node.error("'\(other)' is not a list of categories, 'all' or 'none'")
            }
        }
        var names: Set<CategoryName> = []
        for item in try node.list() {
            let name = try item.string()
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber }) else {
                throw item.error("'\(name)' is not a category name ([MS-PRES] §2.2.2.7)")
            }
            if CategoryName.privateCategories.contains(CategoryName(rawValue: name)) {
                throw item.error("'\(name)' is a private category: never sent to other watchers ([MS-PRES] §3.4.5.1.3)")
            }
            names.insert(CategoryName(rawValue: name))
        }
        return .only(names)
    }
}

extension GatewayConfiguration {
    /// Whether the gateway serves watcher information (RFC 3857) for `presentity` (an address
    /// of record): it decides who may watch it (an entry under `presentities`), or it is the
    /// presence server of it (a linked identity with `publish-to-enterprise`).
    public func servesWatcherInfo(of presentity: String) -> Bool {
        policies[presentity] != nil || linkedIdentities.contains { $0.publishToEnterprise && $0.oma == presentity }
    }
}
