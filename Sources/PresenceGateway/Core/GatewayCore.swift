import MSPresenceEvents
public import NIOCore
import PresenceDocuments
public import PresenceMapping
public import SIPMessages
import SIPStack
public import SIPTransport
public import UPnPDevice
import _GatewayInternals

/// The back-to-back user agent's logic, without I/O (flows 1 and 2): it takes
/// requests, responses and timer expiries and returns what to send, answer and schedule. The
/// runtime drives it from the transaction layer on one event loop.
///
/// - Flow 1, enterprise watcher → OMA presentity: a category SUBSCRIBE (single or batched) is
///   answered as a ``BatchCategorySubscription``; for each OMA resource the gateway keeps one
///   PIDF subscription toward the OMA domain with the watcher's identity in From, and turns its
///   NOTIFYs into categories. The first answer waits up to the configured piggyback wait for the
///   OMA side's first NOTIFYs. A SUBSCRIBE without category list ([MS-PRES] §4.10 PIDF, §4.11
///   msrtc.pidf) is bridged the same way for its Request-URI, its bodies rendered in the format
///   Accept negotiated (`GatewayCore+EnterpriseDocumentWatchers`); the category SUBSCRIBEs are
///   bridged in `GatewayCore+EnterpriseWatchers`.
/// - Flow 2, OMA watcher → enterprise presentity: a presence SUBSCRIBE is answered as a
///   ``NotifierSubscription`` in the format its Accept prefers (PIDF, msrtc.pidf, categories);
///   toward the enterprise the gateway keeps category subscriptions (``BatchCategorySubscriber``,
///   batched per watcher and pool, or single) and maps every category notification. Flow 3, the
///   enterprise's `resubscribe`/`poolFqdn` hints, is followed in `GatewayCore+PoolRedirects`
///   (flow 2 itself: `GatewayCore+OMAWatchers`).
///
/// A watcher is notified only when what it may see changed: the body rendered for it is compared
/// with the last one sent. So a politely blocked watcher, whose view is always that of a
/// presentity that never published, is notified exactly as such a watcher would be.
public struct GatewayCore: Sendable {
    /// Identifies a request the runtime received and must answer (a server transaction).
    public typealias ServerRequestID = UInt64

    /// Which of the core's legs a client transaction or timer belongs to.
    public enum Context: Sendable, Hashable {
        /// A category subscription of an enterprise watcher, notifier side (flow 1).
        case enterpriseWatch(Int)
        /// A PIDF subscription toward the OMA side (flow 1).
        case omaLeg(Int)
        /// A list subscription toward an OMA resource list server (flow 1, RFC 4662).
        case omaList(Int)
        /// A subscription of the gateway's own at the OMA side: to the changes of a presentity's
        /// pres-rules (`xcap-diff`, RFC 5875) or to a linked identity's watchers (`presence.winfo`,
        /// RFC 3857).
        case serverWatch(Int)
        /// A presence subscription of an OMA watcher, notifier side (flow 2).
        case omaWatch(Int)
        /// A `presence.winfo` subscription of a presentity's owner, notifier side (RFC 3857).
        case winfoWatch(Int)
        /// A category subscription toward the enterprise (flow 2).
        case enterpriseLeg(Int)
        /// A linked identity's PIDF publication toward the OMA presence server (flow 4).
        case linkedPublication(Int)
        /// A SERVICE category publish for this enterprise identity (flow 4).
        case servicePublish(String)
        /// A UPnP control point's registration for a contact's presence, and its PIDF
        /// subscription toward the OMA side when the contact is an OMA presentity (flow 5).
        case upnpContact(Int)
        /// The UPnP user's own state (flow 5): its publication (a PIDF PUBLISH toward the OMA
        /// presence server, or a SERVICE category publish into the enterprise), and the expiry
        /// of its decisions on watchers.
        case upnpUser
    }

    public enum Timer: Sendable, Hashable {
        case expiry(Context)
        case refresh(Context)
        /// Stop waiting for first state and answer the watcher with what is known: flow 1, the
        /// OMA legs' first notifications (`.enterpriseWatch`); flow 2, a batch leg whose 2xx
        /// carried no data for the resource (`.omaWatch`).
        case firstAnswer(Context)
        /// A leg whose unsubscribe got no final NOTIFY is forgotten (64·T1 after it was sent).
        case cleanup(Context)
        /// A publication retries after a failure (RFC 3903 §4.4 / the client's retry policy), or a
        /// linked identity's enterprise subscription is tried again.
        case retry(Context)
        /// An OMA publication held by the gateway's compositor expires (RFC 3903 §6).
        case publicationExpiry(String)
        /// An OMA watcher's rate control (RFC 6446) is due: its held change goes out now that
        /// 1 / max-rate seconds have passed, or its state is sent again as `min-rate` asks.
        case rateControl(Context)
    }

    public enum Action: Sendable {
        /// Answer the request the runtime received under this id.
        case respond(ServerRequestID, SIPResponse)
        /// Send a request to `side`, out of dialog to the side's next hop, or in a dialog to the
        /// request's Request-URI; report its final response with `context`.
        case send(SIPRequest, to: GatewayConfiguration.Side, context: Context)
        case schedule(Timer, at: NIODeadline)
        case cancel(Timer)
        /// Put this rls-services document (RFC 4826) at `uri` on an XCAP server, or delete the
        /// document when `body` is nil (RFC 4825 §7.4, §7.5); report the answer with
        /// ``listDocumentWritten(_:status:now:)``.
        case writeListDocument(uri: String, body: [UInt8]?)
        /// Fetch the pres-rules document of this presentity from XCAP now: the OMA side said it
        /// changed (RFC 5875).
        case xcapDocumentChanged(presentity: String)
        /// An evented state variable of the UPnP Presence:1 service changed (flow 5): for the
        /// device's GENA subscribers (UDA 1.1 §4.3).
        case upnpEvent(EventedChange)
    }

    /// What the core is set up with (``CoreSettings``).
    var settings: CoreSettings
    /// Call-IDs, tags and table keys.
    var ids: IdentifierSource

    // The components, each holding its flow's tables (docs/architecture.md, "Who owns what").
    /// Flow 1: enterprise watchers, their OMA legs and lists (``EnterpriseWatcherBridge``).
    var bridge = EnterpriseWatcherBridge()
    /// Flow 2's notifier side (``OMAWatcherNotifier``), with the resource lists it serves.
    var notifier = OMAWatcherNotifier()
    /// The resource lists served to OMA watchers, part of the notifier (``ResourceListServer``).
    var lists: ResourceListServer {
        get { notifier.lists }
        _modify { yield &notifier.lists }
    }
    /// Flows 2 and 3 toward the enterprise: the category subscriptions the gateway keeps and
    /// where the enterprise said to make them (``EnterpriseLegPool``).
    var legPool = EnterpriseLegPool()
    /// The gateway's own subscriptions at the OMA side (`GatewayCore+ServerWatches`).
    var serverWatches = OMAServerWatches()
    /// Watcher information subscriptions (RFC 3857), and the roster of watchers the components
    /// report to while anyone follows watchers (``WatcherRoster``, ``followWatcherInfoSubscribers()``).
    var watcherInfo = WatcherInfoServer()
    /// Flow 4: what the gateway publishes for linked identities, each way.
    var linkedIdentities: LinkedIdentityPublisher
    /// Flow 5: the UPnP Presence:1 service's user and the contacts registered for.
    var upnp = UPnPPresenceBridge()
    /// Dialogs by (Call-ID, local tag) for in-dialog requests (held by hash, see `DialogIndex`).
    var dialogs = DialogIndex()
    /// The counts behind the limits, what was refused and the drained peers (``Quotas``).
    var quotas = Quotas()
    /// What the core refused to protect the edge, by reason, for metrics.
    public var refusals: Refusals { quotas.refusals }
    /// The peers an operator drained (``loadKey(_:)``: a configured peer's name or an address):
    /// no new dialog is made from or toward them (GatewayCore+Draining.swift).
    public var drainedPeers: Set<String> { quotas.drained }

    public init(
        configuration: GatewayConfiguration, mapper: PresenceMapper, contacts: [GatewayConfiguration.Side: SIPAddress],
        ids: IdentifierSource
    ) {
        var presence = SIPEventPackage.presence
        presence.defaultExpires = configuration.subscriptions.defaultExpires
        presence.minimumExpires = configuration.subscriptions.minimumExpires
        presence.maximumExpires = configuration.subscriptions.maximumExpires
        self.settings = CoreSettings(
            configuration: configuration, mapper: mapper, contacts: contacts,
            registry: SIPEventPackageRegistry([presence, Self.watcherInfoPackage(configuration)]))
        self.ids = ids
        self.linkedIdentities = LinkedIdentityPublisher(package: presence)
    }

    /// Active subscriptions per side, for metrics: watchers served and legs kept.
    public var counts: (enterpriseWatches: Int, omaLegs: Int, omaWatches: Int, enterpriseLegs: Int) {
        // Linked identities' own watches are not watchers; there are as few as configured
        // identities, so they are counted from the links rather than by walking every OMA watch.
        // Nor are the members' watches of a resource list, whose list is the watcher's one, nor
        // the stand-ins for watchers at the OMA presence server (``mirroredWatcherCount``).
        let linkedWatches = linkedIdentities.watchCount { notifier[$0] != nil }
        return (
            bridge.watchCount, bridge.legCount,
            notifier.count - linkedWatches - upnp.watchCount - lists.memberWatches - mirroredWatcherCount,
            legPool.count
        )
    }

    typealias DialogKey = SIPDialogKey

    // MARK: - Requests

    /// A request that arrived from `side`, already routed: `watcher` is the classified From.
    /// In-dialog requests (To tag present) are matched to their dialog.
    /// `peer` is who sent it (``FederationRouter/dialogPeer(for:)``): a dialog it creates belongs
    /// to that peer (nil: to nobody in particular, as in tests of the core alone).
    public mutating func receive(
        _ request: SIPRequest, id: ServerRequestID, from side: GatewayConfiguration.Side,
        watcher: WatcherIdentity?, peer: DialogPeer? = nil, now: NIODeadline
    ) -> [Action] {
        withWatcherInfo(receiveRequest(request, id: id, from: side, watcher: watcher, peer: peer, now: now), now: now)
    }

    /// A request inside the dialog of `context`, which ``dialogOwner(of:)`` found for it.
    public mutating func receive(_ request: SIPRequest, id: ServerRequestID, in context: Context, now: NIODeadline)
        -> [Action]
    {
        withWatcherInfo(inDialog(request, id: id, context: context, now: now), now: now)
    }

    private mutating func receiveRequest(
        _ request: SIPRequest, id: ServerRequestID, from side: GatewayConfiguration.Side,
        watcher: WatcherIdentity?, peer: DialogPeer?, now: NIODeadline
    ) -> [Action] {
        if let tag = (try? request.headers.to)?.tag, let callID = request.headers.callID {
            guard let context = dialogContext(callID: callID, localTag: tag) else {
                return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
            }
            return inDialog(request, id: id, context: context, now: now)
        }
        if request.method == .publish, side == .oma { return receivePublish(request, id: id, now: now) }
        guard request.method == .subscribe else {
            return [
                .respond(
                    id,
                    SIPResponse(
                        replyingTo: request, statusCode: 405, toTag: ids.tag(),
                        headers: [(.allow, "SUBSCRIBE, NOTIFY, BENOTIFY, OPTIONS")]))
            ]
        }
        if let refused = refusedWhileDraining(request, id: id, peer: peer) { return refused }
        guard let watcher else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 403, toTag: ids.tag()))]
        }
        if dialogs.count >= configuration.limits.dialogs {
            quotas.refusals.dialogsFull += 1
            return [
                .respond(
                    id,
                    SIPResponse(
                        replyingTo: request, statusCode: 503, reasonPhrase: "Too Many Dialogs", toTag: ids.tag(),
                        headers: [(.retryAfter, "60")]))
            ]
        }
        // The dialog keeps its peer for its life: shared with the other dialogs of that peer.
        let peer = peer?.shared()
        if Self.isWatcherInfo(request) {
            // Watcher information is served to the OMA presentities' owners only (RFC 3857).
            guard side == .oma else {
                return [
                    .respond(
                        id,
                        SIPResponse(
                            replyingTo: request, statusCode: 489, reasonPhrase: "Bad Event", toTag: ids.tag(),
                            headers: [(.allowEvents, "presence")]))
                ]
            }
            return newWinfoWatch(request, id: id, subscriber: watcher, peer: peer, now: now)
        }
        switch side {
        case .enterprise: return newEnterpriseWatch(request, id: id, watcher: watcher, peer: peer, now: now)
        case .oma: return newOMAWatch(request, id: id, watcher: watcher, peer: peer, now: now)
        }
    }

    private mutating func inDialog(_ request: SIPRequest, id: ServerRequestID, context: Context, now: NIODeadline)
        -> [Action]
    {
        switch context {
        case .enterpriseWatch(let key): return refreshEnterpriseWatch(key, request, id: id, now: now)
        case .omaWatch(let key): return refreshOMAWatch(key, request, id: id, now: now)
        case .winfoWatch(let key): return refreshWinfoWatch(key, request, id: id, now: now)
        // The relay of a notification in an existing pair: the hot path, which writes to the
        // durable store only what it changes of the subscriptions' status and dialogs.
        case .omaLeg(let key): return quietly { $0.omaLegNotify(key, request, id: id, now: now) }
        case .omaList(let key): return quietly { $0.omaListNotify(key, request, id: id, now: now) }
        case .serverWatch(let key): return serverWatchNotify(key, request, id: id, now: now)
        case .enterpriseLeg(let key): return quietly { $0.enterpriseLegNotify(key, request, id: id, now: now) }
        case .upnpContact(let key): return upnpContactNotify(key, request, id: id, now: now)
        case .linkedPublication, .servicePublish, .upnpUser:
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
    }

    // MARK: - Responses and timers

    /// The final response to a request sent with `context` (a transport failure or timeout is
    /// reported by the runtime as 503 or 408, RFC 3261 §8.1.3.1).
    public mutating func receive(_ response: SIPResponse, to request: SIPRequest, context: Context, now: NIODeadline)
        -> [Action]
    {
        withWatcherInfo(receiveResponse(response, to: request, context: context, now: now), now: now)
    }

    private mutating func receiveResponse(
        _ response: SIPResponse, to request: SIPRequest, context: Context, now: NIODeadline
    ) -> [Action] {
        switch context {
        case .omaLeg(let key): return omaLegResponse(key, response, request: request, now: now)
        case .omaList(let key): return omaListResponse(key, response, request: request, now: now)
        case .serverWatch(let key): return serverWatchResponse(key, response, request: request, now: now)
        case .enterpriseLeg(let key): return enterpriseLegResponse(key, response, now: now)
        case .linkedPublication(let key): return linkedPublicationResponse(key, response, now: now)
        case .servicePublish(let publisher): return servicePublishResponse(publisher, response)
        case .upnpContact(let key): return upnpContactResponse(key, response, now: now)
        case .upnpUser: return upnpPublished(response, now: now)
        case .enterpriseWatch(let key):
            guard (300...).contains(response.statusCode) else { return [] }
            let actions = bridge.modifyWatch(key) { $0.notifyFailed(status: response.statusCode) }
            return apply(actions ?? [], context: context, now: now)
        case .omaWatch(let key):
            guard (300...).contains(response.statusCode) else { return [] }
            let actions = notifier.modify(key) { $0.subscription?.notifyFailed(status: response.statusCode) ?? [] }
            return apply(actions ?? [], context: context, now: now)
        case .winfoWatch(let key):
            guard (300...).contains(response.statusCode) else { return [] }
            return applyWatcherInfo(watcherInfo.notifyFailed(key, status: response.statusCode))
        }
    }

    /// The XCAP server answered the write of a list document (`status` nil: no answer in time);
    /// see ``EnterpriseWatcherBridge/writeListDocument(of:)``.
    public mutating func listDocumentWritten(_ uri: String, status: Int?, now: NIODeadline) -> [Action] {
        withWatcherInfo(listDocumentAnswered(uri, status: status, now: now), now: now)
    }

    public mutating func fire(_ timer: Timer, now: NIODeadline) -> [Action] {
        withWatcherInfo(fireTimer(timer, now: now), now: now)
    }

    private mutating func fireTimer(_ timer: Timer, now: NIODeadline) -> [Action] {
        switch timer {
        case .firstAnswer(.enterpriseWatch(let key)):
            return answerEnterpriseWatch(key, now: now)
        case .firstAnswer(.omaWatch(let key)):
            return answerOMAWatchWithoutData(key, now: now)
        case .cleanup(.omaLeg(let key)):
            removeOMALeg(key)
            return []
        case .cleanup(.omaList(let key)):
            removeOMAList(key)
            return []
        case .cleanup(.serverWatch(let key)):
            removeServerWatch(key)
            return []
        case .cleanup(.enterpriseLeg(let key)):
            removeEnterpriseLeg(key)
            return []
        case .retry(.linkedPublication(let key)):
            return retryLinked(key, now: now)
        case .retry(.upnpContact(let key)):
            return retryUPnPContact(key, now: now)
        case .cleanup(.upnpContact(let key)):
            return removeUPnPRegistration(key, now: now)
        case .retry(.upnpUser):
            return upnp.withPublication { $0.retry(now: now) }
        case .refresh(.upnpUser):
            return upnp.withPublication { $0.refresh(now: now) }
        case .refresh(.linkedPublication(let key)):
            return refreshLinked(key, now: now)
        case .publicationExpiry(let tag):
            return expirePublication(tag, now: now)
        case .rateControl(.omaWatch(let key)):
            return rateControlDue(key, now: now)
        case .expiry(let context):
            return expire(context, now: now)
        case .refresh(let context):
            return refresh(context, now: now)
        default:
            return []
        }
    }

    /// A subscription's expiry timer: a watcher's runs out (RFC 6665 §4.2.2: ended with
    /// `terminated;reason=timeout`); a leg whose refresh failed and whose granted time ran out
    /// ends, the other side having stopped answering.
    private mutating func expire(_ context: Context, now: NIODeadline) -> [Action] {
        switch context {
        case .enterpriseWatch(let key):
            let actions = bridge.modifyWatch(key) { $0.expire(now: now) }
            return apply(actions ?? [], context: context, now: now)
        case .omaWatch(let key):
            guard let end = notifier[key]?.subscription?.expiresAt else { return [] }
            if lists.isList(key) { return now >= end ? terminateList(key, reason: "timeout", now: now) : [] }
            let actions = notifier.modify(key) { $0.subscription?.expire(now: now) ?? [] }
            return apply(actions ?? [], context: context, now: now)
        case .omaLeg(let key):
            // A refresh failed and the granted time ran out: the OMA side stopped answering.
            guard let leg = bridge[leg: key], !leg.closing, let end = leg.subscription?.expiresAt, end <= now else {
                return []
            }
            return omaLegEnded(key, reason: "timeout", statusCode: nil, now: now)
        case .omaList(let key):
            // The same for a list: it is made again, and given up if that is refused.
            guard let list = bridge[list: key], !list.closing, let end = list.subscription?.expiresAt, end <= now else {
                return []
            }
            return restartOMAList(key)
        case .serverWatch(let key):
            return serverWatchExpired(key, now: now)
        case .enterpriseLeg(let key):
            guard let leg = legPool[key], !leg.closing, let end = leg.subscriber.subscription.expiresAt,
                end <= now
            else { return [] }
            return enterpriseLegEnded(key, reason: "timeout", status: nil, now: now)
        case .winfoWatch(let key):
            return applyWatcherInfo(watcherInfo.expire(key, now: now))
        case .upnpContact(let key):
            return expireUPnPContact(key, now: now)
        case .upnpUser:
            return lapseUPnPDecisions(now: now)
        case .linkedPublication, .servicePublish:
            return []
        }
    }

    /// A subscription the gateway holds is refreshed before it expires (RFC 6665 §4.1.2.2).
    private mutating func refresh(_ context: Context, now: NIODeadline) -> [Action] {
        switch context {
        case .omaLeg(let key):
            return bridge.refreshLeg(key, now: now)
        case .omaList(let key):
            return bridge.refreshList(key, now: now)
        case .serverWatch(let key):
            return refreshServerWatch(key, now: now)
        case .enterpriseLeg(let key):
            guard legPool[key]?.closing == false else { return [] }
            let actions = legPool.modify(key) { $0.subscriber.refresh(now: now) } ?? []
            return enterpriseLegActions(key, actions, now: now)
        case .upnpContact(let key):
            return upnp.refresh(key, now: now)
        default:
            return []
        }
    }

    /// Graceful shutdown: every watcher gets a final NOTIFY (`terminated;reason=deactivated`, so
    /// it may subscribe again at once, RFC 6665 §4.1.3) and every leg an unsubscribe.
    public mutating func shutdown(now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in bridge.watchKeys.sorted() {
            out += endWatcher(.enterpriseWatch(key), reason: "deactivated", now: now)
        }
        out += linkedIdentities.removeAll()
        out += endUPnP(now: now)
        out += withdrawServicePublications()
        for key in serverWatches.keys { out += endServerWatch(key, now: now) }
        for key in notifier.keys.sorted() { out += endWatcher(.omaWatch(key), reason: "deactivated", now: now) }
        for key in watcherInfo.keys { out += endWatcher(.winfoWatch(key), reason: "deactivated", now: now) }
        return out
    }

    // MARK: - Shared

    mutating func takeKey() -> Int { ids.key() }

    /// The answer to a SUBSCRIBE whose terms were refused (RFC 6665 §4.2.1.1: 489 with
    /// Allow-Events, 423 with Min-Expires, 406; 400 for a header that does not parse), with a To
    /// tag of its own for an initial SUBSCRIBE; a refresh is refused in its dialog.
    mutating func refuseTerms(
        _ request: SIPRequest, id: ServerRequestID, _ status: Int, _ reason: String?, _ headers: SIPHeaders,
        initial: Bool
    ) -> [Action] {
        let tag = initial ? ids.tag() : nil
        return [
            .respond(
                id,
                SIPResponse(replyingTo: request, statusCode: status, reasonPhrase: reason, toTag: tag, headers: headers)
            )
        ]
    }

    /// 64·T1 (RFC 3261 Timer F): how long an unsubscribed subscription waits for its final NOTIFY.
    static let cleanupDelay = TimeAmount.seconds(32)

    /// What an unsubscribe of the subscription of `context` does (RFC 6665 §4.1.2.3): `sent`,
    /// its Expires 0 SUBSCRIBE, without a refresh timer; the refresh cancelled, and the entry
    /// forgotten 64·T1 later if the final NOTIFY never comes.
    static func unsubscribing(_ sent: [Action], _ context: Context, now: NIODeadline) -> [Action] {
        sent.filter { if case .schedule = $0 { false } else { true } }
            + [.cancel(.refresh(context)), .schedule(.cleanup(context), at: now + cleanupDelay)]
    }

    /// A subscriber's requests and refresh timer as the core's actions, its requests sent to
    /// `side` (marked with the edge's `trust` when given); the rest is the caller's to act on.
    static func subscriberActions(
        _ actions: [SubscriberSubscription.Action], context: Context, to side: GatewayConfiguration.Side,
        trust: String? = nil
    ) -> [Action] {
        actions.compactMap { action -> Action? in
            switch action {
            case .send(var request):
                if let trust { request.headers.set(.msEdgeProxyMessageTrust, trust) }
                return .send(request, to: side, context: context)
            case .scheduleRefresh(let at): return .schedule(.refresh(context), at: at)
            default: return nil
            }
        }
    }

    /// A notifier dialog's actions (``NotifierSubscription``) as the core's, for the dialog of
    /// `context` toward `side`: the answers to request `id`, its NOTIFYs (each followed by what
    /// `notified` adds), its expiry timer. `removed`: the dialog is over (its expiry timer is
    /// cancelled here), and the component holding it removes its entry.
    static func notifierActions(
        _ actions: [NotifierSubscription.Action], context: Context, to side: GatewayConfiguration.Side,
        id: ServerRequestID?, notified: () -> [Action] = { [] }
    ) -> (actions: [Action], removed: Bool) {
        var out: [Action] = []
        var removed = false
        for action in actions {
            switch action {
            case .respond(let response):
                if let id { out.append(.respond(id, response)) }
            case .notify(let request):
                out.append(.send(request, to: side, context: context))
                out += notified()
            case .scheduleExpiry(let at):
                out.append(.schedule(.expiry(context), at: at))
            case .remove:
                out.append(.cancel(.expiry(context)))
                removed = true
            }
        }
        return (out, removed)
    }

    /// A watcher's dialog's actions as the core's, taken by the component whose dialog it is
    /// (``EnterpriseWatcherBridge/watchActions(_:_:now:id:)``,
    /// ``OMAWatcherNotifier/watchActions(_:_:now:id:)``); a removed OMA watch also leaves its leg
    /// toward the enterprise. No other kind of dialog is a ``NotifierSubscription``.
    mutating func apply(
        _ actions: [NotifierSubscription.Action], context: Context, now: NIODeadline,
        id: ServerRequestID? = nil
    ) -> [Action] {
        switch context {
        case .enterpriseWatch(let key):
            return apply(bridge.watchActions(actions, key, now: now, id: id))
        case .omaWatch(let key):
            return applyOMAWatch(notifier.watchActions(actions, key, now: now, id: id), key, now: now)
        default:
            return []
        }
    }

    /// What the notifier's step for OMA watch `key` returned: its actions, and when its dialog
    /// is gone the watch removed, leaving its leg toward the enterprise.
    mutating func applyOMAWatch(_ step: OMAWatcherNotifier.WatchStep, _ key: Int, now: NIODeadline) -> [Action] {
        let actions = apply(step.output)
        guard step.removed, let gone = forgetOMAWatch(key) else { return actions }
        return actions + detachOMAWatch(gone, now: now)
    }
}
