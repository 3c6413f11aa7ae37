import Foundation
public import GatewayState
import Logging
public import NIOCore
import NIOHTTP1
public import SIPTransport

/// The runtime control API on the admin endpoint (README, "Runtime control"), in JSON:
///
/// - `GET /subscriptions?uri=&side=&offset=&limit=`: the bridged subscriptions, a page at a time;
/// - `DELETE /subscriptions/{id}` (optional body `{"reason": "deactivated" | "rejected"}`):
///   ends one (404 for an unknown id);
/// - `GET /peers`: each peer's and next hop's health, and whether it is drained;
/// - `PUT /peers/{name}` with `{"drained": true | false}`: drains a peer (no new dialog from or
///   toward it, 503 with Retry-After; its dialogs go on) or ends that (GatewayCore+Draining.swift);
/// - `GET /log-level`, `PUT /log-level` with `{"level": "debug"}`: the running log level of every
///   logger (``LogLevelSwitch``; 409 when the program embedding the gateway owns logging);
/// - `GET /capture`, `PUT /capture` with `{"enabled": false}`: HEP capture turned off and on (409
///   when `capture:` is not configured);
/// - `GET /connections?side=&offset=&limit=`: each side's open TCP and TLS connections, a page at
///   a time;
/// - `GET /leases?offset=&limit=`: the PostgreSQL shared state's nodes, their leases and what they
///   hold (409 with another store);
/// - `GET /dns?offset=&limit=`: the resolvers' cache (409 when no next hop is resolved by DNS);
/// - `POST /reload`: the configuration file read again and applied without dropping a dialog
///   (400 with `FILE:LINE:COLUMN: message` for an invalid file; the running configuration stays);
/// - `POST /node/drain`: this node's dialogs handed to the other nodes of a shared store, then
///   its SIP listeners closed (`{"handedOver": N}`; 409 when it cannot drain);
/// - `GET /status.json`: version, uptime, store, counts, peers and the samples of the last 15
///   minutes (``GatewayStatusReport``);
/// - `GET /`: a status page in HTML that refreshes itself from `/status.json`.
///
/// With a token configured every request needs `Authorization: Bearer <token>`; without one
/// only loopback clients are answered, and only what changes nothing unless the operator opted
/// out (`tokenless-control`). Whatever the client, the Host must be an IP literal, `localhost`
/// or one of `host-names`, and an Origin, when sent, the Host's own origin: a web page in the
/// operator's browser cannot use it (DNS rebinding, a cross-site form or fetch; docs/security.md,
/// "The admin endpoint"). Errors are `{"error": "..."}` with the status.
public struct AdminAPI: Sendable {
    public typealias Subscription = GatewayCore.BridgedSubscription

    public var token: String?
    /// Host names answered under besides IP literals and `localhost`, lower-cased.
    public var hostNames: [String] = []
    /// State-changing requests are taken without a token.
    public var tokenlessControl = false
    /// A page of the bridged subscriptions (`offset`, `limit`) and how many match in all.
    public var subscriptions:
        @Sendable (_ uri: String?, _ side: GatewayConfiguration.Side?, _ offset: Int, _ limit: Int) -> EventLoopFuture<
            (total: Int, page: [Subscription])
        >
    public var end: @Sendable (_ id: String, _ reason: String) -> EventLoopFuture<Bool>
    public var peers: @Sendable () -> EventLoopFuture<[PeerHealth]>
    /// Reloads; the future fails with the error to report (its description is the message).
    public var reload: @Sendable () -> EventLoopFuture<String>
    /// Drains this node; the number of records handed over. Nil: the gateway cannot drain.
    public var drainNode: (@Sendable () -> EventLoopFuture<Int>)?
    /// Drains a peer (true) or ends that; the peer as `/peers` shows it, nil for an unknown name.
    public var drain: (@Sendable (_ name: String, _ drained: Bool) -> EventLoopFuture<PeerHealth?>)?
    /// The level every logger follows; nil when the gateway does not own the process's logging.
    public var logLevels: LogLevelSwitch?
    /// The HEP capture (`capture:`); nil when none is configured.
    public var capture: HEPCapture?
    /// A page of the shared store's nodes and their number; fails with the reason there is
    /// none to show (another store: ``AdminAPI/Conflict``).
    public var leases:
        (
            @Sendable (_ offset: Int, _ limit: Int) -> EventLoopFuture<
                (total: Int, page: [PostgresStateStore.NodeLease])
            >
        )?
    /// A page of the resolvers' cache and its size; nil when no next hop is resolved by DNS.
    public var dns: (@Sendable (_ offset: Int, _ limit: Int) -> (total: Int, page: [DNSCache.Listed]))?
    /// A control that does not apply to how the gateway was configured (409).
    public struct Conflict: Error, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }
    /// A page of one side's open stream connections and how many there are.
    public var connections:
        (
            @Sendable (_ side: GatewayConfiguration.Side, _ offset: Int, _ limit: Int) -> EventLoopFuture<
                (total: Int, page: [SIPNetworkTransport.OpenConnection])
            >
        )?
    /// The status report without its peers (``GatewayStatusReport``), read from thread-safe
    /// copies on the admin endpoint's thread; nil (or a nil answer, before the gateway has one):
    /// `GET /status.json` is 404 and the status page shows no samples.
    public var report: (@Sendable () -> GatewayStatusReport?)?

    public init(
        token: String?,
        subscriptions:
            @escaping @Sendable (String?, GatewayConfiguration.Side?, Int, Int) -> EventLoopFuture<
                (total: Int, page: [Subscription])
            >,
        end: @escaping @Sendable (String, String) -> EventLoopFuture<Bool>,
        peers: @escaping @Sendable () -> EventLoopFuture<[PeerHealth]>,
        reload: @escaping @Sendable () -> EventLoopFuture<String>
    ) {
        self.token = token
        self.subscriptions = subscriptions
        self.end = end
        self.peers = peers
        self.reload = reload
    }

    /// Largest request body taken (a DELETE's reason); larger ones get 413.
    static let maxBody = 4096
    /// Most subscriptions in one page.
    static let maxPage = 1000

    struct Reply: Sendable {
        var status: HTTPResponseStatus
        var type = "application/json"
        var body: [UInt8]
        var headers: [(String, String)] = []
    }

    static func error(_ status: HTTPResponseStatus, _ message: String, headers: [(String, String)] = []) -> Reply {
        Reply(status: status, body: json(["error": message]), headers: headers)
    }

    static func json(_ value: some Encodable) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return Array(((try? encoder.encode(value)) ?? Data(#"{"error":"unencodable"}"#.utf8)) + Data("\n".utf8))
    }

    /// Whether `address` (an IP address) is a loopback address.
    static func isLoopback(_ address: String) -> Bool {
        address.hasPrefix("127.") || address == "::1" || address.hasPrefix("::ffff:127.")
    }

    /// The refusal of a request whose Host is a name the API does not answer under (421, RFC 9110
    /// §15.5.20), or whose Origin is not the Host's own (403); nil when both are acceptable.
    func refusedOrigin(_ headers: HTTPHeaders) -> Reply? {
        guard let host = headers["Host"].first, headers["Host"].count == 1, acceptsHost(host) else {
            return Self.error(
                .misdirectedRequest, "this Host is not one the admin API answers under (admin.host-names)")
        }
        if let origin = headers["Origin"].first {
            let authority = origin.split(separator: "/", omittingEmptySubsequences: false)
            guard authority.count == 3, authority[0] == "http:" || authority[0] == "https:", authority[1].isEmpty,
                authority[2].lowercased() == host.lowercased()
            else {
                return Self.error(.forbidden, "requests from another origin than the admin endpoint's are refused")
            }
        }
        return nil
    }

    /// Whether `authority` (a Host header: host and optional port) names an IP literal,
    /// `localhost` or one of ``hostNames``: the names a DNS-rebinding page cannot use.
    func acceptsHost(_ authority: String) -> Bool {
        var host = Substring(authority.lowercased())
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            let literal = host[host.index(after: host.startIndex)..<close]
            return !literal.isEmpty && literal.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        }
        if let colon = host.lastIndex(of: ":") {
            guard host[host.index(after: colon)...].allSatisfy(\.isNumber) else { return false }
            host = host[..<colon]
        }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        if octets.count == 4, octets.allSatisfy({ !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isNumber) }) {
            return true
        }
        return host == "localhost" || hostNames.contains(String(host))
    }

    /// Compares without stopping at the first difference, so timing does not tell how much of a
    /// guessed token was right.
    static func sameToken(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// What a call fails with before the gateway serves (restoring its dialogs at start): answered
    /// 503 with Retry-After, `/health` saying how far the start has come.
    public struct Unavailable: Error {
        public init() {}
    }

    static let starting = error(
        .serviceUnavailable, "the gateway is starting: /health says how far", headers: [("Retry-After", "5")])

    /// Answers one API request; `tooLarge` when its body went past ``maxBody``.
    func handle(_ head: HTTPRequestHead, body: [UInt8], tooLarge: Bool, remote: String, on loop: any EventLoop)
        -> EventLoopFuture<Reply>
    {
        answer(head, body: body, tooLarge: tooLarge, remote: remote, on: loop).flatMapErrorThrowing { error in
            guard error is Unavailable else { throw error }
            return Self.starting
        }
    }

    private func answer(_ head: HTTPRequestHead, body: [UInt8], tooLarge: Bool, remote: String, on loop: any EventLoop)
        -> EventLoopFuture<Reply>
    {
        if let refused = refusedOrigin(head.headers) { return loop.makeSucceededFuture(refused) }
        if let token {
            let given = head.headers["Authorization"].first ?? ""
            guard given.hasPrefix("Bearer "), Self.sameToken(String(given.dropFirst(7)), token) else {
                return loop.makeSucceededFuture(
                    Self.error(.unauthorized, "a bearer token is required", headers: [("WWW-Authenticate", "Bearer")]))
            }
        } else if !Self.isLoopback(remote) {
            return loop.makeSucceededFuture(
                Self.error(
                    .forbidden, "the admin API answers other addresses than loopback only with a token (admin.token)"))
        }
        if token == nil, !tokenlessControl, head.method != .GET, head.method != .HEAD {
            return loop.makeSucceededFuture(
                Self.error(
                    .forbidden,
                    "\(head.method) changes the gateway: it needs admin.token (or admin.tokenless-control: true)"))
        }
        if tooLarge {
            return loop.makeSucceededFuture(Self.error(.payloadTooLarge, "request body over \(Self.maxBody) bytes"))
        }
        return route(head, body: body, on: loop)
    }

    /// An authorized request, by path.
    private func route(_ head: HTTPRequestHead, body: [UInt8], on loop: any EventLoop) -> EventLoopFuture<Reply> {
        let parts = head.uri.split(separator: "?", maxSplits: 1)
        let path = parts.first.map(String.init) ?? head.uri
        let query = Self.query(parts.count > 1 ? String(parts[1]) : "")
        let segments = path.split(separator: "/").map(String.init)
        let only = { (methods: HTTPMethod...) in Self.only(methods, head.method) }
        switch segments.first {
        case nil:
            if let refused = only(.GET, .HEAD) { return loop.makeSucceededFuture(refused) }
            return statusPage(on: loop)
        case "status.json" where segments.count == 1:
            if let refused = only(.GET, .HEAD) { return loop.makeSucceededFuture(refused) }
            return statusJSON(on: loop)
        case "subscriptions" where segments.count == 1:
            if let refused = only(.GET, .HEAD) { return loop.makeSucceededFuture(refused) }
            return list(query, on: loop)
        case "subscriptions" where segments.count == 2:
            if let refused = only(.DELETE) { return loop.makeSucceededFuture(refused) }
            return end(segments[1], body: body, query: query, on: loop)
        case "peers" where segments.count == 1:
            if let refused = only(.GET, .HEAD) { return loop.makeSucceededFuture(refused) }
            return peers().map { Reply(status: .ok, body: Self.json(["peers": $0])) }
        case "peers" where segments.count == 2:
            if let refused = only(.PUT) { return loop.makeSucceededFuture(refused) }
            return drainPeer(segments[1].removingPercentEncoding ?? segments[1], body: body, on: loop)
        case "log-level" where segments.count == 1:
            if let refused = only(.GET, .HEAD, .PUT) { return loop.makeSucceededFuture(refused) }
            return loop.makeSucceededFuture(logLevelControl(head.method == .PUT ? body : nil))
        case "capture" where segments.count == 1:
            if let refused = only(.GET, .HEAD, .PUT) { return loop.makeSucceededFuture(refused) }
            return loop.makeSucceededFuture(captureControl(head.method == .PUT ? body : nil))
        case "connections" where segments.count == 1:
            if let refused = only(.GET, .HEAD) { return loop.makeSucceededFuture(refused) }
            return listConnections(query, on: loop)
        case "leases" where segments.count == 1:
            if let refused = only(.GET, .HEAD) { return loop.makeSucceededFuture(refused) }
            return listLeases(query, on: loop)
        case "dns" where segments.count == 1:
            if let refused = only(.GET, .HEAD) { return loop.makeSucceededFuture(refused) }
            return loop.makeSucceededFuture(dnsCache(query))
        case "reload" where segments.count == 1:
            if let refused = only(.POST) { return loop.makeSucceededFuture(refused) }
            if !body.isEmpty, (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] == nil {
                return loop.makeSucceededFuture(Self.error(.badRequest, "the body must be empty or a JSON object"))
            }
            return reload().map { Reply(status: .ok, body: Self.json(["reloaded": $0])) }
                .recover { $0 is Unavailable ? Self.starting : Self.error(.badRequest, "\($0)") }
        case "node" where segments == ["node", "drain"]:
            if let refused = only(.POST) { return loop.makeSucceededFuture(refused) }
            guard let drainNode else {
                return loop.makeSucceededFuture(Self.error(.conflict, "this gateway cannot drain"))
            }
            return drainNode().map { Reply(status: .ok, body: Self.json(["handedOver": $0])) }
                .recover { $0 is Unavailable ? Self.starting : Self.error(.conflict, "\($0)") }
        default:
            return loop.makeSucceededFuture(Self.error(.notFound, "no such resource: \(path)"))
        }
    }

    /// 405 with Allow unless `method` is one of `methods`.
    static func only(_ methods: [HTTPMethod], _ method: HTTPMethod) -> Reply? {
        methods.contains(method)
            ? nil
            : Self.error(
                .methodNotAllowed, "\(method) is not allowed here",
                headers: [("Allow", methods.map(\.rawValue).joined(separator: ", "))])
    }

    private func list(_ query: [String: String], on loop: any EventLoop) -> EventLoopFuture<Reply> {
        var side: GatewayConfiguration.Side?
        if let name = query["side"] {
            guard let known = GatewayConfiguration.Side(rawValue: name) else {
                return loop.makeSucceededFuture(Self.error(.badRequest, "side must be enterprise or oma"))
            }
            side = known
        }
        guard let (offset, limit) = Self.page(query) else {
            return loop.makeSucceededFuture(Self.error(.badRequest, "offset must be ≥ 0 and limit 1…\(Self.maxPage)"))
        }
        return subscriptions(query["uri"], side, offset, limit).map { total, page in
            struct Page: Encodable {
                var total, offset, limit: Int
                var subscriptions: [Subscription]
            }
            return Reply(
                status: .ok, body: Self.json(Page(total: total, offset: offset, limit: limit, subscriptions: page)))
        }
    }

    private func end(_ id: String, body: [UInt8], query: [String: String], on loop: any EventLoop) -> EventLoopFuture<
        Reply
    > {
        var reason = query["reason"] ?? "deactivated"
        if !body.isEmpty {
            struct Options: Decodable { var reason: String? }
            guard let options = try? JSONDecoder().decode(Options.self, from: Data(body)) else {
                return loop.makeSucceededFuture(
                    Self.error(.badRequest, #"the body must be a JSON object such as {"reason": "rejected"}"#))
            }
            reason = options.reason ?? reason
        }
        guard ["deactivated", "rejected"].contains(reason) else {
            return loop.makeSucceededFuture(Self.error(.badRequest, "reason must be deactivated or rejected"))
        }
        let ending = reason
        return end(id, ending).map { ended in
            ended
                ? Reply(status: .ok, body: Self.json(["ended": id, "reason": ending]))
                : Self.error(.notFound, "no subscription \(id)")
        }
    }

    /// `PUT /peers/{name}`: `{"drained": true}` or `{"drained": false}`.
    private func drainPeer(_ name: String, body: [UInt8], on loop: any EventLoop) -> EventLoopFuture<Reply> {
        struct Change: Decodable { var drained: Bool }
        guard let change = try? JSONDecoder().decode(Change.self, from: Data(body)) else {
            return loop.makeSucceededFuture(
                Self.error(.badRequest, #"the body must be a JSON object such as {"drained": true}"#))
        }
        guard let drain else { return loop.makeSucceededFuture(Self.error(.notFound, "no peer \(name)")) }
        return drain(name, change.drained).map { peer in
            peer.map { Reply(status: .ok, body: Self.json($0)) }
                ?? Self.error(.notFound, "no peer \(name): GET /peers lists the names")
        }
    }

    /// `GET /log-level` (`body` nil) or `PUT /log-level` with `{"level": "debug"}`.
    private func logLevelControl(_ body: [UInt8]?) -> Reply {
        guard let logLevels else {
            return Self.error(.conflict, "logging belongs to the program running the gateway, not to the admin API")
        }
        guard let body else { return Reply(status: .ok, body: Self.json(["level": logLevels.level.rawValue])) }
        struct Change: Decodable { var level: String }
        let names = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
        guard let change = try? JSONDecoder().decode(Change.self, from: Data(body)) else {
            return Self.error(.badRequest, #"the body must be a JSON object such as {"level": "debug"}"#)
        }
        guard let level = Logger.Level(rawValue: change.level.lowercased()) else {
            return Self.error(.badRequest, "unknown log level \"\(change.level)\": one of \(names)")
        }
        let previous = logLevels.level
        logLevels.level = level
        if level != previous {
            Logger(label: "presence-gateway").notice("log level \(previous) → \(level) (admin API)")
        }
        return Reply(status: .ok, body: Self.json(["level": level.rawValue, "previous": previous.rawValue]))
    }

    /// `GET /capture` (`body` nil) or `PUT /capture` with `{"enabled": false}`.
    private func captureControl(_ body: [UInt8]?) -> Reply {
        guard let capture else {
            return Self.error(
                .conflict, "no HEP capture is configured (capture: in the configuration, which needs a restart)")
        }
        if let body {
            struct Change: Decodable { var enabled: Bool }
            guard let change = try? JSONDecoder().decode(Change.self, from: Data(body)) else {
                return Self.error(.badRequest, #"the body must be a JSON object such as {"enabled": false}"#)
            }
            if capture.isEnabled != change.enabled {
                capture.isEnabled = change.enabled
                Logger(label: "sip.capture").notice("HEP capture \(change.enabled ? "on" : "off") (admin API)")
            }
        }
        struct State: Encodable {
            var enabled: Bool
            var collector: String
            var id: UInt32
            var sent, dropped: Int
        }
        let settings = capture.configuration
        let host = settings.host.contains(":") ? "[\(settings.host)]" : settings.host
        let statistics = capture.statistics
        return Reply(
            status: .ok,
            body: Self.json(
                State(
                    enabled: capture.isEnabled, collector: "udp:\(host):\(settings.port)", id: settings.captureID,
                    sent: statistics.sent, dropped: statistics.droppedTotal)))
    }

    /// The `offset` (default 0) and `limit` (default 100, at most ``maxPage``) of a paged list;
    /// nil when either is out of range.
    static func page(_ query: [String: String]) -> (offset: Int, limit: Int)? {
        guard let offset = Int(query["offset"] ?? "0"), offset >= 0,
            let limit = Int(query["limit"] ?? "100"), (1...Self.maxPage).contains(limit)
        else { return nil }
        return (offset, limit)
    }

    /// `GET /connections`: per side (both, or `side`), a page of its open connections.
    private func listConnections(_ query: [String: String], on loop: any EventLoop) -> EventLoopFuture<Reply> {
        var sides = GatewayConfiguration.Side.allCases
        if let name = query["side"] {
            guard let side = GatewayConfiguration.Side(rawValue: name) else {
                return loop.makeSucceededFuture(Self.error(.badRequest, "side must be enterprise or oma"))
            }
            sides = [side]
        }
        guard let (offset, limit) = Self.page(query) else {
            return loop.makeSucceededFuture(Self.error(.badRequest, "offset must be ≥ 0 and limit 1…\(Self.maxPage)"))
        }
        guard let connections else { return loop.makeSucceededFuture(Self.error(.notFound, "no connections")) }
        struct SidePage: Encodable {
            var total, offset, limit: Int
            var connections: [SIPNetworkTransport.OpenConnection]
        }
        let pages = sides.map { side in
            connections(side, offset, limit).map {
                (side.rawValue, SidePage(total: $0, offset: offset, limit: limit, connections: $1))
            }
        }
        return EventLoopFuture.whenAllSucceed(pages, on: loop).map {
            Reply(status: .ok, body: Self.json(Dictionary(uniqueKeysWithValues: $0)))
        }
    }

    /// `GET /dns`: a page of the resolvers' cache.
    private func dnsCache(_ query: [String: String]) -> Reply {
        guard let (offset, limit) = Self.page(query) else {
            return Self.error(.badRequest, "offset must be ≥ 0 and limit 1…\(Self.maxPage)")
        }
        guard let dns else {
            return Self.error(
                .conflict, "no next hop is resolved by DNS (next-hop: dns or dns-federation): there is no DNS cache")
        }
        struct Page: Encodable {
            var total, offset, limit: Int
            var entries: [DNSCache.Listed]
        }
        let (total, page) = dns(offset, limit)
        return Reply(status: .ok, body: Self.json(Page(total: total, offset: offset, limit: limit, entries: page)))
    }

    /// `GET /leases`: a page of the shared store's nodes.
    private func listLeases(_ query: [String: String], on loop: any EventLoop) -> EventLoopFuture<Reply> {
        guard let (offset, limit) = Self.page(query) else {
            return loop.makeSucceededFuture(Self.error(.badRequest, "offset must be ≥ 0 and limit 1…\(Self.maxPage)"))
        }
        guard let leases else {
            return loop.makeSucceededFuture(Self.error(.conflict, "leases exist only with state: { store: postgres }"))
        }
        struct Page: Encodable {
            var total, offset, limit: Int
            var nodes: [PostgresStateStore.NodeLease]
        }
        return leases(offset, limit).map {
            Reply(status: .ok, body: Self.json(Page(total: $0, offset: offset, limit: limit, nodes: $1)))
        }.recover { error in
            error is Conflict
                ? Self.error(.conflict, "\(error)") : Self.error(.serviceUnavailable, "\(error)")
        }
    }

    /// `a=b&c=d`, percent-decoded (`+` is a space).
    static func query(_ text: String) -> [String: String] {
        var out: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map {
                $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            guard let key = kv.first else { continue }
            out[key] = kv.count > 1 ? kv[1] : ""
        }
        return out
    }
}
