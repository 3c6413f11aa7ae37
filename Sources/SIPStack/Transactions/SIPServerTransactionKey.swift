public import SIPMessages
import SIPTransport

/// Identifies a server transaction (RFC 3261 §17.2.3).
///
/// With a branch that starts with the magic cookie `z9hG4bK`: "the branch parameter in the
/// request is equal to the one in the top Via header field of the request that created the
/// transaction, the sent-by value in the top Via of the request is equal to the one in the
/// request that created the transaction, and the method of the request matches the one that
/// created the transaction, except for ACK, where the method of the request that created the
/// transaction is INVITE."
///
/// Without the cookie (RFC 2543 peers), the Request-URI, To tag, From tag, Call-ID, CSeq and top
/// Via identify it; an ACK matches through the To tag of the response the transaction sent (the
/// driver registers that alias, see ``ackAlias(toTag:)``).
public struct SIPServerTransactionKey: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        /// Branch, sent-by (`host:port`, host lowercased, default port filled in) and method
        /// (ACK and CANCEL recorded as INVITE by the lookups that need it).
        case rfc3261(branch: String, sentBy: String, method: SIPMethod)
        /// The RFC 2543 fallback fields. `topVia` is the top Via without the `received` and
        /// `rport` parameters a receiving transport adds (§18.2.1). Held out of line: a key is
        /// stored with every held transaction and its timers, and this case is four times the
        /// size of the usual one.
        indirect case rfc2543(
            requestURI: SIPURI, toTag: String?, fromTag: String?, callID: String,
            cseq: UInt32, method: SIPMethod, topVia: String)
    }

    public var kind: Kind

    public init(_ kind: Kind) { self.kind = kind }

    /// Why a request yields no key.
    public enum Failure: Error, Sendable, Hashable {
        /// No Via, or the top Via, CSeq, From or To does not parse, or Call-ID is missing.
        case malformed(String)
        /// The branch is exactly the magic cookie: RFC 4475 §3.2.1 "Missing Transaction
        /// Identifier".
        case bareMagicCookie
    }

    /// The key of `request`, with `method` standing in for the request's own method (ACK and
    /// CANCEL look up the INVITE they belong to). `bareCookieFallsBack` makes a branch that is
    /// only `z9hG4bK` use the RFC 2543 fields instead of failing.
    public static func make(
        for request: SIPRequest, method: SIPMethod? = nil,
        bareCookieFallsBack: Bool = false
    ) -> Result<SIPServerTransactionKey, Failure> {
        let h = request.headers
        guard let vias = try? h.via, let top = vias.first else { return .failure(.malformed("Via")) }
        guard let cseq = try? h.cseq else { return .failure(.malformed("CSeq")) }
        let keyMethod = method ?? request.method
        if let branch = top.branch, top.hasMagicCookie {
            if branch.count > 7 {
                return .success(
                    SIPServerTransactionKey(.rfc3261(branch: branch, sentBy: sentBy(top), method: keyMethod)))
            }
            if !bareCookieFallsBack { return .failure(.bareMagicCookie) }
        }
        guard let callID = h.callID else { return .failure(.malformed("Call-ID")) }
        guard let from = try? h.from else { return .failure(.malformed("From")) }
        guard let to = try? h.to else { return .failure(.malformed("To")) }
        var via = top
        via.parameters.remove("received")
        via.parameters.remove("rport")
        return .success(
            SIPServerTransactionKey(
                .rfc2543(
                    requestURI: request.uri, toTag: to.tag, fromTag: from.tag, callID: callID,
                    cseq: cseq.sequence, method: keyMethod, topVia: via.description)))
    }

    /// For RFC 2543 INVITE transactions: the key an ACK for the final response carries, "the To
    /// tag [of the ACK matches] the To tag of the response sent by the server transaction"
    /// (§17.2.3). Nil for RFC 3261 keys (the branch already matches the ACK).
    public func ackAlias(toTag: String?) -> SIPServerTransactionKey? {
        guard case .rfc2543(let uri, _, let fromTag, let callID, let cseq, _, let topVia) = kind else { return nil }
        return SIPServerTransactionKey(
            .rfc2543(
                requestURI: uri, toTag: toTag, fromTag: fromTag, callID: callID,
                cseq: cseq, method: .ack, topVia: topVia))
    }

    /// Whether this key uses the RFC 3261 branch.
    public var isRFC3261: Bool {
        if case .rfc3261 = kind { return true }
        return false
    }

    static func sentBy(_ via: SIPVia) -> String {
        // RFC 3261 §19.1.2 / §18.2.2: the transport's default port when sent-by has none.
        let port = via.port ?? SIPTransportKind(viaToken: via.transport)?.defaultPort ?? 5060
        return "\(via.host.lowercased()):\(port)"
    }

    public var description: String {
        switch kind {
        case .rfc3261(let branch, let sentBy, let method): "\(method) \(branch)@\(sentBy)"
        case .rfc2543(let uri, let toTag, let fromTag, let callID, let cseq, let method, let topVia):
            "2543 \(method) \(uri) to=\(toTag ?? "-") from=\(fromTag ?? "-") \(callID) \(cseq) [\(topVia)]"
        }
    }
}
