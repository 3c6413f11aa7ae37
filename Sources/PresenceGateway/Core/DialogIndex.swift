import SIPStack
import _GatewayInternals

/// The core's dialogs by (Call-ID, local tag), for matching in-dialog requests (RFC 3261 §12.2.2:
/// "the request is matched to the dialog by the Call-ID, local tag and remote tag"; RFC 6665
/// §4.1.3 adds the subscription's event), held by a hash of the two instead of the strings.
///
/// A `Dictionary` keyed by the two strings pays 32 bytes of key for each of its buckets (1.3 to
/// 2.7 times the number of dialogs) and keeps a copy of each Call-ID that the dialog's state
/// already holds. Here a bucket holds an `Int` hash and a position (12 bytes), and the strings
/// stay only in the state. A hash names a dialog only after the owner's state confirms it: the
/// core looks the owner's (Call-ID, local tag) up again (``GatewayCore/dialogContext(callID:localTag:)``),
/// so a request whose identifiers merely hash alike finds nothing. Two live dialogs whose keys
/// hash alike (rare: `Hasher` is seeded per process) are both kept: the later one by its full key
/// in a small side table.
struct DialogIndex: Sendable {
    typealias Context = GatewayCore.Context

    /// Hash of (Call-ID, local tag) → the context owning that dialog.
    private var byHash = DenseTable<Int, Context>()
    /// Dialogs whose hash another live dialog already holds, by their full key.
    private var colliding: [GatewayCore.DialogKey: Context] = [:]
    private let hash: @Sendable (GatewayCore.DialogKey) -> Int

    /// `hash` is `Hasher`'s (seeded per process); tests give one that collides.
    init(hash: @escaping @Sendable (GatewayCore.DialogKey) -> Int = { $0.hashValue }) {
        self.hash = hash
    }

    /// The number of dialogs held.
    var count: Int { byHash.count + colliding.count }

    /// The context that may own the dialog: exact when it is one of the colliding ones, else the
    /// owner of the hash, which the caller still has to confirm.
    func candidate(_ key: GatewayCore.DialogKey) -> (context: Context, exact: Bool)? {
        if !colliding.isEmpty, let context = colliding[key] { return (context, true) }
        return byHash[hash(key)].map { ($0, false) }
    }

    /// Records that `context` owns the dialog `key`.
    mutating func insert(_ key: GatewayCore.DialogKey, _ context: Context) {
        let hash = self.hash(key)
        if let existing = byHash[hash], existing != context {
            colliding[key] = context
        } else {
            byHash[hash] = context
        }
    }

    /// Forgets the dialog `key` of `context` (a no-op when `context` does not hold it).
    mutating func remove(_ key: GatewayCore.DialogKey, _ context: Context) {
        if !colliding.isEmpty, let held = colliding[key] {
            // Held by its full key: the hash entry is another dialog's.
            if held == context { colliding[key] = nil }
            return
        }
        let hash = self.hash(key)
        if byHash[hash] == context { byHash[hash] = nil }
    }
}

extension GatewayCore {
    /// The context of the dialog (Call-ID, local tag), confirmed against its owner's state.
    func dialogContext(callID: String, localTag: String) -> Context? {
        let key = DialogKey(callID: callID, localTag: localTag)
        guard let (context, exact) = dialogs.candidate(key) else { return nil }
        if exact { return context }
        return dialogKey(of: context) == key ? context : nil
    }

    /// The (Call-ID, local tag) of the dialog a context's state holds, if any.
    func dialogKey(of context: Context) -> DialogKey? {
        switch context {
        case .omaLeg(let key):
            return bridge[leg: key]?.subscription?.dialogKey
        case .omaList(let key):
            return bridge[list: key]?.subscription?.dialogKey
        case .serverWatch(let key):
            return serverWatches[key]?.subscription.dialogKey
        case .enterpriseLeg(let key):
            return legPool[key]?.subscriber.subscription.dialogKey
        case .enterpriseWatch(let key):
            return bridge[watch: key]?.storedDialog.dialogKey
        case .omaWatch(let key):
            return notifier[key]?.dialogKey
        case .winfoWatch(let key):
            return watcherInfo[key]?.subscription.dialog.id.dialogKey
        case .upnpContact(let key):
            return upnp[key]?.subscription?.dialogKey
        case .linkedPublication, .servicePublish, .upnpUser:
            return nil
        }
    }
}

extension SubscriberSubscription {
    /// The dialog index's key of a subscription the gateway holds (its Call-ID and From tag).
    var dialogKey: SIPDialogKey { SIPDialogKey(callID: callID, localTag: localTag) }
}

extension SIPDialog.ID {
    /// The dialog index's key of a dialog the gateway answered (its Call-ID and To tag).
    var dialogKey: SIPDialogKey { SIPDialogKey(callID: callID, localTag: localTag) }
}
