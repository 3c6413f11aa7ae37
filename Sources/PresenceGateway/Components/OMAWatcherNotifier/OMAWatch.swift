import PresenceDocuments
import SIPMessages
import SIPStack
import XMLBridge
import _GatewayInternals

/// An OMA watch, the notifier's entry (``OMAWatcherNotifier``): a watcher's subscription to an
/// enterprise presentity, or one made on someone's behalf (a list member, a linked identity's
/// source, a mirror stand-in, a UPnP registration's), attached to a leg toward the enterprise
/// (``EnterpriseLegPool``). Its record fields are coded beside it (`OMAWatcherNotifier+Storage`).
extension GatewayCore {
    struct OMAWatch: Journaled {
        typealias Pending = (request: SIPRequest, id: ServerRequestID, terms: SubscriptionTerms)
        var watcher: WatcherIdentity
        /// The enterprise presentity.
        var resource: String
        /// Until answered: the SUBSCRIBE and its server request (held out of line, and freed once
        /// answered).
        var pending: Pending? {
            get { pendingBox?.value }
            set { pendingBox = newValue.map(OutOfLine.init) }
        }
        @Waiting private var pendingBox: OutOfLine<Pending>?
        @DialogState var subscription: NotifierSubscription? = nil
        /// The enterprise leg carrying `resource` for this watcher; nil while none does.
        var leg: Int?
        /// What it was last sent (to notify only on change).
        @Transient var lastSent: BodyDigest? = nil
        /// Not a watcher's subscription but a linked identity's: its state is published to the
        /// OMA side (flow 4) instead of notified.
        var linked: Int?
        /// Who made the dialog: its in-dialog requests must come from there.
        var peer: DialogPeer?
        /// Partial notifications (RFC 5263), when the watcher accepts them: held out of line.
        var partial: OMAWatcherNotifier.PartialNotifications? {
            get { partialBox?.value }
            set { partialBox = newValue.map(OutOfLine.init) }
        }
        private var partialBox: OutOfLine<OMAWatcherNotifier.PartialNotifications>?

        /// An event filter (RFC 4660), when the watcher sent one: held out of line.
        var filter: OMAWatcherNotifier.WatcherFilter? {
            get { filterBox?.value }
            set { filterBox = newValue.map(OutOfLine.init) }
        }
        private var filterBox: OutOfLine<OMAWatcherNotifier.WatcherFilter>?

        /// The dialog index's key of its dialog, once answered.
        var dialogKey: SIPDialogKey? {
            subscription?.dialog.id.dialogKey
        }

        /// `rendered` (the whole document) cut to what the watcher's filter selects (RFC 4661
        /// §3.5), and whether the change to it fires one of the filter's triggers (§3.6; true
        /// without triggers), the document kept for the next change. `rendered` itself, for a
        /// watcher without a filter.
        mutating func filtered(_ rendered: [UInt8]) -> (body: [UInt8], triggered: Bool) {
            guard var filter, let tree = try? XMLParser.parse(rendered) else { return (rendered, true) }
            let body = XMLWriter(indent: nil).bytes(filter.filter.apply(to: tree))
            guard !filter.filter.triggers.isEmpty else { return (body, true) }
            let triggered = filter.filter.triggered(from: filter.last, to: tree)
            filter.last = tree
            self.filter = filter
            return (body, triggered)
        }

        /// The body to send for the PIDF document `full`, and its type when not the negotiated
        /// one (``GatewayCore/partialBody(_:_:forceFull:)``); `full` itself, untouched, for a
        /// watcher without partial notifications.
        mutating func body(for full: [UInt8], forceFull: Bool) -> (body: [UInt8], type: String?) {
            guard partialBox != nil else { return (full, nil) }
            return OMAWatcherNotifier.partialBody(full, &partial, forceFull: forceFull)
        }

        init(
            watcher: WatcherIdentity, resource: String, pending: Pending? = nil, linked: Int? = nil,
            peer: DialogPeer? = nil
        ) {
            self.watcher = watcher
            self.resource = resource
            self.linked = linked
            self.pending = pending
            self.peer = peer
        }
    }
}
