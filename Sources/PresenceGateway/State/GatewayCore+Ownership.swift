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
            case .enterpriseWatch:
                guard let watch = enterpriseWatches.forget(key) else { continue }
                releasePeerQuota(watch.peer)
                if let dialog = (watch.subscription?.subscription ?? watch.document)?.dialog.id {
                    dialogs.remove(DialogKey(callID: dialog.callID, localTag: dialog.localTag), .enterpriseWatch(key))
                }
                out += [.cancel(.expiry(.enterpriseWatch(key))), .cancel(.firstAnswer(.enterpriseWatch(key)))]
            case .omaLeg:
                guard let leg = omaLegs.forget(key) else { continue }
                releaseLeg(leg)
                if let subscription = leg.subscription {
                    dialogs.remove(
                        DialogKey(callID: subscription.callID, localTag: subscription.localTag), .omaLeg(key))
                }
                out += [
                    .cancel(.refresh(.omaLeg(key))), .cancel(.expiry(.omaLeg(key))), .cancel(.cleanup(.omaLeg(key))),
                ]
            case .omaList:
                guard let list = omaLists.forget(key) else { continue }
                listDocuments[list.document]?.lists.remove(key)
                listDocuments[list.document]?.waiting.remove(key)
                if let subscription = list.subscription {
                    dialogs.remove(
                        DialogKey(callID: subscription.callID, localTag: subscription.localTag), .omaList(key))
                }
                out += [
                    .cancel(.refresh(.omaList(key))), .cancel(.expiry(.omaList(key))), .cancel(.cleanup(.omaList(key))),
                ]
            case .omaWatch:
                guard let watch = omaWatches.forget(key) else { continue }
                if watch.listOwner != nil { listMemberWatches -= 1 }
                if let identity = watch.mirrorOf { standIns[identity]?[watch.watcher.uri] = nil }
                if watch.takesQuota {
                    if watch.takesWatcherSlot { releaseQuota(watch.watcher.uri) }
                    releasePeerQuota(watch.peer)
                }
                if let dialog = watch.subscription?.dialog.id {
                    dialogs.remove(DialogKey(callID: dialog.callID, localTag: dialog.localTag), .omaWatch(key))
                }
                out += [.cancel(.expiry(.omaWatch(key))), .cancel(.firstAnswer(.omaWatch(key)))]
            case .enterpriseLeg:
                guard let leg = enterpriseLegs.forget(key) else { continue }
                let subscription = leg.subscriber.subscription
                dialogs.remove(
                    DialogKey(callID: subscription.callID, localTag: subscription.localTag), .enterpriseLeg(key))
                out += [
                    .cancel(.refresh(.enterpriseLeg(key))), .cancel(.expiry(.enterpriseLeg(key))),
                    .cancel(.cleanup(.enterpriseLeg(key))),
                ]
            case .winfoWatch:
                guard let watch = winfoWatches.removeValue(forKey: key) else { continue }
                releasePeerQuota(watch.peer)
                let dialog = watch.subscription.dialog.id
                dialogs.remove(DialogKey(callID: dialog.callID, localTag: dialog.localTag), .winfoWatch(key))
                out.append(.cancel(.expiry(.winfoWatch(key))))
            case .linkedPublication, .publication, .servicePublisher:
                out += linkedIdentities.disown(id)
            case .pool, .flag:
                // Not dialogs: what the other node writes of them wins; this node's copy is a cache.
                continue
            }
        }
        return out
    }

    /// The records of the dialogs this core holds (the kinds ``disown(_:)`` lets go of): what a
    /// node whose lease lapsed compares with what the store still lists as its own.
    public func dialogRecordIDs() -> [StateRecordID] {
        func ids(_ kind: RecordKind, _ keys: [Int]) -> [StateRecordID] {
            keys.map { StateRecordID(kind: kind.rawValue, key: String($0)) }
        }
        return ids(.enterpriseWatch, enterpriseWatches.keys) + ids(.omaLeg, omaLegs.keys)
            + ids(.omaList, omaLists.keys) + ids(.omaWatch, omaWatches.keys)
            + ids(.enterpriseLeg, enterpriseLegs.keys) + ids(.winfoWatch, Array(winfoWatches.keys))
            + linkedIdentities.dialogRecordIDs()
    }

    /// Whether the leg, watch or publication of `context` is still held here.
    public func holds(_ context: Context) -> Bool {
        switch context {
        case .enterpriseWatch(let key): enterpriseWatches[key] != nil
        case .omaLeg(let key): omaLegs[key] != nil
        case .omaList(let key): omaLists[key] != nil
        case .serverWatch(let key): serverWatches[key] != nil
        case .omaWatch(let key): omaWatches[key] != nil
        case .winfoWatch(let key): winfoWatches[key] != nil
        case .enterpriseLeg(let key): enterpriseLegs[key] != nil
        case .linkedPublication, .servicePublish: linkedIdentities.holds(context) ?? false
        }
    }

    /// Whom a dialog-creating SUBSCRIBE of `context` is started for, for pacing fan-outs
    /// (``GatewayConfiguration/Limits/fanOutBurst``): the sender charged for an OMA leg; the
    /// sender of the OMA watch an enterprise leg serves (a linked identity's stand-ins by the
    /// identity); nil for what no sender caused.
    public func fanOutSender(of context: Context) -> String? {
        switch context {
        case .omaLeg(let key): return omaLegs[key].flatMap { sender(of: $0.charged) }
        case .omaList(let key): return omaLists[key].flatMap { enterpriseWatches[$0.watch]?.peer }.map(loadKey)
        case .enterpriseLeg(let key):
            guard let watchKey = enterpriseLegs[key]?.watches.first(where: { _ in true })?.value,
                let watch = omaWatches[watchKey]
            else {
                return nil
            }
            return watch.mirrorOf ?? watch.peer.map(loadKey)
        case .enterpriseWatch, .serverWatch, .omaWatch, .winfoWatch, .linkedPublication, .servicePublish:
            return nil
        }
    }
}
