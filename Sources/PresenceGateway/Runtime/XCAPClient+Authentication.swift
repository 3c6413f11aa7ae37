import AsyncHTTPClient
import Foundation
import Metrics
import NIOHTTP1
import SIPStack

extension XCAPClient {
    /// What a 401 leads to: another attempt with the challenge now kept, or a refusal.
    enum Challenged {
        case retry
        case refused(String)
    }

    /// Adds what `root`'s authentication asks to `request`: the asserted identity, or the Digest
    /// answer to the challenge kept with the next `nc`. Whether Digest credentials were sent.
    func authenticate(_ request: inout HTTPClientRequest, root: String?, method: HTTPMethod, uri: String) -> Bool {
        guard let root else { return false }
        return state.withLockedValue { state -> Bool in
            switch state.authentication[root] {
            case .assertedIdentity(let header, let identity):
                request.headers.replaceOrAdd(name: header, value: DigestHash.quoted(identity))
                return false
            case .digest(let credentials):
                guard var session = state.sessions[root] else { return false }
                session.nonceCount &+= 1
                state.sessions[root] = session
                let use = HTTPDigest.Use(
                    method: method.rawValue, uri: Self.requestTarget(uri), nonceCount: session.nonceCount,
                    cnonce: HTTPDigest.makeCnonce())
                let user = HTTPDigest.Credentials(username: credentials.username, password: credentials.password)
                request.headers.replaceOrAdd(
                    name: "Authorization", value: HTTPDigest.authorization(session.challenge, user, use))
                return true
            case nil:
                return false
            }
        }
    }

    /// A 401 from `root`: its challenge is kept and the request tried again when there are
    /// credentials to answer with and they were not just refused (a `stale` nonce refuses the
    /// nonce, not the credentials: RFC 7616 §3.3).
    func challenged(_ answer: Answer, root: String, sentCredentials: Bool) -> Challenged {
        state.withLockedValue { state -> Challenged in
            guard case .digest = state.authentication[root] else {
                return .refused("no credentials configured for it (xcap-auth)")
            }
            switch HTTPDigest.challenge(in: answer.headers["WWW-Authenticate"]) {
            case .failure(let refusal):
                state.sessions[root] = nil
                return .refused(refusal.description)
            case .success(let challenge):
                if sentCredentials, !challenge.stale {
                    state.sessions[root] = nil
                    return .refused("the credentials were refused")
                }
                state.sessions[root] = Session(challenge: challenge)
                return .retry
            }
        }
    }

    /// The final answer to a request to `root`: a 401 or 403 is a refusal; anything else proves
    /// the root takes the gateway, and a `nextnonce` (RFC 7616 §3.5) replaces the nonce kept.
    func settle(_ answer: Answer, root: String?, method: HTTPMethod, uri: String, credentials: Bool) -> Answer {
        guard let root else { return answer }
        if answer.status == 401 || answer.status == 403 {
            let why = answer.status == 403 ? "refused the gateway's identity" : "the credentials were refused"
            refused(root: root, status: answer, method: method, uri: uri, why: why)
            return answer
        }
        let recovered = state.withLockedValue { state -> XCAPRootStatus? in
            if credentials, let info = answer.headers.first(name: "Authentication-Info"),
                let next = HTTPDigest.nextNonce(in: info), !next.isEmpty, var session = state.sessions[root]
            {
                session.challenge.nonce = next
                session.nonceCount = 0
                state.sessions[root] = session
            }
            let before = state.roots[root]
            state.roots[root]?.authentication = "ok"
            state.roots[root]?.since = nil
            return before?.authentication == "failed" ? before : nil
        }
        if let recovered {
            logger.notice(
                "XCAP root \(root): \(method.rawValue) \(uri) answered \(answer.status): authenticated again after \(recovered.failures) refusals"
            )
        }
        return answer
    }

    /// Counts and shows a refusal by `root`, and logs it when the root was not failing already.
    func refused(root: String, status answer: Answer, method: HTTPMethod, uri: String, why: String) {
        let first = state.withLockedValue { state -> Bool in
            var status = state.roots[root] ?? XCAPRootStatus(root: root)
            let first = status.authentication != "failed"
            status.authentication = "failed"
            status.status = answer.status
            status.reason = why
            status.failures += 1
            if first { status.since = Date() }
            state.roots[root] = status
            return first
        }
        Counter(label: "gateway_xcap_auth_failures_total", dimensions: [("root", root)], factory: factory)
            .increment()
        let text = "XCAP root \(root): \(method.rawValue) \(uri) answered \(answer.status) \(answer.reason): \(why)"
        if first {
            logger.error("\(text); authentication failed, tried again at the next poll (/health shows it)")
        } else {
            logger.debug("\(text)")
        }
    }

    /// The request-target of `uri` as sent (RFC 7230 §5.3.1, origin-form): its path and query.
    static func requestTarget(_ uri: String) -> String {
        guard let scheme = uri.range(of: "://") else { return uri }
        let rest = uri[scheme.upperBound...]
        guard let slash = rest.firstIndex(of: "/") else { return "/" }
        let target = rest[slash...]
        return String(target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? target)
    }
}
