import SIPStack

/// What a component returns to the coordinator (``GatewayCore``) from a step that opens or closes
/// dialogs: the actions to take, and the dialogs' changes, which the coordinator applies in one
/// place (``GatewayCore/apply(_:)``), as NIOHTTP2's connection state applies its streams' changes.
struct ComponentOutput: Sendable {
    var actions: [GatewayCore.Action] = []
    var dialogs: [DialogChange] = []
    /// What entries that ended held of the coordinator's quotas, given back.
    var released: [HeldQuota] = []
    /// What entries opened or taken back from the store hold of the quotas, counted (a new
    /// entry's limits were checked when its request was admitted).
    var counted: [HeldQuota] = []

    /// Adds a dialog's change when there is a dialog (an entry whose subscription was never made
    /// has none).
    mutating func dialog(
        _ kind: DialogChange.Kind, _ context: GatewayCore.Context, _ dialog: SIPDialogKey?, peer: DialogPeer? = nil
    ) {
        guard let dialog else { return }
        dialogs.append(DialogChange(kind, context, dialog, peer: peer))
    }

    /// Adds what a further step returned, after what this one holds.
    mutating func add(_ other: ComponentOutput) {
        actions += other.actions
        dialogs += other.dialogs
        released += other.released
        counted += other.counted
    }
}

/// What an entry holds of the coordinator's quotas (docs/architecture.md, "Lifecycle: dialogs,
/// peers, quotas"), given back in one place when a component returns it
/// (``GatewayCore/release(_:)``).
struct HeldQuota: Sendable {
    /// The watcher whose subscriptions it counts against (`subscriptions-per-watcher`).
    var watcher: String?
    /// The peer whose dialog it is (`subscriptions-per-peer`).
    var peer: DialogPeer?
    /// The sender a subscription made for its request is charged to (a fan-out's leg).
    var charge: GatewayCore.Charge = 0
    /// The OMA presentity it is one of the enterprise watchers' legs of
    /// (`subscriptions-per-presentity`).
    var presentity: String?
}

/// A dialog a component opened, took back from the store or closed, which the coordinator
/// applies in one place (``GatewayCore/dialogsChanged(_:)``): the dialog index entry, and the
/// subscriptions its peer holds (`limits.subscriptions-per-peer`; a new dialog's was taken when
/// its request was admitted, before any work).
struct DialogChange: Sendable {
    enum Kind: Sendable {
        /// Made now: indexed (its peer was charged on admission).
        case opened
        /// Taken back from the durable store: indexed and charged to its peer.
        case restored
        /// Ended or let go: its index entry removed and its peer's charge released.
        case closed
    }

    var kind: Kind
    var context: GatewayCore.Context
    var dialog: SIPDialogKey
    var peer: DialogPeer?

    /// `peer`: the peer charged for the dialog; nil for the gateway's own.
    init(_ kind: Kind, _ context: GatewayCore.Context, _ dialog: SIPDialogKey, peer: DialogPeer? = nil) {
        self.kind = kind
        self.context = context
        self.dialog = dialog
        self.peer = peer
    }

    init(_ kind: Kind, _ context: GatewayCore.Context, _ id: SIPDialog.ID, peer: DialogPeer?) {
        self.init(kind, context, id.dialogKey, peer: peer)
    }
}

extension GatewayCore {
    /// Applies the dialogs a component opened, took back or closed (``DialogChange``): the dialog
    /// index and the peers' counts, in one place.
    mutating func dialogsChanged(_ changes: [DialogChange]) {
        for change in changes { dialogChanged(change) }
    }

    private mutating func dialogChanged(_ change: DialogChange) {
        switch change.kind {
        case .opened:
            dialogs.insert(change.dialog, change.context)
        case .restored:
            dialogs.insert(change.dialog, change.context)
            if let peer = change.peer { quotas.countPeer(loadKey(peer)) }
        case .closed:
            dialogs.remove(change.dialog, change.context)
            releasePeerQuota(change.peer)
        }
    }

    /// Gives back what an entry held of the quotas.
    mutating func release(_ held: HeldQuota) {
        if let watcher = held.watcher { quotas.releaseWatcher(watcher) }
        releasePeerQuota(held.peer)
        if let key = sender(of: held.charge) { quotas.releasePeer(key) }
        if let presentity = held.presentity { quotas.releasePresentityLeg(presentity) }
    }

    /// Counts what an entry opened or restored holds of the quotas, whatever the limits are now.
    mutating func count(_ held: HeldQuota) {
        if let watcher = held.watcher { quotas.countWatcher(watcher) }
        if let peer = held.peer { quotas.countPeer(loadKey(peer)) }
        if let key = sender(of: held.charge) { quotas.countPeer(key) }
        if let presentity = held.presentity { quotas.countPresentityLeg(presentity) }
    }

    /// A component's output applied: its dialogs' changes and the quotas it gave back or took
    /// back, then its actions.
    mutating func apply(_ output: ComponentOutput) -> [Action] {
        dialogsChanged(output.dialogs)
        for held in output.released { release(held) }
        for held in output.counted { count(held) }
        return output.actions
    }
}
