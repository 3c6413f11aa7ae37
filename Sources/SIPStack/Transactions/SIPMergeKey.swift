import SIPMessages

/// The fields RFC 3261 §8.2.2.2 compares to detect a merged request: From tag, Call-ID and CSeq.
struct SIPMergeKey: Hashable, Sendable {
    var fromTag: String?
    var callID: String
    var cseq: SIPCSeq

    init?(_ request: SIPRequest) {
        guard let callID = request.headers.callID, let cseq = try? request.headers.cseq,
            let from = try? request.headers.from
        else { return nil }
        self.fromTag = from.tag
        self.callID = callID
        self.cseq = cseq
    }
}
