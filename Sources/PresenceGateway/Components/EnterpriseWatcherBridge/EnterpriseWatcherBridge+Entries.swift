import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack
import _GatewayInternals

/// The bridge's entries (docs/architecture.md, "Who owns what"): an enterprise watcher's
/// subscription, each OMA leg it holds for one of its resources, each list subscription
/// toward an OMA RLS carrying legs (RFC 4662) and each rls-services document holding lists
/// (RFC 4826). Each is stored as itself (``StoredEntry``; `State/StoredKinds.swift`).
extension GatewayCore {
    struct EnterpriseWatch: Journaled {
        typealias Pending = (request: SIPRequest, id: ServerRequestID, batch: BatchSubscribe, terms: SubscriptionTerms)
        var watcher: WatcherIdentity
        /// Until answered: the SUBSCRIBE, its server request and its batch body (held out of line,
        /// and freed once answered).
        var pending: Pending? {
            get { pendingBox?.value }
            set { pendingBox = newValue.map(OutOfLine.init) }
        }
        @Waiting private var pendingBox: OutOfLine<Pending>?
        @DialogState var subscription: BatchCategorySubscription? = nil
        /// OMA resource URI → leg key.
        var legs: SmallMap<String, Int> = [:]
        /// Resource → last body sent, to notify only on change.
        @Transient var lastSent: SmallMap<String, BodyDigest> = [:]
        /// A single (not batched) category subscription: its one resource's `pending` state is
        /// the dialog's state ([MS-PRES] §3.4.5.1.1: batched only with `Require: adhoclist, categoryList`).
        var single = false
        /// A PIDF or msrtc.pidf subscription ([MS-PRES] §4.10, §4.11: no categoryList body): the
        /// one resource it watches (its Request-URI); nil for category subscriptions.
        var documentResource: String?
        /// The dialog of a PIDF or msrtc.pidf subscription, once answered: a plain presence
        /// subscription whose bodies are the watcher's view rendered in `terms.bodyType`. Held
        /// out of line: category watches, the usual kind, would otherwise carry its 136 bytes
        /// empty for their whole life.
        var document: NotifierSubscription? {
            get { documentBox?.value }
            set { documentBox = newValue.map(OutOfLine.init) }
        }
        @DialogState private var documentBox: OutOfLine<NotifierSubscription>? = nil
        /// Who made the dialog: its in-dialog requests must come from there.
        var peer: DialogPeer?
        /// Resources of its batch the gateway refused to subscribe to (outside the OMA domains,
        /// or past the watcher's quota): listed `terminated;reason=rejected` in its RLMI parts.
        var refused: Set<String> = []
        /// Resources waiting for their owner (pres-rules `confirm`, RFC 5025 §3.2.1): listed
        /// `pending`, without an OMA leg, until a new policy decides them
        /// (``GatewayCore/resolveAwaitingAuthorization(now:)``).
        var awaiting: Set<String> = []

        init(watcher: WatcherIdentity, pending: Pending?, peer: DialogPeer?) {
            self.watcher = watcher
            self.pending = pending
            self.peer = peer
        }
    }

}

extension GatewayCore.EnterpriseWatch {
    /// Its dialog's expiry timer fired: the document dialog's, else the category dialog's
    /// (nothing before it is answered).
    mutating func expire(now: NIODeadline) -> [NotifierSubscription.Action] {
        if document != nil { return document?.expire(now: now) ?? [] }
        return subscription?.expire(now: now) ?? []
    }

    /// `resource` left it: its leg and what it was last sent of it are forgotten.
    mutating func forget(_ resource: String) {
        legs[resource] = nil
        lastSent[resource] = nil
    }

    /// A NOTIFY of its dialog failed with `status` (RFC 6665 §4.2.2).
    mutating func notifyFailed(status: Int) -> [NotifierSubscription.Action] {
        if document != nil { return document?.notifyFailed(status: status) ?? [] }
        return subscription?.notifyFailed(status: status) ?? []
    }
}

extension GatewayCore {
    /// What the gateway holds toward the OMA side for one resource of an enterprise watch: a
    /// PIDF subscription of its own, or its share of a list subscription (RFC 4662, a member of
    /// ``OMAList``), whose notifications bring its state.
    struct OMALeg: Codable, Journaled {
        var watch: Int
        /// The enterprise watcher's URI, whose quota the leg counts against.
        var watcher: String
        var resource: String
        /// Its own subscription; nil for a list's member.
        @DialogState var subscription: SubscriberSubscription?
        /// The list subscription it is a member of (``EnterpriseWatcherBridge/lists``).
        var list: Int?
        /// The latest OMA state as categories; nil until the first NOTIFY.
        @Transient var categories: CategoriesDocument?
        var handling: SubHandling
        /// Unsubscribed; waiting for the final NOTIFY.
        var closing = false
        /// The OMA side's last NOTIFY said `Subscription-State: pending` (RFC 6665 §4.1.3: the
        /// subscription waits for the presentity's authorization; RFC 3856 §6.6.2: no state yet).
        var pending = false
        /// The sender whose request made it, charged for it until it ends (``held``, ``GatewayCore/release(_:)``;
        /// docs/security.md, "A fan-out is charged to its sender"). Four bytes beside the flags
        /// above, where the next field's alignment leaves room: no byte more per leg.
        @Transient var charged: Charge = 0
        /// The OMA peer the SUBSCRIBE was sent to (``GatewayCore/reached(_:for:)``).
        var peer: DialogPeer?
        /// Partial notifications from the OMA side (RFC 5263): held out of line, and only once
        /// the OMA side sent one.
        var partial: EnterpriseWatcherBridge.ReceivedPartialState? {
            get { partialBox?.value }
            set { partialBox = newValue.map(OutOfLine.init) }
        }
        @Transient var partialBox: OutOfLine<EnterpriseWatcherBridge.ReceivedPartialState>? = nil

        /// What it holds of the quotas: one of its watcher's subscriptions, its sender's charge
        /// and one of its presentity's legs.
        var held: HeldQuota { HeldQuota(watcher: watcher, charge: charged, presentity: resource) }
    }
}

extension GatewayCore {
    /// A list subscription toward an OMA RLS for the resources of one enterprise watch in one domain.
    struct OMAList: Codable, Journaled {
        var watch: Int
        /// The watcher's address of record: the XUI whose rls-services document holds the list.
        var watcher: String
        /// The From of the list's SUBSCRIBE: the watcher's, display name kept, without a tag.
        var from: SIPAddress
        var domain: String
        /// The list's URI, the `service` of the document (RFC 4826 §4.1).
        var uri: String
        /// The URI of the rls-services document holding it.
        var document: String
        /// Each member's resource and its leg, in the order they joined.
        var members: SmallMap<String, Int> = [:]
        /// Made once the document holding the list was written.
        @DialogState var subscription: SubscriberSubscription? = nil
        /// The RLMI version of the last notification taken (RFC 4662 §5.2); nil until one with
        /// full state was (and after a restart): a partial one is then not applied.
        @Transient var version: UInt32? = nil
        /// Members changed since the RLS was last asked for the list: it is refreshed once the
        /// document holding them is written (Kamailio's RLS reads the list again on a refresh).
        var changed = false
        /// Unsubscribed; waiting for the final NOTIFY.
        var closing = false
        /// The OMA peer the SUBSCRIBE was sent to.
        var peer: DialogPeer?
    }

    /// One rls-services document the gateway writes: an XUI at an XCAP root (RFC 4825 §6).
    struct ListDocument: Sendable {
        /// The lists it holds (``EnterpriseWatcherBridge/lists``).
        var lists: Set<Int> = []
        /// A write is under way: the next waits for its answer, so that they reach the server in order.
        var writing = false
        /// Changed while a write was under way: written again once that one is answered.
        var stale = false
        /// Lists to subscribe to, or to refresh, once the document as it stands now is written.
        var waiting: Set<Int> = []
    }
}

extension GatewayCore.OMAList {
    /// The leg of the member `uri` names (as written, or by its address of record).
    func member(_ uri: String) -> Int? {
        if let key = members[uri] { return key }
        guard let address = WatcherIdentity.addressOfRecord(uri) else { return nil }
        return members.first { WatcherIdentity.addressOfRecord($0.key) == address }?.value
    }
}
