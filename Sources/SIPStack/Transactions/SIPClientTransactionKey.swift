public import SIPMessages

/// Identifies a client transaction (RFC 3261 §17.1.3): "If the response has the same value of
/// the branch parameter in the top Via header field as the branch parameter in the top Via header
/// field of the request that created the transaction [and] the method parameter in the CSeq
/// header field matches the method of the request that created the transaction."
public struct SIPClientTransactionKey: Sendable, Hashable, CustomStringConvertible {
    public var branch: String
    public var method: SIPMethod

    public init(branch: String, method: SIPMethod) {
        self.branch = branch
        self.method = method
    }

    /// The key of a response; nil when it has no top Via branch or CSeq.
    public init?(response: SIPResponse) {
        guard let top = try? response.headers.via.first, let branch = top.branch,
            let cseq = try? response.headers.cseq
        else { return nil }
        self.init(branch: branch, method: cseq.method)
    }

    public var description: String { "\(method) \(branch)" }
}
