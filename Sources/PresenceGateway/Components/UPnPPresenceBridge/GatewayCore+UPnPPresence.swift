import MSPresenceEvents
public import NIOCore
import PresenceDocuments
import PresenceMapping
import SIPMessages
import SIPStack
public import UPnPDevice

/// Flow 5 as the coordinator composes it (docs/flows.md, "Flow 5"): the actions of the UPnP
/// Presence:1 service (ISO/IEC 29341-26-16 §5.5) for the configured user, the
/// ``UPnPPresenceBridge`` keeping the user's state and the registrations, and what crosses into
/// flows 1 and 2: an enterprise contact's OMA watch and leg, what an enterprise user may see of
/// an OMA contact, the user's watchers and the decisions on them. The payloads are read and
/// written by the component (`UPnPPresenceBridge+Documents`).
extension GatewayCore {
    /// The configured user, and the side their presence lives on.
    private var upnpUser: (uri: SIPURI, aor: String, side: GatewayConfiguration.Side)? {
        guard let text = configuration.upnp?.user, let uri = try? SIPURI(text),
            let aor = WatcherIdentity.addressOfRecord(text), let side = configuration.servingSide(of: uri.host)
        else { return nil }
        return (uri, aor, side)
    }

    /// The user as the watcher of the contacts: an enterprise user as one of the enterprise's
    /// own, an OMA user as a federated watcher ([MS-PRES] §3.4.5.1.3).
    private var upnpWatcher: WatcherIdentity? {
        guard let user = upnpUser else { return nil }
        return WatcherIdentity(uri: user.aor, network: user.side == .enterprise ? .sameEnterprise : .federated)
    }

    // MARK: - Actions (§5.5)

    /// GetPresence (§5.5.1) (``UPnPPresenceBridge/presenceText``).
    public func upnpPresence() -> String { upnp.presenceText }

    /// UpdatePresence (§5.5.2): `payload`, a PIDF document (RFC 3863) whose entity becomes the
    /// user, is published as the user's where the user lives: an OMA user's to the OMA presence
    /// server (RFC 3903), an enterprise user's into the enterprise as a SERVICE category publish
    /// (``upnpServiceItems(_:)``); and evented as `UserPresenceInfo`.
    public mutating func updateUPnPPresence(_ payload: String, now: NIODeadline) throws(UPnPFault) -> [Action] {
        guard let user = upnpUser else { throw UPnPFault.actionFailed }
        var document = try UPnPPresenceBridge.pidf(payload)
        document.entity = user.aor
        var out: [Action]
        switch user.side {
        case .oma:
            out = upnp.publish(
                document, target: user.uri, expires: UInt32(configuration.subscriptions.defaultExpires), ids: &ids)
        case .enterprise:
            let categories = mapper.categoriesDocument(from: document)
            let new = upnp.hasPublisher ? nil : upnpPublisher(user.uri)
            out = upnp.publish(document, items: upnpServiceItems(categories), new: new)
        }
        out.append(.upnpEvent(EventedChange(.userPresenceInfo, upnpPresence())))
        return out
    }

    /// An enterprise user's presence as SERVICE items ([MS-PRES] §2.2.2.2): the control point
    /// is one more endpoint of the user's, so its state is a `machineState` of that endpoint
    /// and its note, as flow 4 publishes a linked OMA device (docs/flows.md, "What the gateway
    /// publishes for a linked identity"); nil state withdraws them.
    private func upnpServiceItems(_ state: CategoriesDocument?) -> [CategoryPublisher.Item] {
        guard let user = configuration.upnp?.user else { return [] }
        return LinkedIdentityPublisher.serviceItems(for: user, state: state)
    }

    /// A new SERVICE publisher for the user, from an endpoint whose Contact carries the
    /// endpoint's `+sip.instance` (§3.2.5.5).
    private mutating func upnpPublisher(_ user: SIPURI) -> CategoryPublisher {
        let endpointID = LinkedIdentityPublisher.endpointID(for: user.description)
        let contact = contacts[.enterprise].map { LinkedIdentityPublisher.withInstance($0, endpointID) }
        return CategoryPublisher(
            CategoryPublisher.Configuration(publisher: SIPAddress(uri: user), contact: contact), callID: ids.callID(),
            localTag: ids.tag())
    }

    /// GetContactPresence (§5.5.3) (``UPnPPresenceBridge/contactPresence(_:)``).
    public func upnpContactPresence(_ targetContact: String) throws(UPnPFault) -> String {
        try upnp.contactPresence(targetContact)
    }

    /// GetPresenceOfContactsUpdate (§5.5.4) (``UPnPPresenceBridge/takeUpdatesText()``).
    public mutating func takeUPnPContactsUpdate() -> String { upnp.takeUpdatesText() }

    /// The evented variables as they are now (``UPnPPresenceBridge/eventedValues``).
    public func upnpEventedValues() -> [EventedVariable: String] { upnp.eventedValues }

    /// RegisterForContactPresence (§5.5.5): watches the contact `contactID` names for `expire`
    /// seconds with the user as watcher (0 ends the registration), through the gateway's
    /// routing: an OMA contact by a PIDF subscription, an enterprise contact through flow 2's
    /// legs. `controlPoint` (the address the request came from) may hold at most
    /// `max-registrations-per-control-point` of the device's `max-registrations`. Answers a
    /// RegistrationResult document.
    public mutating func registerUPnPContact(
        _ contactID: String, expire: Int32, controlPoint: String = "", now: NIODeadline
    ) throws(UPnPFault) -> (result: String, actions: [Action]) {
        let contact = try UPnPPresenceBridge.contact(contactID)
        guard expire >= 0 else { throw UPnPFault.argumentValueOutOfRange }
        guard let contactURI = try? SIPURI(contact), let side = configuration.servingSide(of: contactURI.host) else {
            throw UPnPFault(
                code: 600, description: "Argument Value Invalid: no domain of the gateway serves \(contact)")
        }
        let until = now + .seconds(Int64(expire))
        if let key = upnp.key(of: contact) {
            if expire == 0 {
                return (UPnPPresenceBridge.registration(contact, .ended), endUPnPRegistration(key, now: now))
            }
            upnp.modify(key) { $0.until = until }
            return (
                UPnPPresenceBridge.registration(contact, .subscribed, expires: expire),
                [.schedule(.expiry(.upnpContact(key)), at: until)]
            )
        }
        guard expire > 0 else { return (UPnPPresenceBridge.registration(contact, .ended), []) }
        // An enterprise user is an enterprise watcher of an OMA contact (flow 1): blocked, it is
        // refused as flow 1 refuses one (403, RFC 5025 §3.2.1).
        if side == .oma, let watcher = upnpWatcher, watcher.network == .sameEnterprise,
            policy(for: contact).subHandling(for: watcher) == .block
        {
            return (UPnPPresenceBridge.registration(contact, .refused, status: 403), [])
        }
        try admitUPnPRegistration(from: controlPoint)
        let registration = UPnPPresenceBridge.Registration(contact: contact, until: until, controlPoint: controlPoint)
        let actions = try openUPnPRegistration(registration, uri: contactURI, on: side, now: now)
        return (UPnPPresenceBridge.registration(contact, .subscribed, expires: expire), actions)
    }

    /// Refuses a new registration past the device's cap or the control point's (UPnP 501),
    /// counted among the refusals.
    private mutating func admitUPnPRegistration(from controlPoint: String) throws(UPnPFault) {
        guard let limits = configuration.upnp else { throw UPnPFault.actionFailed }
        if let refusal = upnp.refusal(from: controlPoint, limits: limits) {
            quotas.refusals.upnpRegistrations += 1
            throw refusal
        }
    }

    /// A new registration's watch of its contact: an OMA contact's PIDF SUBSCRIBE, or an
    /// enterprise contact's OMA watch attached to a leg.
    private mutating func openUPnPRegistration(
        _ registration: UPnPPresenceBridge.Registration, uri contactURI: SIPURI, on side: GatewayConfiguration.Side,
        now: NIODeadline
    ) throws(UPnPFault) -> [Action] {
        guard let user = upnpUser, let watcher = upnpWatcher else { throw UPnPFault.actionFailed }
        let key = takeKey()
        var registration = registration
        let out: [Action] = [.schedule(.expiry(.upnpContact(key)), at: registration.until)]
        switch side {
        case .oma:
            let configuration = SubscriberSubscription.Configuration(
                target: contactURI, from: SIPAddress(uri: user.uri), to: SIPAddress(uri: contactURI),
                contact: contacts[.oma] ?? SIPAddress(uri: user.uri), accept: [SIPBodyType.pidf],
                expires: UInt32(self.configuration.subscriptions.defaultExpires))
            let (subscription, actions) = SubscriberSubscription.start(
                configuration, callID: ids.callID(), localTag: ids.tag())
            registration.subscription = subscription
            return out + apply(upnp.open(key, registration)) + UPnPPresenceBridge.actions(actions: actions, key)
        case .enterprise:
            let watch = takeKey()
            registration.watch = watch
            notifier.open(watch, OMAWatch(watcher: watcher, resource: registration.contact))
            return out + apply(upnp.open(key, registration)) + attach(watch, now: now)
        }
    }

    // MARK: - Watchers (§5.5.6, §5.5.7)

    /// AuthorizePresenceProactive (§5.5.7): each watcher of `watcherList` (a WatcherList
    /// document) gets the user's decision (`decision`, default allow) for `expire` seconds; 0
    /// withdraws the decisions. `userPresenceInfo` must be a PIDF document; what a watcher sees
    /// is what the user's containers give it.
    public mutating func authorizeUPnPWatchers(
        _ watcherList: String, expire: Int32, userPresenceInfo: String, now: NIODeadline
    ) throws(UPnPFault) -> [Action] {
        let list: UPnPWatcherList
        do {
            list = try UPnPWatcherList(bytes: Array(watcherList.utf8))
        } catch {
            throw UPnPFault(code: 600, description: "Argument Value Invalid: \(error)")
        }
        _ = try UPnPPresenceBridge.pidf(userPresenceInfo)
        guard expire >= 0 else { throw UPnPFault.argumentValueOutOfRange }
        let until = now + .seconds(Int64(expire))
        let decided = list.watchers.map { watcher -> (uri: String, decision: UPnPPresenceBridge.Decision?) in
            let handling: SubHandling =
                switch watcher.decision {
                case .block: .block
                case .politeBlock: .politeBlock
                case .allow, nil: .allow
                }
            let decision = expire == 0 ? nil : UPnPPresenceBridge.Decision(handling: handling, until: until)
            return (WatcherIdentity.addressOfRecord(watcher.uri) ?? watcher.uri, decision)
        }
        return try decideUPnPWatchers(decided, now: now)
    }

    /// AuthorizePresenceReactive (§5.5.6): the watcher `contactID` names is allowed (a watcher
    /// waiting for the user, RFC 5025 `confirm`, becomes active); `expire` 0 withdraws it.
    public mutating func authorizeUPnPWatcher(
        _ contactID: String, expire: Int32, userPresenceInfo: String, now: NIODeadline
    ) throws(UPnPFault) -> [Action] {
        let watcher = try UPnPPresenceBridge.contact(contactID)
        _ = try UPnPPresenceBridge.pidf(userPresenceInfo)
        guard expire >= 0 else { throw UPnPFault.argumentValueOutOfRange }
        let decision = UPnPPresenceBridge.Decision(handling: .allow, until: now + .seconds(Int64(expire)))
        return try decideUPnPWatchers([(watcher, expire == 0 ? nil : decision)], now: now)
    }

    /// Sets or withdraws the user's decisions on watchers (an OMA user's only).
    private mutating func decideUPnPWatchers(
        _ decided: [(uri: String, decision: UPnPPresenceBridge.Decision?)], now: NIODeadline
    ) throws(UPnPFault) -> [Action] {
        // An enterprise user's watchers are the enterprise's to decide (its containers,
        // [MS-PRES] §3.2.5.3), not the gateway's.
        guard upnpUser?.side == .oma else {
            throw UPnPFault(
                code: 602, description: "Optional Action Not Implemented: the enterprise decides its users' watchers")
        }
        return decisionsChanged(now: now) { $0.decide(decided) }
    }

    /// With several shards: the user's decisions as `first` (the first shard's core, which
    /// restored or took them) holds them, held here too, to decide this shard's watchers of the
    /// user (docs/shards.md, "Across shards"). This shard journals none of the user's state.
    public mutating func followUPnPDecisions(of first: GatewayCore, now: NIODeadline) -> [Action] {
        let decided = first.upnp.decided
        guard !decided.isEmpty else { return [] }
        return decisionsChanged(now: now) { $0.decide(decided) }
    }

    /// The user's state's expiry timer: the decisions whose `Expire` ran out are withdrawn.
    mutating func lapseUPnPDecisions(now: NIODeadline) -> [Action] {
        decisionsChanged(now: now) { $0.lapse(now: now) }
    }

    /// Changes the user's decisions with `change`; then the legs of the user's enterprise
    /// watchers are resolved again under the new policy (as for a new pres-rules document), the
    /// watchers waiting for a decision answered, and the watcher information told.
    private mutating func decisionsChanged(now: NIODeadline, _ change: (inout UPnPPresenceBridge) -> [Action])
        -> [Action]
    {
        guard let user = configuration.upnp?.user else { return [] }
        let before = policy(for: user)
        let timer = change(&upnp)
        return timer + resolveLegsAgain(legs(of: user), previous: { _ in before }, now: now)
            + resolveAwaitingAuthorization(now: now) + watcherInfoChanges(now: now, everyWatch: true)
    }

    /// Whether the user's watcher list is followed (the watches are reported to the roster).
    var upnpFollowsWatchers: Bool { configuration.upnp != nil }

    /// After a step whose watchers' reports changed (presentity → their ids): the user's
    /// watchers evented when the user's are among them (or a linked identity's, whose OMA
    /// watchers are listed too), or `everyWatch`.
    mutating func upnpWatchersChanged(_ changed: [String: Set<String>], everyWatch: Bool) -> [Action] {
        guard let user = configuration.upnp?.user else { return [] }
        let identity = Self.linkedEnterpriseIdentity(of: user, in: configuration)
        guard everyWatch || changed[user] != nil || identity.map({ changed[$0] != nil }) == true else { return [] }
        let list = watcherInfo.list(of: user, watcherPolicy).map { entry in
            UPnPWatcher(
                uri: entry.uri, status: UPnPWatcher.Status(rawValue: entry.status.rawValue),
                decision: upnp.decision(of: entry.uri).map(Self.upnpDecision))
        }
        return upnp.watchersChanged(list).map { [.upnpEvent($0)] } ?? []
    }

    private static func upnpDecision(_ decision: SubHandling) -> UPnPWatcher.Decision {
        switch decision {
        case .block, .confirm: .block
        case .politeBlock: .politeBlock
        case .allow: .allow
        }
    }

    // MARK: - Registrations ending

    /// Ends registration `key`: its subscription unsubscribed, or its OMA watch detached from
    /// its leg; the contact is evented once more, terminated.
    mutating func endUPnPRegistration(_ key: Int, now: NIODeadline) -> [Action] {
        guard let registration = upnp[key] else { return [] }
        var out: [Action] = []
        var shown = registration.shown
        shown.state = .terminated
        shown.presence = nil
        shown.band = nil
        if let unsubscribe = upnp.unsubscribe(key, now: now) {
            out += unsubscribe
            upnp.modify(key) { $0.state = .terminated }
            out.append(.cancel(.expiry(.upnpContact(key))))
        } else {
            out += removeUPnPRegistration(key, now: now)
        }
        out.append(.upnpEvent(upnp.evented(shown)))
        return out
    }

    /// Forgets registration `key`, detaching its OMA watch from its leg.
    mutating func removeUPnPRegistration(_ key: Int, now: NIODeadline) -> [Action] {
        let (output, watch) = upnp.remove(key)
        var out = apply(output)
        if let watch, let gone = forgetOMAWatch(watch) { out += detachOMAWatch(gone, now: now) }
        return out
    }

    // MARK: - SIP side

    /// A NOTIFY of an OMA contact's subscription: its PIDF (none: nothing published) becomes
    /// the contact's presence, evented when it changed.
    mutating func upnpContactNotify(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline)
        -> [Action]
    {
        var presence: PIDFDocument?
        if !request.body.isEmpty {
            do {
                presence = try PIDFDocument(bytes: request.body)
            } catch {
                let warning = "399 \(contacts[.oma]?.uri.host ?? "presence-gateway") \"\(error)\""
                return [.respond(id, SIPResponse(replyingTo: request, statusCode: 400, headers: [(.warning, warning)]))]
            }
        }
        let received = upnp.receive(notify: request, id: id, key: key, now: now, jitter: ids.jitter())
        return apply(received.output) + upnpReceived(key, received, presence: presence, now: now)
    }

    mutating func upnpContactResponse(_ key: Int, _ response: SIPResponse, now: NIODeadline) -> [Action] {
        if upnp[key]?.closing == true {
            return response.statusCode >= 300 ? removeUPnPRegistration(key, now: now) : []
        }
        let received = upnp.receive(response, key: key, now: now, jitter: ids.jitter())
        let out = apply(received.output)
        if received.ended != nil, !(200..<300).contains(response.statusCode) {
            // Gone at a refresh: made again when the subscription says it may be; refused
            // (RFC 6665 §4.1.2.1): the registration ends, the contact shown terminated.
            if let again = received.again { return out + [.schedule(.retry(.upnpContact(key)), at: again)] }
            return out + endUPnPRegistration(key, now: now)
        }
        return out + upnpReceived(key, received, presence: nil, now: now)
    }

    /// What a NOTIFY or response delivered: each notification's state and presence shown, and an
    /// ended subscription made again or the registration ended.
    private mutating func upnpReceived(
        _ key: Int, _ received: UPnPPresenceBridge.Received, presence: PIDFDocument?, now: NIODeadline
    ) -> [Action] {
        var out: [Action] = []
        for notification in received.delivered where !notification.piggybacked {
            let state: UPnPRegistrationState =
                switch notification.state.state {
                case .active: .active
                case .pending: .pending
                default: .terminated
                }
            out += upnpContactNotified(key, state: state, presence: presence)
        }
        guard received.ended != nil else { return out }
        if upnp[key]?.closing == true { return out + removeUPnPRegistration(key, now: now) }
        // Only a reason RFC 6665 §4.1.3 lets a subscriber retry after gives a time to retry at.
        if let again = received.again { return out + [.schedule(.retry(.upnpContact(key)), at: again)] }
        return out + removeUPnPRegistration(key, now: now)
    }

    /// An OMA contact's NOTIFY in `state` with `presence` (nil: no body). An OMA user sees it as
    /// the OMA presence server sent it; an enterprise user as flow 1 shows an enterprise watcher
    /// (``upnpShown(_:of:to:)``), or pending while the contact's owner has not decided.
    private mutating func upnpContactNotified(_ key: Int, state: UPnPRegistrationState, presence: PIDFDocument?)
        -> [Action]
    {
        guard state == .active else { return showUPnPContact(key, state: state, presence: nil) }
        guard let watcher = upnpWatcher, watcher.network == .sameEnterprise, let contact = upnp[key]?.contact else {
            return showUPnPContact(key, state: state, presence: presence)
        }
        guard let shown = upnpShown(presence, of: contact, to: watcher) else {
            return showUPnPContact(key, state: .pending, presence: nil)
        }
        return showUPnPContact(key, state: .active, presence: shown)
    }

    /// What an enterprise user may see of an OMA contact's `pidf` (nil: nothing published): the
    /// contact's policy for the user as for any enterprise watcher of flow 1, its pres-rules'
    /// transformations (RFC 5025 §3.3), its containers ([MS-PRES] §3.2.5.3), polite blocking
    /// as the never-published view; mapped back to PIDF with the same tables. So a politely
    /// blocked contact and one that never published look the same. nil while the user may not
    /// see the contact (block, confirm).
    private func upnpShown(_ pidf: PIDFDocument?, of contact: String, to watcher: WatcherIdentity) -> PIDFDocument? {
        let policy = policy(for: contact)
        var state: CategoriesDocument?
        switch policy.subHandling(for: watcher) {
        case .block, .confirm: return nil
        case .politeBlock: state = nil
        case .allow:
            if var shown = pidf {
                if !policy.rules.rules.isEmpty, let permissions = policy.rules.permissions(for: watcher) {
                    shown = permissions.apply(to: shown)
                }
                state = mapper.categoriesDocument(from: shown)
            }
        }
        let published = policy.containers.publications(of: state?.categories, wanted: Self.bridgedCategories)
        let view = PresentityPolicy.view(
            of: published, uri: contact, containers: policy.containers, watcher: watcher,
            categories: Self.bridgedCategories)
        var document = mapper.pidfDocument(
            from: view, dialect: .rfc, rpidExtensions: configuration.oma.rpidExtensions)
        document.entity = contact
        return document
    }

    /// The contact of registration `key` is now in `state` with `presence`: evented when what the
    /// control point sees changed.
    private mutating func showUPnPContact(_ key: Int, state: UPnPRegistrationState, presence: PIDFDocument?)
        -> [Action]
    {
        guard let registration = upnp[key] else { return [] }
        var shownPresence = presence
        shownPresence?.entity = registration.contact
        let band = shownPresence.flatMap { mapper.upnpBand(of: $0) }
        guard registration.state != state || registration.presence != shownPresence || registration.band != band
        else { return [] }
        upnp.modify(key) {
            $0.state = state
            $0.presence = shownPresence
            $0.band = band
        }
        return upnp.changed(key).map { [.upnpEvent($0)] } ?? []
    }

    /// New enterprise state for an enterprise contact's OMA watch (flow 2's leg): the categories
    /// the enterprise showed the user, as PIDF with the same tables as flow 2's watchers get.
    mutating func upnpContactCategories(_ key: Int, _ state: CategoriesDocument) -> [Action] {
        let pidf = mapper.pidfDocument(from: state, dialect: .rfc, rpidExtensions: configuration.oma.rpidExtensions)
        return showUPnPContact(key, state: .active, presence: pidf)
    }

    /// An enterprise contact's OMA watch ended (`reason`): made again a minute later after a
    /// reason RFC 6665 §4.1.3 lets a subscriber retry after, else the registration ends.
    mutating func upnpContactWatchEnded(_ key: Int, watch: Int, reason: String, now: NIODeadline) -> [Action] {
        upnp.watchEnded(key)
        _ = forgetOMAWatch(watch)
        guard SubscriberSubscription.retryDelay(reason: reason, retryAfter: nil) != nil else {
            return endUPnPRegistration(key, now: now)
        }
        return showUPnPContact(key, state: .pending, presence: nil)
            + [.schedule(.retry(.upnpContact(key)), at: now + LinkedIdentityPublisher.retryDelay)]
    }

    /// A registration's retry timer: its subscription or OMA watch made again.
    mutating func retryUPnPContact(_ key: Int, now: NIODeadline) -> [Action] {
        guard let registration = upnp[key], !registration.closing else { return [] }
        if registration.subscription != nil { return apply(upnp.restart(key, ids: &ids)) }
        guard registration.watch == nil, let watcher = upnpWatcher else { return [] }
        let watch = takeKey()
        notifier.open(watch, OMAWatch(watcher: watcher, resource: registration.contact))
        upnp.attachWatch(watch, to: key)
        return attach(watch, now: now)
    }

    /// A registration's expiry timer: its `Expire` ran out, or its subscription's granted time
    /// did after a failed refresh (made again).
    mutating func expireUPnPContact(_ key: Int, now: NIODeadline) -> [Action] {
        guard let registration = upnp[key], !registration.closing else { return [] }
        if registration.until <= now { return endUPnPRegistration(key, now: now) }
        guard let end = registration.subscription?.expiresAt, end <= now else { return [] }
        return apply(upnp.restart(key, ids: &ids))
    }

    // MARK: - The user's publication

    mutating func upnpPublished(_ response: SIPResponse, now: NIODeadline) -> [Action] {
        if upnp.hasPublisher { return upnp.servicePublished(response) }
        let jitter = ids.jitter()
        return upnp.withPublication { $0.receive(response, now: now, jitter: jitter) }
    }

    /// Shutdown: the user's publication removed (RFC 3903 §4.5) and every registration's
    /// subscription or OMA watch ended.
    mutating func endUPnP(now: NIODeadline) -> [Action] {
        var out =
            upnp.hasPublisher
            ? upnp.publish(nil, items: upnpServiceItems(nil), new: nil) : upnp.withPublication { $0.remove() }
        for key in upnp.keys { out += endUPnPRegistration(key, now: now) }
        return out
    }
}
