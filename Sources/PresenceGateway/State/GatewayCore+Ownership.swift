public import GatewayState

/// Records another node took over (docs/state.md, "Several nodes"): this node could not renew
/// its lease in time, and the store refused its writes to them. They are let go without a
/// message: the new owner continues their dialogs, and a NOTIFY from here would be a duplicate.
extension GatewayCore {
    public mutating func disown(_ ids: [StateRecordID]) -> [Action] {
        var out: [Action] = []
        for id in ids {
            guard let kind = RecordKind(rawValue: id.kind), let key = Int(id.key) else { continue }
            switch kind {
            case .enterpriseWatch, .omaLeg, .omaList:
                out += apply(bridge.disown(id))
            case .omaWatch:
                out += apply(notifier.disown(id, registered: upnp.registration(ofWatch: key) != nil))
            case .winfoWatch:
                out += apply(watcherInfo.disown(id))
                followWatcherInfoSubscribers()
            case .enterpriseLeg, .pool, .flag:
                out += apply(legPool.disown(id))
            case .linkedPublication, .publication, .servicePublisher:
                out += apply(linkedIdentities.disown(id))
            case .upnpRegistration, .upnpUser:
                out += apply(upnp.disown(id))
            }
        }
        return out
    }

    /// The records of the dialogs this core holds (the kinds ``disown(_:)`` lets go of): what a
    /// node whose lease lapsed compares with what the store still lists as its own.
    public func dialogRecordIDs() -> [StateRecordID] {
        bridge.dialogRecordIDs()
            + notifier.dialogRecordIDs()
            + legPool.dialogRecordIDs() + watcherInfo.dialogRecordIDs() + linkedIdentities.dialogRecordIDs()
            + upnp.dialogRecordIDs()
    }

    /// Whether the leg, watch or publication of `context` is still held here.
    public func holds(_ context: Context) -> Bool {
        switch context {
        case .enterpriseWatch, .omaLeg, .omaList: bridge.holds(context) ?? false
        case .serverWatch(let key): serverWatches[key] != nil
        case .omaWatch: notifier.holds(context) ?? false
        case .winfoWatch: watcherInfo.holds(context) ?? false
        case .enterpriseLeg: legPool.holds(context) ?? false
        case .linkedPublication, .servicePublish: linkedIdentities.holds(context) ?? false
        case .upnpContact, .upnpUser: upnp.holds(context) ?? false
        }
    }

    /// Whom a dialog-creating SUBSCRIBE of `context` is started for, for pacing fan-outs
    /// (``GatewayConfiguration/Limits/fanOutBurst``): the sender charged for an OMA leg; the
    /// sender of the OMA watch an enterprise leg serves (a linked identity's stand-ins by the
    /// identity); nil for what no sender caused.
    public func fanOutSender(of context: Context) -> String? {
        switch context {
        case .omaLeg(let key): return bridge[leg: key].flatMap { sender(of: $0.charged) }
        case .omaList(let key): return bridge[list: key].flatMap { bridge[watch: $0.watch]?.peer }.map(loadKey)
        case .enterpriseLeg(let key):
            guard let watchKey = legPool[key]?.watches.first(where: { _ in true })?.value,
                let watch = notifier[watchKey]
            else {
                return nil
            }
            return notifier.standsIn(watchKey) ?? watch.peer.map(loadKey)
        case .enterpriseWatch, .serverWatch, .omaWatch, .winfoWatch, .linkedPublication, .servicePublish, .upnpContact,
            .upnpUser:
            return nil
        }
    }
}
