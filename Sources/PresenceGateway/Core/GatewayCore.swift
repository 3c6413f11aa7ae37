public import NIOCore
import PresenceDocuments
import MSPresenceEvents
public import PresenceMapping
public import SIPMessages
import SIPStack
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
///   Accept negotiated (`GatewayCore+DocumentWatchers`).
/// - Flow 2, OMA watcher → enterprise presentity: a presence SUBSCRIBE is answered as a
///   ``NotifierSubscription`` in the format its Accept prefers (PIDF, msrtc.pidf, categories);
///   toward the enterprise the gateway keeps category subscriptions (``BatchCategorySubscriber``,
///   batched per watcher and pool, or single) and maps every category notification. Flow 3, the
///   enterprise's `resubscribe`/`poolFqdn` hints, is followed there (`GatewayCore+OMAWatchers`).
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
        /// A presence subscription of an OMA watcher, notifier side (flow 2).
        case omaWatch(Int)
        /// A category subscription toward the enterprise (flow 2).
        case enterpriseLeg(Int)
        /// A linked identity's PIDF publication toward the OMA presence server (flow 4).
        case linkedPublication(Int)
        /// A SERVICE category publish for this enterprise identity (flow 4).
        case servicePublish(String)
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
    }

    public enum Action: Sendable {
        /// Answer the request the runtime received under this id.
        case respond(ServerRequestID, SIPResponse)
        /// Send a request to `side`, out of dialog to the side's next hop, or in a dialog to the
        /// request's Request-URI; report its final response with `context`.
        case send(SIPRequest, to: GatewayConfiguration.Side, context: Context)
        case schedule(Timer, at: NIODeadline)
        case cancel(Timer)
    }

    public let configuration: GatewayConfiguration
    public let mapper: PresenceMapper
    /// Contacts the gateway puts in each side's dialogs.
    public let contacts: [GatewayConfiguration.Side: SIPAddress]
    var ids: IdentifierSource
    var nextKey = 0

    // Dense tables, not dictionaries: a dictionary pays each value's bytes for every bucket
    // (1.3–2.7 times the count), see `DenseTable`.
    var enterpriseWatches = DenseTable<Int, EnterpriseWatch>()
    var omaLegs = DenseTable<Int, OMALeg>()
    var omaWatches = DenseTable<Int, OMAWatch>()
    var enterpriseLegs = DenseTable<Int, EnterpriseLeg>()
    /// Enterprise resource → the pool GRUU a batch response told to resubscribe to (flow 3).
    var pools: [String: String] = [:]
    /// The enterprise refused a batched category SUBSCRIBE from a federated watcher once: single
    /// ones from then on ([MS-PRES] §3.4.5.1.1: batch is for users of the deployment).
    var batchRefused = false
    /// Linked identities whose enterprise state is published to the OMA presence server.
    var linked: [Int: LinkedPublication] = [:]
    /// The gateway's own event state compositor, for linked identities it serves (flow 4).
    var compositor: EventStateCompositor
    /// Their composed state, as categories, by OMA identity.
    var served: [String: CategoriesDocument] = [:]
    /// SERVICE category publishers by enterprise identity.
    var servicePublishers: [String: CategoryPublisher] = [:]
    /// Dialogs by (Call-ID, local tag) for in-dialog requests (held by hash, see `DialogIndex`).
    var dialogs = DialogIndex()
    /// Subscriptions each watcher holds through the gateway (OMA legs of an enterprise watcher,
    /// watches of an OMA watcher), against `limits.subscriptions-per-watcher`, by the hash of the
    /// watcher's URI: a ``PackedTable`` bucket (12 bytes, 1.14 to 2 per watcher) where a
    /// dictionary by URI held 24 bytes in 1.33 to 2.67 buckets, about 40 bytes per bridged pair
    /// more (every OMA watcher of the memory benchmark is another). Two watchers whose URIs hash
    /// alike (64 bits, seeded per process) would share one quota.
    var watcherLoad = PackedTable<Int, Int32>(filler: 0)
    /// Subscription dialogs each peer holds (``DialogPeer``'s configured name or address).
    var peerLoad: [String: Int] = [:]
    /// What the core refused to protect the edge, by reason, for metrics.
    public internal(set) var refusals = Refusals()
    let registry: SIPEventPackageRegistry

    public init(configuration: GatewayConfiguration, mapper: PresenceMapper, contacts: [GatewayConfiguration.Side: SIPAddress],
                ids: IdentifierSource) {
        self.configuration = configuration
        self.mapper = mapper
        self.contacts = contacts
        self.ids = ids
        var presence = SIPEventPackage.presence
        presence.defaultExpires = configuration.subscriptions.defaultExpires
        presence.minimumExpires = configuration.subscriptions.minimumExpires
        presence.maximumExpires = configuration.subscriptions.maximumExpires
        self.registry = SIPEventPackageRegistry([presence])
        self.compositor = EventStateCompositor(package: presence, acceptedBodyTypes: [SIPBodyType.pidf])
    }

    /// Active subscriptions per side, for metrics: watchers served and legs kept.
    public var counts: (enterpriseWatches: Int, omaLegs: Int, omaWatches: Int, enterpriseLegs: Int) {
        // Linked identities' own watches are not watchers; there are as few as configured
        // identities, so they are counted from `linked` rather than by walking every OMA watch.
        let linkedWatches = linked.values.count { link in link.watch.map { omaWatches[$0] != nil } ?? false }
        return (enterpriseWatches.count, omaLegs.count, omaWatches.count - linkedWatches, enterpriseLegs.count)
    }

    typealias DialogKey = SIPDialogKey

    // MARK: - Requests

    /// A request that arrived from `side`, already routed: `watcher` is the classified From.
    /// In-dialog requests (To tag present) are matched to their dialog.
    /// `peer` is who sent it (``FederationRouter/dialogPeer(for:)``): a dialog it creates belongs
    /// to that peer (nil: to nobody in particular, as in tests of the core alone).
    public mutating func receive(_ request: SIPRequest, id: ServerRequestID, from side: GatewayConfiguration.Side,
                                 watcher: WatcherIdentity?, peer: DialogPeer? = nil, now: NIODeadline) -> [Action] {
        if let tag = (try? request.headers.to)?.tag, let callID = request.headers.callID {
            guard let context = dialogContext(callID: callID, localTag: tag) else {
                return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
            }
            return inDialog(request, id: id, context: context, now: now)
        }
        if request.method == .publish, side == .oma { return receivePublish(request, id: id, now: now) }
        guard request.method == .subscribe else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 405, toTag: ids.tag(),
                                             headers: [(.allow, "SUBSCRIBE, NOTIFY, BENOTIFY, OPTIONS")]))]
        }
        guard let watcher else { return [.respond(id, SIPResponse(replyingTo: request, statusCode: 403, toTag: ids.tag()))] }
        if dialogs.count >= configuration.limits.dialogs {
            refusals.dialogsFull += 1
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 503, reasonPhrase: "Too Many Dialogs", toTag: ids.tag(),
                                             headers: [(.retryAfter, "60")]))]
        }
        switch side {
        case .enterprise: return newEnterpriseWatch(request, id: id, watcher: watcher, peer: peer, now: now)
        case .oma: return newOMAWatch(request, id: id, watcher: watcher, peer: peer, now: now)
        }
    }

    private mutating func inDialog(_ request: SIPRequest, id: ServerRequestID, context: Context, now: NIODeadline) -> [Action] {
        switch context {
        case .enterpriseWatch(let key): return refreshEnterpriseWatch(key, request, id: id, now: now)
        case .omaWatch(let key): return refreshOMAWatch(key, request, id: id, now: now)
        case .omaLeg(let key): return omaLegNotify(key, request, id: id, now: now)
        case .enterpriseLeg(let key): return enterpriseLegNotify(key, request, id: id, now: now)
        case .linkedPublication, .servicePublish: return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
    }

    // MARK: - Responses and timers

    /// The final response to a request sent with `context` (a transport failure or timeout is
    /// reported by the runtime as 503 or 408, RFC 3261 §8.1.3.1).
    public mutating func receive(_ response: SIPResponse, to request: SIPRequest, context: Context, now: NIODeadline) -> [Action] {
        switch context {
        case .omaLeg(let key): return omaLegResponse(key, response, request: request, now: now)
        case .enterpriseLeg(let key): return enterpriseLegResponse(key, response, now: now)
        case .linkedPublication(let key): return linkedPublicationResponse(key, response, now: now)
        case .servicePublish(let publisher): return servicePublishResponse(publisher, response)
        case .enterpriseWatch(let key):
            guard (300...).contains(response.statusCode), var watch = enterpriseWatches[key] else { return [] }
            if var document = watch.document {
                let actions = document.notifyFailed(status: response.statusCode)
                watch.document = document
                enterpriseWatches[key] = watch
                return apply(actions, context: context, now: now)
            }
            guard var sub = watch.subscription else { return [] }
            let actions = sub.notifyFailed(status: response.statusCode)
            watch.subscription = sub
            enterpriseWatches[key] = watch
            return apply(actions, context: context, now: now)
        case .omaWatch(let key):
            guard (300...).contains(response.statusCode), var watch = omaWatches[key], var sub = watch.subscription else { return [] }
            let actions = sub.notifyFailed(status: response.statusCode)
            watch.subscription = sub
            omaWatches[key] = watch
            return apply(actions, context: context, now: now)
        }
    }

    public mutating func fire(_ timer: Timer, now: NIODeadline) -> [Action] {
        switch timer {
        case .firstAnswer(.enterpriseWatch(let key)):
            return answerEnterpriseWatch(key, now: now)
        case .firstAnswer(.omaWatch(let key)):
            return answerOMAWatchWithoutData(key, now: now)
        case .cleanup(.omaLeg(let key)):
            removeOMALeg(key)
            return []
        case .cleanup(.enterpriseLeg(let key)):
            removeEnterpriseLeg(key)
            return []
        case .retry(.linkedPublication(let key)):
            return retryLinked(key, now: now)
        case .refresh(.linkedPublication(let key)):
            return refreshLinked(key, now: now)
        case .publicationExpiry(let tag):
            return expirePublication(tag, now: now)
        case .expiry(let context):
            switch context {
            case .enterpriseWatch(let key):
                guard var watch = enterpriseWatches[key] else { return [] }
                if var document = watch.document {
                    let actions = document.expire(now: now)
                    watch.document = document
                    enterpriseWatches[key] = watch
                    return apply(actions, context: context, now: now)
                }
                guard var sub = watch.subscription else { return [] }
                let actions = sub.expire(now: now)
                watch.subscription = sub
                enterpriseWatches[key] = watch
                return apply(actions, context: context, now: now)
            case .omaWatch(let key):
                guard var watch = omaWatches[key], var sub = watch.subscription else { return [] }
                let actions = sub.expire(now: now)
                watch.subscription = sub
                omaWatches[key] = watch
                return apply(actions, context: context, now: now)
            case .omaLeg(let key):
                // A refresh failed and the granted time ran out: the OMA side stopped answering.
                guard let leg = omaLegs[key], !leg.closing, let end = leg.subscription.expiresAt, end <= now else { return [] }
                return omaLegEnded(key, reason: "timeout", statusCode: nil, now: now)
            case .enterpriseLeg(let key):
                guard let leg = enterpriseLegs[key], !leg.closing, let end = leg.subscriber.subscription.expiresAt, end <= now else { return [] }
                return enterpriseLegEnded(key, reason: "timeout", status: nil, now: now)
            case .linkedPublication, .servicePublish:
                return []
            }
        case .refresh(let context):
            switch context {
            case .omaLeg(let key):
                guard var leg = omaLegs[key], !leg.closing else { return [] }
                let actions = leg.subscription.refresh(now: now)
                omaLegs[key] = leg
                return legActions(actions, context: context)
            case .enterpriseLeg(let key):
                guard var leg = enterpriseLegs[key], !leg.closing else { return [] }
                let actions = leg.subscriber.refresh(now: now)
                enterpriseLegs[key] = leg
                return enterpriseLegActions(key, actions, now: now)
            default:
                return []
            }
        default:
            return []
        }
    }

    /// Graceful shutdown: every watcher gets a final NOTIFY (`terminated;reason=deactivated`, so
    /// it may subscribe again at once, RFC 6665 §4.1.3) and every leg an unsubscribe.
    public mutating func shutdown(now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in enterpriseWatches.keys.sorted() {
            guard var watch = enterpriseWatches[key] else { continue }
            if let pending = watch.pending {
                forgetEnterpriseWatch(key)
                out.append(.respond(pending.id, SIPResponse(replyingTo: pending.request, statusCode: 503, toTag: ids.tag(),
                                                            headers: [(.retryAfter, "30")])))
                out += endOMALegs(watch.legs.values, now: now)
                continue
            }
            if var document = watch.document {
                let actions = document.terminate(reason: "deactivated", now: now)
                watch.document = document
                enterpriseWatches[key] = watch
                out += apply(actions, context: .enterpriseWatch(key), now: now)
                continue
            }
            guard var sub = watch.subscription else { continue }
            let actions = sub.terminate(reason: "deactivated", now: now)
            watch.subscription = sub
            enterpriseWatches[key] = watch
            out += apply(actions, context: .enterpriseWatch(key), now: now)
        }
        out += removeLinkedPublications()
        for key in omaWatches.keys.sorted() {
            guard var watch = omaWatches[key] else { continue }
            if let pending = watch.pending {
                forgetOMAWatch(key)
                out.append(.respond(pending.id, SIPResponse(replyingTo: pending.request, statusCode: 503, toTag: ids.tag(),
                                                            headers: [(.retryAfter, "30")])))
                out += detachOMAWatch(watch, now: now)
                continue
            }
            guard var sub = watch.subscription else {
                // A linked identity's source subscription: unsubscribed with the rest.
                if watch.linked != nil {
                    forgetOMAWatch(key)
                    out += detachOMAWatch(watch, now: now)
                }
                continue
            }
            let actions = sub.terminate(reason: "deactivated", now: now)
            watch.subscription = sub
            omaWatches[key] = watch
            out += apply(actions, context: .omaWatch(key), now: now)
        }
        return out
    }

    // MARK: - Flow 1: enterprise watcher → OMA presentities

    struct EnterpriseWatch: Sendable {
        typealias Pending = (request: SIPRequest, id: ServerRequestID, batch: BatchSubscribe, terms: SubscriptionTerms)
        var watcher: WatcherIdentity
        /// Until answered: the SUBSCRIBE, its server request and its batch body (held out of line,
        /// and freed once answered).
        var pending: Pending? {
            get { pendingBox?.value }
            set { pendingBox = newValue.map(OutOfLine.init) }
        }
        private var pendingBox: OutOfLine<Pending>?
        var subscription: BatchCategorySubscription?
        /// OMA resource URI → leg key.
        var legs: SmallMap<String, Int> = [:]
        /// Resource → last body sent, to notify only on change.
        var lastSent: SmallMap<String, BodyDigest> = [:]
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
        private var documentBox: OutOfLine<NotifierSubscription>?
        /// Who made the dialog: its in-dialog requests must come from there.
        var peer: DialogPeer?
        /// Resources of its batch the gateway refused to subscribe to (outside the OMA domains,
        /// or past the watcher's quota): listed `terminated;reason=rejected` in its RLMI parts.
        var refused: Set<String> = []

        init(watcher: WatcherIdentity, pending: Pending?, peer: DialogPeer?) {
            self.watcher = watcher
            self.pending = pending
            self.peer = peer
        }
    }

    struct OMALeg: Sendable {
        var watch: Int
        /// The enterprise watcher's URI, whose quota the leg counts against.
        var watcher: String
        var resource: String
        var subscription: SubscriberSubscription
        /// The latest OMA state as categories; nil until the first NOTIFY.
        var categories: CategoriesDocument?
        var handling: SubHandling
        /// Unsubscribed; waiting for the final NOTIFY.
        var closing = false
        /// The OMA side's last NOTIFY said `Subscription-State: pending` (RFC 6665 §4.1.3: the
        /// subscription waits for the presentity's authorization; RFC 3856 §6.6.2: no state yet).
        var pending = false
        /// The OMA peer the SUBSCRIBE was sent to (``GatewayCore/reached(_:for:)``).
        var peer: DialogPeer?
    }

    private mutating func newEnterpriseWatch(_ request: SIPRequest, id: ServerRequestID, watcher: WatcherIdentity,
                                             peer: DialogPeer?, now: NIODeadline) -> [Action] {
        let terms: SubscriptionTerms
        switch SubscriptionTerms.evaluate(request, registry: registry) {
        case .accept(let t): terms = t
        case .reject(let status, let reason, let headers):
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: status, reasonPhrase: reason, toTag: ids.tag(), headers: headers))]
        }
        if request.body.isEmpty, terms.bodyType != SIPBodyType.msrtcCategories {
            // [MS-PRES] §1.3.3: a client that did not negotiate categories asks for msrtc.pidf or PIDF.
            return newDocumentWatch(request, id: id, watcher: watcher, terms: terms, peer: peer, now: now)
        }
        let batch: BatchSubscribe
        do { batch = try BatchSubscribe(bytes: request.body) } catch {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 400, reasonPhrase: "Bad categoryList body", toTag: ids.tag()))]
        }
        let named = batch.actions.reduce(0) { $0 + ($1.kind == .subscribe ? $1.resources.count : 0) }
        if named > configuration.limits.resourcesPerBatch {
            // RFC 3261 §21.4.11: more than the gateway is willing to process in one request.
            refusals.batchTooLarge += 1
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 413, reasonPhrase: "Too Many Resources", toTag: ids.tag()))]
        }
        guard takePeerQuota(peer) else { return overQuota(request, id: id) }
        let key = takeKey()
        var watch = EnterpriseWatch(watcher: watcher, pending: (request, id, batch, terms), peer: peer)
        watch.single = !BatchCategorySubscription.isBatch(request)
        var actions: [Action] = []
        for action in batch.actions where action.kind == .subscribe {
            for resource in action.resources {
                actions += addOMALeg(to: &watch, key: key, resource: resource.uri, request: request)
            }
        }
        enterpriseWatches[key] = watch
        // Only a piggybacked first notification (or a poll's one answer) is worth waiting for; a
        // watcher without `ms-piggyback-first-notify` is answered at once and notified later.
        let waits = terms.supportsPiggyback || terms.expires == 0
        if !waits || allLegsReported(watch) {
            return actions + answerEnterpriseWatch(key, now: now)
        }
        let wait = TimeAmount.milliseconds(Int64(configuration.subscriptions.piggybackWaitMilliseconds))
        return actions + [.schedule(.firstAnswer(.enterpriseWatch(key)), at: now + wait)]
    }

    /// Starts the OMA leg of one resource a watch names, unless the resource is refused: outside
    /// the OMA domains (or in the enterprise's own, which would loop back through the OMA side),
    /// not the Request-URI of a single subscription, or past the watcher's quota. A refused
    /// resource is remembered for the RLMI answer and nothing is sent for it.
    mutating func addOMALeg(to watch: inout EnterpriseWatch, key: Int, resource: String, request: SIPRequest) -> [Action] {
        guard watch.legs[resource] == nil, !watch.refused.contains(resource) else { return [] }
        guard let uri = try? SIPURI(resource), configuration.admits(uri, on: .oma),
              !watch.single || WatcherIdentity.addressOfRecord(resource) == WatcherIdentity.addressOfRecord(request.uri.description) else {
            refusals.resourceOutsideOMA += 1
            watch.refused.insert(resource)
            return []
        }
        guard takeQuota(watch.watcher.uri) else {
            refusals.watcherQuota += 1
            watch.refused.insert(resource)
            return []
        }
        guard let leg = startOMALeg(watch: key, resource: resource, watcher: watch.watcher, request: request) else {
            releaseQuota(watch.watcher.uri)
            return []
        }
        watch.legs[resource] = leg.key
        return leg.actions
    }

    /// The RLMI instance of a resource the gateway refused to subscribe to.
    static let refusedInstance = RLMIList.Instance(state: .terminated, reason: "rejected", statusCode: 403)

    /// Creates the OMA PIDF subscription for one resource, unless policy blocks or confirms it.
    mutating func startOMALeg(watch: Int, resource: String, watcher: WatcherIdentity,
                              request: SIPRequest) -> (key: Int, actions: [Action])? {
        guard let uri = try? SIPURI(resource), let from = try? request.headers.from, let contact = contacts[.oma] else { return nil }
        let handling = policy(for: resource).subHandling(for: watcher)
        guard handling == .allow || handling == .politeBlock, servedLocally(resource) == nil else { return nil }
        var fromAddress = SIPAddress(uri: from.uri)
        fromAddress.displayName = from.displayName
        let configuration = SubscriberSubscription.Configuration(
            target: uri, from: fromAddress, to: SIPAddress(uri: uri), contact: contact,
            accept: [SIPBodyType.pidf], expires: self.configuration.subscriptions.defaultExpires)
        let key = takeKey()
        let (subscription, actions) = SubscriberSubscription.start(configuration, callID: ids.callID(), localTag: ids.tag())
        dialogs.insert(DialogKey(callID: subscription.callID, localTag: subscription.localTag), .omaLeg(key))
        omaLegs[key] = OMALeg(watch: watch, watcher: watcher.uri, resource: resource, subscription: subscription, categories: nil,
                              handling: handling)
        return (key, legActions(actions, context: .omaLeg(key)))
    }

    /// Whether every OMA leg of a waiting enterprise watcher has reported a first state.
    func allLegsReported(_ watch: EnterpriseWatch) -> Bool {
        watch.legs.values.allSatisfy { omaLegs[$0]?.categories != nil }
    }

    func policy(for presentity: String) -> PresentityPolicy {
        configuration.policies[WatcherIdentity.addressOfRecord(presentity) ?? presentity] ?? configuration.defaultPolicy
    }

    /// What the enterprise watcher sees of one OMA resource: the OMA state mapped to categories,
    /// each category placed in the configured containers that expose it (container 0 when none
    /// is configured; ``ContainerSet/publications(of:wanted:)``), resolved per category for the
    /// watcher ([MS-PRES] §3.2.5.3); or the never-published view for a politely blocked watcher.
    func view(of resource: String, leg: OMALeg?, watcher: WatcherIdentity, categories: [CategoryName]) -> CategoriesDocument {
        let policy = policy(for: resource)
        let published = policy.containers.publications(of: state(of: resource, leg: leg, watcher: watcher)?.categories,
                                                       wanted: categories)
        // `view` is nil only for block/confirm, which never get a leg; the never-published view stands in.
        return PresentityPolicy.view(of: published, uri: resource, containers: policy.containers, watcher: watcher, categories: categories)
    }

    /// The state a watcher may be shown of an OMA resource: what its OMA leg reported, or for a
    /// resource the gateway serves itself (flow 4) what was published to it; nil when nothing is
    /// known or the watcher is politely blocked.
    func state(of resource: String, leg: OMALeg?, watcher: WatcherIdentity) -> CategoriesDocument? {
        if let uri = servedLocally(resource) {
            return policy(for: resource).subHandling(for: watcher) == .allow ? served[uri] : nil
        }
        guard let leg, leg.handling == .allow else { return nil }
        return leg.categories
    }

    private mutating func answerEnterpriseWatch(_ key: Int, now: NIODeadline) -> [Action] {
        if enterpriseWatches[key]?.documentResource != nil { return answerDocumentWatch(key, now: now) }
        guard var watch = enterpriseWatches[key], let pending = watch.pending else { return [] }
        watch.pending = nil
        let legs = omaLegs
        let watcher = watch.watcher
        var sent: SmallMap<String, BodyDigest> = [:]
        let refused = watch.refused
        let resolve: (String, [CategoryName]) -> BatchCategorySubscription.Resolution = { uri, categories in
            if refused.contains(uri) { return .rejected(Self.refusedInstance) }
            let handling = self.policy(for: uri).subHandling(for: watcher)
            switch handling {
            case .block:
                return .rejected(RLMIList.Instance(state: .terminated, reason: "rejected", statusCode: 403))
            case .confirm:
                return .rejected(Self.pendingInstance(uri))
            case .allow, .politeBlock:
                let leg = watch.legs[uri].flatMap { legs[$0] }
                if let leg, Self.reflectsPending(leg) {
                    // The OMA presentity has not authorized this watcher yet: listed `pending`.
                    return .pending(Self.pendingInstance(uri))
                }
                let document = self.view(of: uri, leg: leg, watcher: watcher, categories: categories)
                sent[uri] = BodyDigest(document.serialized())
                return .accepted(document)
            }
        }
        // A single subscription to a pending OMA resource is itself pending (RFC 6665 §4.2.1.3).
        let singlePending = watch.single && !watch.legs.isEmpty
            && watch.legs.values.allSatisfy { omaLegs[$0].map(Self.reflectsPending) ?? false }
        do {
            let (subscription, actions) = try BatchCategorySubscription.accept(
                pending.request, batch: pending.batch, terms: pending.terms, localTag: ids.tag(),
                contact: contacts[.enterprise] ?? SIPAddress(uri: pending.request.uri), boundary: ids.boundary(), now: now,
                status: singlePending ? .pending : .active, watcher: watch.watcher.uri, resolve: resolve)
            watch.lastSent = sent
            var out: [Action] = [.cancel(.firstAnswer(.enterpriseWatch(key)))]
            guard let subscription else {
                // Polling (Expires 0): answered; the OMA legs were one-shot fetches of state.
                forgetEnterpriseWatch(key)
                out += apply(actions, context: .enterpriseWatch(key), now: now, id: pending.id)
                return out + endOMALegs(watch.legs.values, now: now)
            }
            watch.subscription = subscription
            let id = subscription.subscription.dialog.id
            dialogs.insert(DialogKey(callID: id.callID, localTag: id.localTag), .enterpriseWatch(key))
            enterpriseWatches[key] = watch
            return out + apply(actions, context: .enterpriseWatch(key), now: now, id: pending.id)
        } catch {
            forgetEnterpriseWatch(key)
            return [.respond(pending.id, SIPResponse(replyingTo: pending.request, statusCode: 400, reasonPhrase: "\(error.code)", toTag: ids.tag()))]
                + endOMALegs(watch.legs.values, now: now)
        }
    }

    private mutating func refreshEnterpriseWatch(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline) -> [Action] {
        if enterpriseWatches[key]?.document != nil { return refreshDocumentWatch(key, request, id: id, now: now) }
        guard var watch = enterpriseWatches[key], var subscription = watch.subscription else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
        let terms: SubscriptionTerms
        switch SubscriptionTerms.evaluate(request, registry: registry, negotiated: subscription.subscription.terms.bodyType) {
        case .accept(let t): terms = t
        case .reject(let status, let reason, let headers):
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: status, reasonPhrase: reason, headers: headers))]
        }
        let batch: BatchSubscribe
        if request.body.isEmpty {
            batch = BatchSubscribe()
        } else {
            do { batch = try BatchSubscribe(bytes: request.body) } catch {
                return [.respond(id, SIPResponse(replyingTo: request, statusCode: 400, reasonPhrase: "Bad categoryList body"))]
            }
        }
        let named = batch.actions.reduce(0) { $0 + ($1.kind == .subscribe ? $1.resources.count : 0) }
        if named > configuration.limits.resourcesPerBatch {
            refusals.batchTooLarge += 1
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 413, reasonPhrase: "Too Many Resources"))]
        }
        var actions: [Action] = []
        for action in batch.actions {
            for resource in action.resources {
                switch action.kind {
                case .subscribe:
                    actions += addOMALeg(to: &watch, key: key, resource: resource.uri, request: request)
                case .unsubscribe:
                    if let leg = watch.legs.removeValue(forKey: resource.uri) { actions += endOMALegs([leg], now: now) }
                    watch.lastSent[resource.uri] = nil
                    watch.refused.remove(resource.uri)
                default:
                    break
                }
            }
        }
        let legs = omaLegs
        let watcher = watch.watcher
        let current = watch.legs
        let refused = watch.refused
        let core = self
        let updates = subscription.update(request, batch: batch, terms: terms, boundary: ids.boundary(), now: now) { uri, categories in
            if refused.contains(uri) { return .rejected(Self.refusedInstance) }
            let leg = current[uri].flatMap { legs[$0] }
            if let leg, Self.reflectsPending(leg) { return .pending(Self.pendingInstance(uri)) }
            return .accepted(core.view(of: uri, leg: leg, watcher: watcher, categories: categories))
        }
        watch.subscription = subscription
        enterpriseWatches[key] = watch
        return actions + apply(updates, context: .enterpriseWatch(key), now: now, id: id)
    }

    private mutating func omaLegNotify(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline) -> [Action] {
        guard var leg = omaLegs[key] else { return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))] }
        // A PIDF body that does not parse is refused (RFC 3261 §21.4.1) before the dialog takes
        // the NOTIFY, so the watcher's view stays what it was.
        var pidf: PIDFDocument?
        if !request.body.isEmpty, (try? request.headers.contentType)?.mediaType == SIPBodyType.pidf {
            do { pidf = try PIDFDocument(bytes: request.body) } catch {
                return [.respond(id, SIPResponse(replyingTo: request, statusCode: 400, reasonPhrase: "Unreadable PIDF Body"))]
            }
        }
        let actions = leg.subscription.receive(notify: request, now: now, jitter: ids.jitter())
        var out: [Action] = []
        var changed = false
        var ended: String?
        let wasPending = leg.pending
        for action in actions {
            switch action {
            case .respond(let response): out.append(.respond(id, response))
            case .deliver(let notification):
                leg.pending = notification.state.state == .pending
                if leg.pending {
                    // RFC 6665 §4.1.3 / RFC 3856 §6.6.2: pending carries no (authorized) state.
                    if leg.categories == nil { leg.categories = CategoriesDocument(uri: leg.resource) }
                } else if notification.contentType?.mediaType == SIPBodyType.pidf, let pidf {
                    var categories = mapper.categoriesDocument(from: pidf)
                    categories.uri = leg.resource
                    // Kept for the leg's life: without the room the mapper's appends left.
                    categories.categories = categories.categories.exactCapacityCopy()
                    leg.categories = categories
                    changed = true
                } else if leg.categories == nil {
                    // RFC 3856 §6.6.2: a NOTIFY without (readable) body — pending, or nothing known yet.
                    leg.categories = CategoriesDocument(uri: leg.resource)
                    changed = true
                }
            case .ended(let reason): ended = reason
            default: out += legActions([action], context: .omaLeg(key))
            }
        }
        omaLegs[key] = leg
        if leg.closing {
            if ended != nil { removeOMALeg(key) }
            return out
        }
        if let ended { return out + omaLegEnded(key, reason: ended, statusCode: nil, now: now) }
        guard var watch = enterpriseWatches[leg.watch] else { return out }
        if watch.documentResource != nil {
            return out + documentLegChanged(leg.watch, leg: leg, changed: changed || wasPending != leg.pending, now: now)
        }
        guard var subscription = watch.subscription else {
            // Still waiting to answer the watcher: answer once every leg has spoken.
            if allLegsReported(watch) { out += answerEnterpriseWatch(leg.watch, now: now) }
            return out
        }
        if leg.handling == .allow, wasPending != leg.pending {
            let updates = pendingChanged(leg, watch: &watch, subscription: &subscription, now: now)
            watch.subscription = subscription
            enterpriseWatches[leg.watch] = watch
            return out + apply(updates, context: .enterpriseWatch(leg.watch), now: now)
        }
        guard changed, !Self.reflectsPending(leg), let categories = subscription.resources[leg.resource] else { return out }
        let body = view(of: leg.resource, leg: leg, watcher: watch.watcher, categories: categories).serialized()
        let digest = BodyDigest(body)
        guard watch.lastSent[leg.resource] != digest else { return out }
        watch.lastSent[leg.resource] = digest
        let updates = subscription.resourceChanged(leg.resource, serialized: body, now: now)
        watch.subscription = subscription
        enterpriseWatches[leg.watch] = watch
        return out + apply(updates, context: .enterpriseWatch(leg.watch), now: now)
    }

    private mutating func omaLegResponse(_ key: Int, _ response: SIPResponse, request: SIPRequest, now: NIODeadline) -> [Action] {
        guard var leg = omaLegs[key] else { return [] }
        let actions = leg.subscription.receive(response, now: now, jitter: ids.jitter())
        omaLegs[key] = leg
        let ended = actions.contains { if case .ended = $0 { true } else { false } }
        if leg.closing {
            if ended || response.statusCode >= 300 { removeOMALeg(key) }
            return []
        }
        var out = legActions(actions, context: .omaLeg(key))
        if ended { return out + omaLegEnded(key, reason: "rejected", statusCode: response.statusCode, now: now) }
        if response.statusCode >= 300, let end = leg.subscription.expiresAt {
            // A refresh failed (RFC 6665 §4.1.2.2): the subscription holds until it expires.
            out.append(.schedule(.expiry(.omaLeg(key)), at: end))
        }
        return out
    }

    /// An OMA subscription ended (terminated NOTIFY, refused SUBSCRIBE, or expiry without a
    /// successful refresh): the resource leaves the enterprise watcher's dialog with an RLMI
    /// notification ("resources removed from batch dialogs as the seed describes"), or is
    /// rejected in the first answer.
    private mutating func omaLegEnded(_ key: Int, reason: String, statusCode: Int?, now: NIODeadline) -> [Action] {
        guard let leg = omaLegs[key] else { return [] }
        removeOMALeg(key)
        guard var watch = enterpriseWatches[leg.watch] else { return [] }
        watch.legs[leg.resource] = nil
        watch.lastSent[leg.resource] = nil
        if watch.documentResource != nil {
            enterpriseWatches[leg.watch] = watch
            return endDocumentWatch(leg.watch, reason: reason, statusCode: statusCode, now: now)
        }
        guard var subscription = watch.subscription else {
            enterpriseWatches[leg.watch] = watch
            if allLegsReported(watch) { return answerEnterpriseWatch(leg.watch, now: now) }
            return []
        }
        let updates: [NotifierSubscription.Action]
        if watch.single {
            // The dialog is this one resource: it ends with the reason mapped (RFC 6665 §4.2.2),
            // also from `pending` (a watcher the OMA presentity rejected).
            updates = subscription.terminate(reason: Self.enterpriseReason(reason), now: now)
        } else {
            let instance = RLMIList.Instance(state: .terminated, reason: Self.enterpriseReason(reason), statusCode: statusCode)
            updates = subscription.removeResource(leg.resource, instance: instance, boundary: ids.boundary(), now: now)
        }
        watch.subscription = subscription
        enterpriseWatches[leg.watch] = watch
        return apply(updates, context: .enterpriseWatch(leg.watch), now: now)
    }

    /// Unsubscribes OMA legs (Expires 0); each is forgotten on its final NOTIFY, or 64·T1 later.
    mutating func endOMALegs(_ keys: some Sequence<Int>, now: NIODeadline) -> [Action] {
        var out: [Action] = []
        for key in keys {
            guard var leg = omaLegs[key], !leg.closing else { continue }
            let actions = leg.subscription.unsubscribe()
            leg.closing = true
            omaLegs[key] = leg
            if actions.contains(where: { if case .ended = $0 { true } else { false } }) {
                removeOMALeg(key)
                continue
            }
            out += legActions(actions, context: .omaLeg(key)).filter { if case .schedule = $0 { false } else { true } }
            out += [.cancel(.refresh(.omaLeg(key))), .schedule(.cleanup(.omaLeg(key)), at: now + Self.cleanupDelay)]
        }
        return out
    }

    private mutating func removeOMALeg(_ key: Int) {
        guard let leg = omaLegs.removeValue(forKey: key) else { return }
        releaseQuota(leg.watcher)
        dialogs.remove(DialogKey(callID: leg.subscription.callID, localTag: leg.subscription.localTag), .omaLeg(key))
    }

    /// Whether the watcher is shown a leg's OMA `pending` state: only an allowed watcher (a
    /// politely blocked one sees the never-published view, which is never pending).
    static func reflectsPending(_ leg: OMALeg) -> Bool { leg.pending && leg.handling == .allow }

    /// The RLMI instance of a resource whose OMA subscription is pending ([MS-PRES] §2.2.2.4.2:
    /// `id` 0, `state`, `cid` the resource URI).
    static func pendingInstance(_ uri: String) -> RLMIList.Instance {
        RLMIList.Instance(state: .pending, cid: uri)
    }

    /// An OMA leg went pending → active (its first authorized NOTIFY) or active → pending: the
    /// enterprise watcher learns it. A batch dialog gets an RLMI notification listing the resource
    /// `active` with its categories, or `pending` without; a single one is activated (RFC 6665
    /// §4.2.1.3: a NOTIFY with the state). An active single dialog does not go back to pending
    /// (RFC 6665 has no active → pending transition for the notifier): its notifications stop
    /// until the OMA side is active again, then carry the state as usual.
    private mutating func pendingChanged(_ leg: OMALeg, watch: inout EnterpriseWatch, subscription: inout BatchCategorySubscription,
                                         now: NIODeadline) -> [NotifierSubscription.Action] {
        guard let categories = subscription.resources[leg.resource] else { return [] }
        if leg.pending {
            watch.lastSent[leg.resource] = nil
            if watch.single { return [] }
            return subscription.resourceStateChanged(leg.resource, instance: Self.pendingInstance(leg.resource), document: nil,
                                                     boundary: ids.boundary(), now: now)
        }
        let document = view(of: leg.resource, leg: leg, watcher: watch.watcher, categories: categories)
        let body = document.serialized()
        watch.lastSent[leg.resource] = BodyDigest(body)
        if watch.single {
            // Pending since the answer: activated now; active all along: the new state, as usual.
            guard subscription.subscription.status == .pending else {
                return subscription.resourceChanged(leg.resource, serialized: body, now: now)
            }
            return subscription.activate(leg.resource, document: document, now: now)
        }
        return subscription.resourceStateChanged(
            leg.resource, instance: RLMIList.Instance(state: .active, cid: leg.resource), document: document,
            boundary: ids.boundary(), now: now)
    }

    /// 64·T1 (RFC 3261 Timer F): how long an unsubscribed leg waits for its final NOTIFY.
    static let cleanupDelay = TimeAmount.seconds(32)

    /// An OMA termination reason as the enterprise side reads it (RFC 6665 §4.2.2 reasons pass;
    /// a refused subscription is `rejected`).
    static func enterpriseReason(_ reason: String) -> String {
        switch reason {
        case "deactivated", "probation", "rejected", "timeout", "giveup", "noresource", "invariant": reason
        default: "rejected"
        }
    }

    /// Replaces, in `state`, every category `update` names with `update`'s instances of it.
    static func merge(_ state: CategoriesDocument, _ update: CategoriesDocument) -> CategoriesDocument {
        let named = Set(update.categories.map(\.name))
        let kept = { (category: Category) in !named.contains(category.name) }
        // Built once at its exact size: the result is kept for the subscription's life.
        var categories: [Category] = []
        categories.reserveCapacity(state.categories.count(where: kept) + update.categories.count)
        categories.append(contentsOf: state.categories.lazy.filter(kept))
        categories.append(contentsOf: update.categories)
        var result = state
        result.categories = categories
        return result
    }

    // MARK: - Shared

    mutating func takeKey() -> Int {
        nextKey += 1
        return nextKey
    }

    /// A subscriber leg's actions as the core's (answers to NOTIFYs are handled by the caller).
    func legActions(_ actions: [SubscriberSubscription.Action], context: Context) -> [Action] {
        let side: GatewayConfiguration.Side = if case .omaLeg = context { .oma } else { .enterprise }
        var trust: String?
        if case .enterpriseLeg(let key) = context, let leg = enterpriseLegs[key] {
            trust = Self.edgeTrust(network: leg.network, verified: leg.verified)
        }
        return actions.compactMap { action -> Action? in
            switch action {
            case .send(var request):
                if let trust { request.headers.set(.msEdgeProxyMessageTrust, trust) }
                return .send(request, to: side, context: context)
            case .scheduleRefresh(let at): return .schedule(.refresh(context), at: at)
            default: return nil
            }
        }
    }

    /// A notifier's actions as the core's; a removed subscription also ends its leg(s).
    mutating func apply(_ actions: [NotifierSubscription.Action], context: Context, now: NIODeadline,
                                id: ServerRequestID? = nil) -> [Action] {
        let side: GatewayConfiguration.Side = if case .omaWatch = context { .oma } else { .enterprise }
        var out: [Action] = []
        for action in actions {
            switch action {
            case .respond(let response):
                if let id { out.append(.respond(id, response)) }
            case .notify(let request):
                out.append(.send(request, to: side, context: context))
            case .scheduleExpiry(let at):
                out.append(.schedule(.expiry(context), at: at))
            case .remove:
                out.append(.cancel(.expiry(context)))
                switch context {
                case .enterpriseWatch(let key):
                    if let watch = forgetEnterpriseWatch(key) {
                        if let dialog = watch.subscription?.subscription.dialog.id ?? watch.document?.dialog.id {
                            dialogs.remove(DialogKey(callID: dialog.callID, localTag: dialog.localTag), context)
                        }
                        out += endOMALegs(watch.legs.values, now: now)
                    }
                case .omaWatch(let key):
                    if let watch = forgetOMAWatch(key) {
                        if let dialog = watch.subscription?.dialog.id {
                            dialogs.remove(DialogKey(callID: dialog.callID, localTag: dialog.localTag), context)
                        }
                        out += detachOMAWatch(watch, now: now)
                    }
                default:
                    break
                }
            }
        }
        return out
    }
}

/// Where the core gets Call-IDs, tags, multipart boundaries and refresh jitter: random in the
/// runtime, predictable in tests.
public struct IdentifierSource: Sendable {
    private var next: @Sendable (Int) -> String
    private var callIDSource: (@Sendable () -> String)?
    private var counter = 0
    private var jitterSource: @Sendable () -> Double

    /// `token(n)` returns a unique token for the n-th call; `jitter` a number in 0..<1; `callID`
    /// a new Call-ID (by default the next token followed by `@gateway`).
    public init(token: @escaping @Sendable (Int) -> String, jitter: @escaping @Sendable () -> Double,
                callID: (@Sendable () -> String)? = nil) {
        self.next = token
        self.jitterSource = jitter
        self.callIDSource = callID
    }

    /// Random tokens and Call-IDs, and jitter. A tag is 64 random bits in base 36 (at most 13
    /// characters) and a Call-ID 90 random bits in 15 characters: both short enough for a Swift
    /// string to hold them inline instead of in a heap allocation of their own, which every
    /// dialog would keep for hours. 90 bits keep Call-IDs globally unique (RFC 3261 §8.1.1.4
    /// recommends cryptographically random ones): among a billion Call-IDs the chance of any two
    /// being equal is below 10^-9.
    public static func random() -> IdentifierSource {
        IdentifierSource(token: { _ in String(UInt64.random(in: 0...UInt64.max), radix: 36) },
                         jitter: { Double.random(in: 0..<1) }, callID: randomCallID)
    }

    /// 15 characters, 6 random bits each, from the `word` characters of RFC 3261 §25.1.
    @Sendable static func randomCallID() -> String {
        var generator = SystemRandomNumberGenerator()
        var bits: UInt64 = generator.next()
        let more: UInt64 = generator.next()
        return String(unsafeUninitializedCapacity: 15) { buffer in
            for i in 0..<15 {
                if i == 10 { bits = more }
                buffer[i] = callIDAlphabet[Int(bits & 63)]
                bits >>= 6
            }
            return 15
        }
    }

    private static let callIDAlphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-.".utf8)

    mutating func token() -> String {
        counter += 1
        return next(counter)
    }

    mutating func tag() -> String { token() }
    mutating func callID() -> String { callIDSource?() ?? token() + "@gateway" }
    mutating func boundary() -> String { "gw" + token() }
    func jitter() -> Double { jitterSource() }
}
