public import SIPMessages

/// Draining a peer at run time (README, "Runtime control": `PUT /peers/{name}`): the dialogs it
/// holds go on (their in-dialog requests, refreshes and NOTIFYs are taken and sent as before),
/// but no new dialog is made from it or toward it. A new SUBSCRIBE from a drained peer is
/// answered 503 with Retry-After (RFC 3261 §21.5.4: the server is temporarily unable to take
/// it; the client may try again after the time given, or elsewhere).
///
/// The set is the core's, not the configuration's: a reload (``reconfigure(_:mapper:now:)``)
/// keeps it; a restart starts with none drained.
extension GatewayCore {
    /// Seconds a peer refused while drained is asked to wait (RFC 3261 §20.33).
    static let drainedRetryAfter = 120

    /// Whether new dialogs from or toward `peer` are refused.
    public func isDrained(_ peer: DialogPeer?) -> Bool {
        guard let peer, !quotas.drained.isEmpty else { return false }
        return quotas.drained.contains(loadKey(peer))
    }

    /// Drains (or undrains) the peer called `name` (a configured peer's name, or an address).
    public mutating func setDrained(_ name: String, _ drained: Bool) {
        if drained { quotas.drained.insert(name) } else { quotas.drained.remove(name) }
    }

    /// The answer to a dialog-creating `request` from a drained `peer`, before anything of it is
    /// read past its start line and headers; nil when its peer is not drained.
    mutating func refusedWhileDraining(_ request: SIPRequest, id: ServerRequestID, peer: DialogPeer?) -> [Action]? {
        guard isDrained(peer) else { return nil }
        quotas.refusals.peerDrained += 1
        return [
            .respond(
                id,
                SIPResponse(
                    replyingTo: request, statusCode: 503, reasonPhrase: "Peer Draining", toTag: ids.tag(),
                    headers: [(.retryAfter, "\(Self.drainedRetryAfter)")]))
        ]
    }
}
