public import SIPMessages
import SIPTransport

/// The dialogs the core holds, as the coordinator keeps them (docs/architecture.md, "Lifecycle:
/// dialogs, peers, quotas"): the peer each belongs to, the Contact given in it, the dialog an
/// in-dialog request names, and the removal of a watcher's entry with its dialog and quotas.
extension GatewayCore {
    /// The Contact of the gateway's notifier dialog with `peer` on `side`: the one of the
    /// transport the peer came over, else the side's (nil: `fallback`).
    func contact(_ side: GatewayConfiguration.Side, for peer: DialogPeer?, fallback: SIPURI) -> SIPAddress {
        settings.contact(side, for: peer, fallback: fallback)
    }

    /// The context of the dialog an in-dialog request names, and the peer that dialog belongs to
    /// (nil: not recorded, and then no request is admitted into it). nil when no dialog matches
    /// (the core answers such a request 481).
    public func dialogOwner(of request: SIPRequest) -> (context: Context, peer: DialogPeer?)? {
        guard let tag = (try? request.headers.to)?.tag else { return nil }
        return dialogOwner(of: request, toTag: tag)
    }

    /// ``dialogOwner(of:)`` for a request whose To tag the caller has read.
    public func dialogOwner(of request: SIPRequest, toTag: String) -> (context: Context, peer: DialogPeer?)? {
        guard let callID = request.headers.callID, let context = dialogContext(callID: callID, localTag: toTag)
        else { return nil }
        return (context, peer(of: context))
    }

    /// The peer the dialog of `context` belongs to, if recorded. Every kind of dialog the core
    /// holds names one here: the runtime admits no request into a dialog without a peer and
    /// sends its own in-dialog requests only where that peer may be reached
    /// (docs/security.md, "Requests inside a dialog").
    public func peer(of context: Context) -> DialogPeer? {
        switch context {
        case .enterpriseWatch(let key): bridge[watch: key]?.peer
        case .omaWatch(let key): notifier[key]?.peer
        case .winfoWatch(let key): watcherInfo[key]?.peer
        case .omaLeg(let key): bridge[leg: key]?.peer
        case .omaList(let key): bridge[list: key].flatMap(\.peer)
        case .enterpriseLeg(let key): legPool[key]?.peer
        case .serverWatch(let key): serverWatches[key]?.peer
        case .upnpContact(let key): upnp[key]?.peer
        // Publications make no dialog (RFC 3903 §4): nothing is admitted in their name.
        case .linkedPublication, .servicePublish, .upnpUser: nil
        }
    }

    /// The runtime sent a dialog-creating SUBSCRIBE of the gateway's (a leg's, a list's, a server
    /// watch's) to `peer` (the configured next hop or what DNS gave for it): the dialog belongs
    /// to that peer. After a failover to another target the last one tried is the peer.
    public mutating func reached(_ peer: DialogPeer, for context: Context) {
        let peer = peer.shared()
        switch context {
        case .omaLeg(let key): bridge.modifyLeg(key) { $0.peer = peer }
        case .omaList(let key): bridge.modifyList(key) { $0.peer = peer }
        case .enterpriseLeg(let key): legPool.modify(key) { $0.peer = peer }
        case .serverWatch(let key): serverWatches.reached(peer, key: key)
        case .upnpContact(let key): upnp.modify(key) { $0.peer = peer }
        case .enterpriseWatch, .omaWatch, .winfoWatch, .linkedPublication, .servicePublish, .upnpUser: break
        }
    }

    // MARK: - Entries ending

    /// Removes an enterprise watch: its dialog closed, and given back to its peer's quota.
    @discardableResult
    mutating func forgetEnterpriseWatch(_ key: Int) -> EnterpriseWatch? {
        let (watch, output) = bridge.closeWatch(key)
        _ = apply(output)
        return watch
    }

    /// Removes an OMA watch, giving its subscription back to the watcher's quota.
    @discardableResult
    mutating func forgetOMAWatch(_ key: Int) -> RemovedOMAWatch? {
        guard let current = notifier[key] else { return nil }
        let held = held(of: key, current)
        let list = lists.remove(key)
        let (watch, output) = notifier.close(key, held: held)
        _ = apply(output)
        return watch.map { RemovedOMAWatch(watch: $0, list: list) }
    }

    /// An OMA watch removed, with the list it subscribed to when it was a list subscription
    /// (whose member watches the caller ends: ``detachOMAWatch(_:now:)``).
    struct RemovedOMAWatch {
        var watch: OMAWatch
        var list: ResourceList?
    }

    /// What the OMA watch `key` holds of the quotas (``OMAWatcherNotifier/held(of:_:registered:)``).
    func held(of key: Int, _ watch: OMAWatch) -> HeldQuota {
        notifier.held(of: key, watch, registered: upnp.registration(ofWatch: key) != nil)
    }

    /// Whether the OMA watch `key` is a watcher's own subscription (a list's included): not a
    /// linked identity's source, a stand-in nor a UPnP registration's (flow 5 caps those itself).
    func isWatchersOwn(_ key: Int, _ watch: OMAWatch) -> Bool {
        notifier.isWatchersOwn(key, watch, registered: upnp.registration(ofWatch: key) != nil)
    }
}
