import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack
import UPnPDevice

/// Flow 5, the UPnP Presence:1 service's user on the SIP side (docs/flows.md, "Flow 5"): the
/// configured user's own presence, published as that user toward the OMA presence server, and
/// the contacts a control point registered for (ISO/IEC 29341-26-16 §5.5.5), each watched with
/// the user as watcher:
///
/// - an OMA contact by a PIDF subscription of the component's own toward the OMA side (RFC 6665,
///   RFC 3856), refreshed, made again when the OMA side ends it `deactivated` or `timeout`
///   (RFC 6665 §4.1.3) and ended when its registration's `Expire` runs out or is 0;
/// - an enterprise contact by an OMA watch of the notifier, attached to an enterprise leg as
///   any federated watcher's (flow 2): the enterprise applies its containers and polite blocking
///   to the user, so a politely blocked contact looks like one that never published.
///
/// Its tables are private; the coordinator (`GatewayCore+UPnPPresence`) hands it what it needs
/// from other tables and applies the dialogs it opened or closed (``ComponentOutput``). Its state
/// is not kept in the durable store: a control point registers again after a restart, as UPnP
/// eventing asks of it after the device's `ssdp:alive` with a new BOOTID (UDA 1.1 §1.2.2).
struct UPnPPresenceBridge: Sendable {
    /// One registration of ``GatewayCore/registerUPnPContact(_:expire:now:)``.
    struct Registration: Sendable {
        var contact: String
        /// An OMA contact's PIDF subscription of the component's own toward the OMA side.
        var subscription: SubscriberSubscription?
        /// An enterprise contact's OMA watch of the notifier (flow 2's legs); nil once it ended.
        var watch: Int?
        var state: UPnPRegistrationState = .pending
        var presence: PIDFDocument?
        var band: String?
        /// When the registration's `Expire` runs out.
        var until: NIODeadline
        /// The OMA peer the subscription reached: its NOTIFYs must come from there.
        var peer: DialogPeer?
        /// Unsubscribed (Expires 0), waiting for the final NOTIFY.
        var closing = false

        var shown: UPnPContactPresence {
            UPnPContactPresence(uri: contact, state: state, band: band, presence: presence)
        }
    }

    /// The user's presence as last set (``UPnPPresenceBridge/setPresence(_:)``), entity the user.
    private(set) var presence: PIDFDocument?
    /// The user's PIDF publication toward the OMA presence server (RFC 3903).
    private var publication: PublicationClient?
    private var registrations: [Int: Registration] = [:]
    /// Registration key by contact (address of record).
    private var byContact: [String: Int] = [:]
    /// Registration key by the notifier's OMA watch carrying it.
    private var byWatch: [Int: Int] = [:]
    /// Contacts whose presence changed since the control point last asked (§5.5.4), in order.
    private var updated: [String] = []
    /// The user's decisions on watchers (§5.5.6, §5.5.7) by watcher URI, as pres-rules of the
    /// user's (``rules``).
    private var decisions: [String: SubHandling] = [:]
    /// The user's watchers as last evented (`Watcher`), and their ids in the watcher list.
    private var watchers: (list: [UPnPWatcher], ids: Set<String>) = ([], [])

    subscript(key: Int) -> Registration? { registrations[key] }

    func key(of contact: String) -> Int? { byContact[contact] }

    var count: Int { registrations.count }

    var keys: [Int] { registrations.keys.sorted() }

    /// The registration the notifier's OMA watch `watch` carries, if it is one of this component's.
    func registration(ofWatch watch: Int) -> Int? {
        byWatch.isEmpty ? nil : byWatch[watch]
    }

    /// How many OMA watches carry registrations (they are not watchers, for metrics).
    var watchCount: Int { byWatch.count }

    // MARK: - Registrations

    mutating func open(_ key: Int, _ registration: Registration) -> ComponentOutput {
        registrations[key] = registration
        byContact[registration.contact] = key
        var out = ComponentOutput()
        if let watch = registration.watch { byWatch[watch] = key }
        if let subscription = registration.subscription {
            out.dialog(.opened, .upnpContact(key), subscription.dialogKey)
        }
        return out
    }

    /// Changes registration `key` in place; nil when there is none.
    @discardableResult
    mutating func modify<R>(_ key: Int, _ body: (inout Registration) -> R) -> R? {
        guard let index = registrations.index(forKey: key) else { return nil }
        return body(&registrations.values[index])
    }

    /// Forgets a registration: the dialog its subscription held, and the OMA watch that carried
    /// it (for the caller to detach).
    mutating func remove(_ key: Int) -> (output: ComponentOutput, watch: Int?) {
        guard let gone = registrations.removeValue(forKey: key) else { return (ComponentOutput(), nil) }
        if byContact[gone.contact] == key { byContact[gone.contact] = nil }
        var out = ComponentOutput(actions: [
            .cancel(.expiry(.upnpContact(key))), .cancel(.refresh(.upnpContact(key))),
            .cancel(.cleanup(.upnpContact(key))),
        ])
        if let subscription = gone.subscription {
            out.dialog(.closed, .upnpContact(key), subscription.dialogKey)
        }
        guard let watch = gone.watch else { return (out, nil) }
        byWatch[watch] = nil
        return (out, watch)
    }

    /// The OMA watch carrying registration `key` ended.
    mutating func watchEnded(_ key: Int) {
        guard let watch = registrations[key]?.watch else { return }
        byWatch[watch] = nil
        registrations[key]?.watch = nil
    }

    /// Registration `key` is carried by the notifier's OMA watch `watch` from now on.
    mutating func attachWatch(_ watch: Int, to key: Int) {
        guard registrations[key] != nil else { return }
        registrations[key]?.watch = watch
        byWatch[watch] = key
    }

    /// Notes that a contact's presence changed: it is evented and listed by the next
    /// GetPresenceOfContactsUpdate.
    mutating func changed(_ key: Int) -> EventedChange? {
        guard let registration = registrations[key] else { return nil }
        if !updated.contains(registration.contact) { updated.append(registration.contact) }
        // Bounded by the registrations: a contact is listed once however often it changed.
        return EventedChange(
            .presenceOfContactsUpdate,
            Self.text(UPnPContactPresenceList(contacts: [registration.shown]).serialized()))
    }

    /// The same for a registration that is gone: shown once more as it ended.
    mutating func ended(_ shown: UPnPContactPresence) -> EventedChange {
        if !updated.contains(shown.uri) { updated.append(shown.uri) }
        return EventedChange(
            .presenceOfContactsUpdate, Self.text(UPnPContactPresenceList(contacts: [shown]).serialized()))
    }

    /// §5.5.4: the contacts changed since the last call, each as it is now (an ended one as
    /// terminated), and the list emptied.
    mutating func takeUpdates() -> UPnPContactPresenceList {
        let contacts = updated.map { contact in
            byContact[contact].flatMap { registrations[$0]?.shown }
                ?? UPnPContactPresence(uri: contact, state: .terminated)
        }
        updated.removeAll()
        return UPnPContactPresenceList(contacts: contacts)
    }

    // MARK: - Watchers

    /// Sets (nil: withdraws) the user's decision on each watcher.
    mutating func decide(_ decided: [(uri: String, decision: SubHandling?)]) {
        for (uri, decision) in decided { decisions[uri] = decision }
    }

    /// The decisions as pres-rules (RFC 5025 §3.2.1): one rule per watcher, its identity the
    /// watcher's URI (RFC 4745 §7.1); they take precedence over the user's defaults by network.
    var rules: [PresRules.Rule] {
        decisions.sorted { $0.key < $1.key }.enumerated().map { index, entry in
            PresRules.Rule(id: "upnp-\(index)", identities: [.one(entry.key)], subHandling: entry.value)
        }
    }

    func decision(of watcher: String) -> SubHandling? { decisions[watcher] }

    /// Whether an entry of the watcher list with this id was last evented.
    func showsWatcher(_ id: String) -> Bool { watchers.ids.contains(id) }

    /// The user's watchers now: evented as `Watcher` when they differ from what was last.
    mutating func watchersChanged(_ list: [UPnPWatcher], ids: Set<String>) -> EventedChange? {
        guard list != watchers.list else { return nil }
        watchers = (list, ids)
        return EventedChange(.watcher, Self.text(UPnPWatcherList(watchers: list).serialized()))
    }

    var watcherList: [UPnPWatcher] { watchers.list }

    // MARK: - Subscriptions toward the OMA side

    /// What a NOTIFY or a response did to an OMA contact's subscription.
    struct Received: Sendable {
        var output = ComponentOutput()
        /// The bodies delivered, in order, with the subscription state each came with.
        var delivered: [SubscriberSubscription.Notification] = []
        /// The subscription ended (RFC 6665 §4.1.3), with the reason or status.
        var ended: String?
        /// When it may be made again, if the reason allows it.
        var again: NIODeadline?
    }

    /// A NOTIFY in the dialog of registration `key`'s subscription.
    mutating func receive(
        notify request: SIPRequest, id: GatewayCore.ServerRequestID, key: Int, now: NIODeadline, jitter: Double
    ) -> Received {
        guard let actions = modify(key, { $0.subscription?.receive(notify: request, now: now, jitter: jitter) }) ?? nil
        else {
            let gone = SIPResponse(replyingTo: request, statusCode: 481)
            return Received(output: ComponentOutput(actions: [.respond(id, gone)]))
        }
        return Self.received(actions, key: key, id: id)
    }

    /// The final response to the SUBSCRIBE of registration `key` (RFC 6665 §4.1.2.1, §4.1.2.2).
    mutating func receive(_ response: SIPResponse, key: Int, now: NIODeadline, jitter: Double) -> Received {
        guard let actions = modify(key, { $0.subscription?.receive(response, now: now, jitter: jitter) }) ?? nil,
            let registration = registrations[key]
        else { return Received() }
        var received = Self.received(actions, key: key, id: nil)
        if received.ended == nil, response.statusCode >= 300, let end = registration.subscription?.expiresAt {
            // A refresh failed: the subscription lasts until its granted time, then is made again.
            received.output.actions.append(.schedule(.expiry(.upnpContact(key)), at: min(end, registration.until)))
        }
        return received
    }

    private static func received(_ actions: [SubscriberSubscription.Action], key: Int, id: GatewayCore.ServerRequestID?)
        -> Received
    {
        var received = Received()
        for action in actions {
            switch action {
            case .respond(let response): if let id { received.output.actions.append(.respond(id, response)) }
            case .deliver(let notification): received.delivered.append(notification)
            case .ended(let reason): received.ended = reason
            case .scheduleResubscribe(let at): received.again = at
            case .send, .scheduleRefresh: received.output.actions += Self.actions(actions: [action], key)
            }
        }
        return received
    }

    /// The refresh timer of registration `key`'s subscription (RFC 6665 §4.1.2.2).
    mutating func refresh(_ key: Int, now: NIODeadline) -> [GatewayCore.Action] {
        guard registrations[key]?.closing == false else { return [] }
        let actions = modify(key) { $0.subscription?.refresh(now: now) } ?? nil
        return Self.actions(actions: actions ?? [], key)
    }

    /// Unsubscribes registration `key`'s subscription (Expires 0, RFC 6665 §4.1.2.3); it is
    /// forgotten on the final NOTIFY, or 64·T1 later. nil: it has no dialog to end.
    mutating func unsubscribe(_ key: Int, now: NIODeadline) -> [GatewayCore.Action]? {
        guard let registration = registrations[key], !registration.closing,
            registration.subscription?.dialog != nil
        else { return nil }
        // A new registration for the contact is a new subscription from now on.
        byContact[registration.contact] = nil
        let actions = modify(key) { registration -> [SubscriberSubscription.Action] in
            registration.closing = true
            return registration.subscription?.unsubscribe() ?? []
        }
        return GatewayCore.unsubscribing(Self.actions(actions: actions ?? [], key), .upnpContact(key), now: now)
    }

    /// Makes registration `key`'s subscription again in a new dialog (it ended `deactivated`,
    /// `timeout`, or its granted time ran out).
    mutating func restart(_ key: Int, ids: inout IdentifierSource) -> ComponentOutput {
        guard let registration = registrations[key], !registration.closing, let old = registration.subscription
        else { return ComponentOutput() }
        let (subscription, actions) = SubscriberSubscription.start(
            old.configuration, callID: ids.callID(), localTag: ids.tag())
        modify(key) {
            $0.subscription = subscription
            $0.peer = nil
        }
        var out = ComponentOutput(actions: [.cancel(.refresh(.upnpContact(key)))] + Self.actions(actions: actions, key))
        out.dialog(.closed, .upnpContact(key), old.dialogKey)
        out.dialog(.opened, .upnpContact(key), subscription.dialogKey)
        return out
    }

    /// The subscription of registration `key` went out again with credentials (RFC 3261 §22.2).
    mutating func resent(_ request: SIPRequest, key: Int) -> Bool {
        (modify(key) { $0.subscription?.resent(request) } ?? nil) ?? false
    }

    static func actions(actions: [SubscriberSubscription.Action], _ key: Int) -> [GatewayCore.Action] {
        GatewayCore.subscriberActions(actions, context: .upnpContact(key), to: .oma)
    }

    // MARK: - The user's own presence

    /// The user's new presence, kept and published (RFC 3903 §4.2 initial, §4.4 modify).
    mutating func publish(
        _ document: PIDFDocument, target: SIPURI, expires: UInt32, ids: inout IdentifierSource
    ) -> [GatewayCore.Action] {
        presence = document
        let body = document.serialized()
        if var client = publication, client.status != .removed, !Self.failed(client.status) {
            defer { publication = client }
            return Self.actions(client.modify(body: body, contentType: SIPBodyType.pidf))
        }
        let address = SIPAddress(uri: target)
        let (client, started) = PublicationClient.start(
            PublicationClient.Configuration(target: target, from: address, to: address, expires: expires),
            body: body, contentType: SIPBodyType.pidf, callID: ids.callID(), localTag: ids.tag())
        publication = client
        return Self.actions(started)
    }

    /// Runs `step` on the publication, if there is one.
    mutating func withPublication(_ step: (inout PublicationClient) -> [PublicationClient.Action])
        -> [GatewayCore.Action]
    {
        guard var client = publication else { return [] }
        defer { publication = client }
        return Self.actions(step(&client))
    }

    private static func actions(_ actions: [PublicationClient.Action]) -> [GatewayCore.Action] {
        actions.compactMap { action in
            switch action {
            case .send(let request): .send(request, to: .oma, context: .upnpPublication)
            case .scheduleRefresh(let at): .schedule(.refresh(.upnpPublication), at: at)
            case .scheduleRetry(let at): .schedule(.retry(.upnpPublication), at: at)
            case .published, .removed, .failed: nil
            }
        }
    }

    private static func failed(_ status: PublicationClient.Status) -> Bool {
        if case .failed = status { return true }
        return false
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }
}
