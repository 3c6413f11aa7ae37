import SIPStack

/// What a component returns to the coordinator (``GatewayCore``) from a step that opens or closes
/// dialogs: the actions to take, and the dialogs' changes, which the coordinator applies in one
/// place (``GatewayCore/apply(_:)``), as NIOHTTP2's connection state applies its streams' changes.
struct ComponentOutput: Sendable {
    var actions: [GatewayCore.Action] = []
    var dialogs: [DialogChange] = []
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
        self.init(kind, context, SIPDialogKey(callID: id.callID, localTag: id.localTag), peer: peer)
    }
}

extension GatewayCore {
    /// Applies the dialogs a component opened, took back or closed (``DialogChange``): the dialog
    /// index and the peers' counts, in one place.
    mutating func dialogsChanged(_ changes: [DialogChange]) {
        for change in changes {
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
    }

    /// Applies one dialog's change (``dialogsChanged(_:)``); nothing when there is no dialog
    /// (an entry whose subscription was never made).
    mutating func dialogChanged(
        _ kind: DialogChange.Kind, _ context: Context, _ dialog: SIPDialogKey?, peer: DialogPeer? = nil
    ) {
        guard let dialog else { return }
        dialogsChanged([DialogChange(kind, context, dialog, peer: peer)])
    }

    /// A component's output applied: its dialogs' changes, then its actions.
    mutating func apply(_ output: ComponentOutput) -> [Action] {
        dialogsChanged(output.dialogs)
        return output.actions
    }
}
