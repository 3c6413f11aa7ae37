public import SIPMessages

extension GatewayCore {
    /// The one hook of Digest authentication into the core (docs/security.md, "Credentials"):
    /// the runtime answered a 401 or 407 to the request `context` has outstanding by sending it
    /// again as `request`, with credentials and CSeq one higher (RFC 3261 §22.2, §8.1.3.5). The
    /// subscription or publication takes `request` as its outstanding one, so its answer is
    /// matched, the dialog it makes starts from that CSeq, and the dialog's later requests
    /// (refresh, un-SUBSCRIBE; built by `SIPDialog.makeRequest`) number on from it
    /// (§12.2.1.1). The change is journaled with the entry, as any change of it is.
    ///
    /// Only the requests the gateway sends toward an OMA server on its own are answered this
    /// way: a leg's and a list's SUBSCRIBE (flow 1), its own `presence.winfo` and `xcap-diff`
    /// SUBSCRIBEs (the OMA server watches) and a linked identity's PUBLISH (flow 4). For any other
    /// context it returns false, and the runtime hands the 401 or 407 to the core as the failure
    /// it was before.
    public mutating func resent(_ request: SIPRequest, for context: Context) -> Bool {
        switch context {
        case .omaLeg(let key):
            return bridge.modifyLeg(key) { $0.subscription?.resent(request) ?? false } ?? false
        case .omaList(let key):
            return bridge.modifyList(key) { $0.subscription?.resent(request) ?? false } ?? false
        case .serverWatch(let key):
            return serverWatches.resent(request, key: key)
        case .linkedPublication(let key):
            var taken = false
            _ = linkedIdentities.withClient(key) { client in
                taken = client.resent(request)
                return []
            }
            return taken
        case .upnpContact(let key):
            return upnp.resent(request, key: key)
        case .upnpUser:
            var taken = false
            _ = upnp.withPublication { client in
                taken = client.resent(request)
                return []
            }
            return taken
        default:
            return false
        }
    }
}
