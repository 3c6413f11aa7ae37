import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// The gateway's XDM client (RFC 4825): every XCAP request of the pres-rules and rls-services
/// sources and of the list writer goes through it, made known at its XCAP root as `xcap-auth:`
/// says (GatewayConfiguration+XCAPAuth.swift): HTTP Digest answered to the Aggregation Proxy's
/// 401 (RFC 7616; PacketCable Presence §6.2.18, §6.7), or an asserted identity header.
///
/// Digest: the first request to a root goes without credentials; its 401's challenge is answered
/// and kept, and every later request to that root answers it again at once with the next `nc`
/// (RFC 7616 §3.4), until the server says `stale=true` (a new nonce, same credentials, §3.3) or
/// gives a `nextnonce` (§3.5). A 401 to credentials that were not stale is a failure: counted in
/// `gateway_xcap_auth_failures_total{root}`, logged once naming the root and the status, shown in
/// `/health` until a request to that root succeeds. One request makes at most three attempts:
/// never a loop on repeated 401s. Neither the password nor the `Authorization` field is ever
/// logged or shown.
final class XCAPClient: Sendable {
    /// What one request was answered: the status, header fields and body (at most the bytes asked).
    struct Answer: Sendable {
        var status: Int
        var reason: String
        var headers: HTTPHeaders
        var body: [UInt8]
    }

    /// The Digest state of one root: the challenge answered and the last `nc` sent with its nonce.
    struct Session: Sendable {
        var challenge: HTTPDigest.Challenge
        var nonceCount: UInt32 = 0
    }

    struct State: Sendable {
        var authentication: [String: GatewayConfiguration.XCAPAuthentication]
        var sessions: [String: Session] = [:]
        var roots: [String: XCAPRootStatus] = [:]
    }

    let state: NIOLockedValueBox<State>
    /// Made at the first request, so a gateway that never asks an XCAP server holds no client.
    private let client = NIOLockedValueBox<HTTPClient?>(nil)
    private let timeoutSeconds: Int
    let factory: any MetricsFactory
    let logger: Logger

    init(
        authentication: [String: GatewayConfiguration.XCAPAuthentication], roots: Set<String>, timeoutSeconds: Int,
        factory: any MetricsFactory, logger: Logger
    ) {
        self.timeoutSeconds = timeoutSeconds
        self.factory = factory
        self.logger = logger
        state = NIOLockedValueBox(State(authentication: authentication))
        configure(authentication: authentication, roots: roots)
    }

    /// Takes the `xcap-auth:` of a reload (a password file rewritten, a root added): sessions of
    /// roots whose authentication changed start again; every root in `roots` is shown.
    func configure(authentication: [String: GatewayConfiguration.XCAPAuthentication], roots: Set<String>) {
        state.withLockedValue { state in
            for (root, _) in state.sessions where state.authentication[root] != authentication[root] {
                state.sessions[root] = nil
            }
            state.authentication = authentication
            for root in roots.union(authentication.keys) where state.roots[root] == nil {
                state.roots[root] = XCAPRootStatus(root: root)
            }
            for root in state.roots.keys { state.roots[root]?.method = Self.method(authentication[root]) }
        }
        // Made now, so that the series is there (0) before any failure.
        for root in roots.union(authentication.keys) { _ = failures(root) }
    }

    /// Each root's status, for `/health`, in root order.
    var status: [XCAPRootStatus] { state.withLockedValue { $0.roots.values.sorted { $0.root < $1.root } } }

    /// `gateway_xcap_auth_failures_total{root}`.
    private func failures(_ root: String) -> Counter {
        Counter(label: "gateway_xcap_auth_failures_total", dimensions: [("root", root)], factory: factory)
    }

    private static func method(_ authentication: GatewayConfiguration.XCAPAuthentication?) -> String {
        switch authentication {
        case .digest: "digest"
        case .assertedIdentity: "asserted-identity"
        case nil: "none"
        }
    }

    /// The configured root `uri` lies under: the longest one that is `uri` or a prefix of it
    /// ending at a `/`.
    func root(of uri: String) -> String? {
        state.withLockedValue { state in
            state.roots.keys.filter { uri == $0 || uri.hasPrefix($0 + "/") }.max { $0.count < $1.count }
        }
    }

    /// Sends `method` to `uri` with `headers` (and `body`), authenticating as its root asks, and
    /// reads at most `maximumBytes` of the answer's body, each attempt within `timeoutSeconds`
    /// (default: the client's). A failure when no answer came in time (or the body was longer),
    /// saying what happened.
    func execute(
        _ method: HTTPMethod, _ uri: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
        maximumBytes: Int = 1 << 20, timeoutSeconds: Int? = nil
    ) async -> Result<Answer, XCAPFailure> {
        let root = root(of: uri)
        var sentCredentials = false
        for attempt in 1...3 {
            var request = HTTPClientRequest(url: uri)
            request.method = method
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
            sentCredentials = authenticate(&request, root: root, method: method, uri: uri)
            let answer: Answer
            do {
                answer = try await send(
                    request, maximumBytes: maximumBytes, timeoutSeconds: timeoutSeconds ?? self.timeoutSeconds)
            } catch {
                return .failure(XCAPFailure(description: "no answer (\(error))"))
            }
            guard answer.status == 401, let root, attempt < 3 else {
                return .success(settle(answer, root: root, method: method, uri: uri, credentials: sentCredentials))
            }
            switch challenged(answer, root: root, sentCredentials: sentCredentials) {
            case .retry: continue
            case .refused(let why):
                refused(root: root, status: answer, method: method, uri: uri, why: why)
                return .success(answer)
            }
        }
        return .failure(XCAPFailure(description: "no answer"))
    }

    /// Closes the client; requests still under way fail.
    func shutdown() async {
        let running = client.withLockedValue { client in
            defer { client = nil }
            return client
        }
        try? await running?.shutdown()
    }

    private func send(_ request: HTTPClientRequest, maximumBytes: Int, timeoutSeconds: Int) async throws -> Answer {
        let http = client.withLockedValue { client in
            if let client { return client }
            let made = HTTPClient.xcap(timeoutSeconds: timeoutSeconds)
            client = made
            return made
        }
        let response = try await http.execute(request, timeout: .seconds(Int64(timeoutSeconds)))
        // A 401's page is not needed: read little of it.
        let limit = response.status.code == 401 ? min(maximumBytes, 1 << 16) : maximumBytes
        let body = try await response.body.collect(upTo: limit)
        return Answer(
            status: Int(response.status.code), reason: response.status.reasonPhrase, headers: response.headers,
            body: Array(buffer: body))
    }
}

/// Why an XCAP request had no answer; never holds a secret.
struct XCAPFailure: Error, Sendable, CustomStringConvertible {
    var description: String
}

/// One XCAP root's authentication as `/health` shows it (README, "Admin endpoint").
struct XCAPRootStatus: Sendable, Equatable, Encodable {
    var root: String
    /// `digest`, `asserted-identity` or `none`.
    var method = "none"
    /// `unknown` before any answer, `ok` once a request was answered without refusal, `failed`
    /// after a refusal (401 or 403) until one is.
    var authentication = "unknown"
    /// The HTTP status of the last refusal, and why.
    var status: Int?
    var reason: String?
    /// Refusals since the start.
    var failures = 0
    /// When the refusals began (the first since the last success).
    var since: Date?
    /// The pres-rules root: presentities whose watchers wait for their first document.
    var awaiting: Int?
}
