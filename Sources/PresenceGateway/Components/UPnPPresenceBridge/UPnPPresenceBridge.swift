import Foundation
import GatewayState
import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack
import UPnPDevice

/// Flow 5, the UPnP Presence:1 service's user on the SIP side (docs/flows.md, "Flow 5"): the
/// configured user's own presence, published as that user where the user lives (a PIDF
/// publication toward the OMA presence server, or a SERVICE category publish into the
/// enterprise), the user's decisions on watchers, and the contacts a control point registered
/// for (ISO/IEC 29341-26-16 §5.5.5), each watched with the user as watcher:
///
/// - an OMA contact by a PIDF subscription of the component's own toward the OMA side (RFC 6665,
///   RFC 3856), refreshed, made again when the OMA side ends it `deactivated` or `timeout`
///   (RFC 6665 §4.1.3) and ended when its registration's `Expire` runs out or is 0;
/// - an enterprise contact by an OMA watch of the notifier, attached to an enterprise leg
///   (flow 2's): the enterprise applies its containers and polite blocking to the user, so a
///   politely blocked contact looks like one that never published.
///
/// Its tables are private; the coordinator (`GatewayCore+UPnPPresence`) hands it what it needs
/// from other tables and applies the dialogs it opened or closed (``ComponentOutput``). It keeps
/// itself in the durable store (`UPnPPresenceBridge+Storage`): every change of an entry goes
/// through this type, which notes it.
struct UPnPPresenceBridge: Sendable {
    /// One registration of ``GatewayCore/registerUPnPContact(_:expire:controlPoint:now:)``.
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
        /// The address of the control point that registered it (its limit counts it).
        var controlPoint = ""

        var shown: UPnPContactPresence {
            UPnPContactPresence(uri: contact, state: state, band: band, presence: presence)
        }
    }

    /// The user's own state, kept as one record.
    struct User: Sendable {
        /// The presence as last set (UpdatePresence), entity the user.
        var presence: PIDFDocument?
        /// An OMA user's PIDF publication toward the OMA presence server (RFC 3903).
        var publication: PublicationClient?
        /// An enterprise user's SERVICE category publisher ([MS-PRES] §2.2.2.2).
        var publisher: CategoryPublisher?
        /// The user's decisions on watchers (§5.5.6, §5.5.7) by watcher URI, each until its
        /// `Expire` runs out, as pres-rules of the user's (``rules``).
        var decisions: [String: Decision] = [:]
    }

    /// A decision on a watcher and when it lapses.
    struct Decision: Sendable, Hashable {
        var handling: SubHandling
        var until: NIODeadline
    }

    /// What changed since the durable store last took the changes.
    struct Changes: Sendable {
        var enabled = false
        var keys = ChangedKeys()

        mutating func note(_ key: Int) { if enabled { keys.registrations.insert(key) } }
        mutating func noteUser() { if enabled { keys.user = true } }
    }

    private var user = User() {
        didSet { changes.noteUser() }
    }
    private var changes = Changes()
    private var registrations: [Int: Registration] = [:]
    /// Registration key by contact (address of record).
    private var byContact: [String: Int] = [:]
    /// Registration key by the notifier's OMA watch carrying it.
    private var byWatch: [Int: Int] = [:]
    /// Contacts whose presence changed since the control point last asked (§5.5.4), in order.
    private var updated: [String] = []
    /// The user's watchers as last evented (`Watcher`).
    private var watchers: [UPnPWatcher] = []

    subscript(key: Int) -> Registration? { registrations[key] }

    /// The user's presence as last set.
    var presence: PIDFDocument? { user.presence }

    func key(of contact: String) -> Int? { byContact[contact] }

    var count: Int { registrations.count }

    /// How many registrations `controlPoint` made.
    func count(of controlPoint: String) -> Int {
        registrations.values.count { $0.controlPoint == controlPoint }
    }

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
        changes.note(key)
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
        changes.note(key)
        return body(&registrations.values[index])
    }

    /// Forgets a registration: the dialog its subscription held, and the OMA watch that carried
    /// it (for the caller to detach).
    mutating func remove(_ key: Int, journaled: Bool = true) -> (output: ComponentOutput, watch: Int?) {
        guard let gone = registrations.removeValue(forKey: key) else { return (ComponentOutput(), nil) }
        if journaled { changes.note(key) }
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
        modify(key) { $0.watch = nil }
    }

    /// Registration `key` is carried by the notifier's OMA watch `watch` from now on.
    mutating func attachWatch(_ watch: Int, to key: Int) {
        guard modify(key, { $0.watch = watch }) != nil else { return }
        byWatch[watch] = key
    }

    /// Notes that a contact's presence changed: it is evented and listed by the next
    /// GetPresenceOfContactsUpdate.
    mutating func changed(_ key: Int) -> EventedChange? {
        guard let registration = registrations[key] else { return nil }
        return evented(registration.shown)
    }

    /// Notes that the contact is now shown as `shown` (a registration that is gone: as it
    /// ended), for the next GetPresenceOfContactsUpdate, and its event.
    mutating func evented(_ shown: UPnPContactPresence) -> EventedChange {
        noteUpdated(shown.uri)
        return EventedChange(
            .presenceOfContactsUpdate, Self.text(UPnPContactPresenceList(contacts: [shown]).serialized()))
    }

    /// Lists `contact` for the next GetPresenceOfContactsUpdate, once however often it changed.
    /// Contacts that ended stay listed until asked for, so a control point that never asks and
    /// registers ever new contacts would grow the list: past ``updatesKept`` the oldest go.
    private mutating func noteUpdated(_ contact: String) {
        guard !updated.contains(contact) else { return }
        if updated.count >= Self.updatesKept { updated.removeFirst(updated.count - Self.updatesKept + 1) }
        updated.append(contact)
    }

    /// The most contacts GetPresenceOfContactsUpdate lists (the registrations' cap is 10,000).
    static let updatesKept = 10_000

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

    /// Sets (nil: withdraws) the user's decision on each watcher; returns the timer for the
    /// next one to lapse.
    mutating func decide(_ decided: [(uri: String, decision: Decision?)]) -> [GatewayCore.Action] {
        for (uri, decision) in decided { user.decisions[uri] = decision }
        return decisionTimer
    }

    /// Every decision the user holds, for another shard to hold too.
    var decided: [(uri: String, decision: Decision?)] { user.decisions.map { ($0.key, $0.value) } }

    /// Withdraws the decisions that lapsed by `now`; returns the timer for the next one.
    mutating func lapse(now: NIODeadline) -> [GatewayCore.Action] {
        user.decisions = user.decisions.filter { $0.value.until > now }
        return decisionTimer
    }

    /// The expiry timer of the user's state, at the first decision to lapse (none: cancelled).
    var decisionTimer: [GatewayCore.Action] {
        guard let next = user.decisions.values.map(\.until).min() else { return [.cancel(.expiry(.upnpUser))] }
        return [.schedule(.expiry(.upnpUser), at: next)]
    }

    /// The decisions as pres-rules (RFC 5025 §3.2.1): one rule per watcher, its identity the
    /// watcher's URI (RFC 4745 §7.1); they take precedence over the user's defaults by network.
    var rules: [PresRules.Rule] {
        user.decisions.sorted { $0.key < $1.key }.enumerated().map { index, entry in
            PresRules.Rule(id: "upnp-\(index)", identities: [.one(entry.key)], subHandling: entry.value.handling)
        }
    }

    func decision(of watcher: String) -> SubHandling? { user.decisions[watcher]?.handling }

    var hasDecisions: Bool { !user.decisions.isEmpty }

    /// The user's watchers now: evented as `Watcher` when they differ from what was last.
    mutating func watchersChanged(_ list: [UPnPWatcher]) -> EventedChange? {
        guard list != watchers else { return nil }
        watchers = list
        return EventedChange(.watcher, Self.text(UPnPWatcherList(watchers: list).serialized()))
    }

    var watcherList: [UPnPWatcher] { watchers }

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
        user.presence = document
        let body = document.serialized()
        if let client = user.publication, client.status != .removed, !Self.failed(client.status) {
            return withPublication { $0.modify(body: body, contentType: SIPBodyType.pidf) }
        }
        let address = SIPAddress(uri: target)
        let (client, started) = PublicationClient.start(
            PublicationClient.Configuration(target: target, from: address, to: address, expires: expires),
            body: body, contentType: SIPBodyType.pidf, callID: ids.callID(), localTag: ids.tag())
        user.publication = client
        return Self.actions(started)
    }

    /// An enterprise user's presence: kept, and published as SERVICE `items` with the user's
    /// publisher (`new` when there is none yet). Deletes of what was never published are left
    /// out.
    mutating func publish(_ document: PIDFDocument?, items: [CategoryPublisher.Item], new: CategoryPublisher?)
        -> [GatewayCore.Action]
    {
        if let document { user.presence = document }
        guard var publisher = user.publisher ?? new else { return [] }
        let items = items.filter { !$0.isDelete || publisher.versions[$0.key] != nil }
        guard !items.isEmpty else { return [] }
        let actions = publisher.publish(items)
        user.publisher = publisher
        return Self.serviceActions(actions)
    }

    /// The answer to a SERVICE of the user's publisher (a 409 is published again with the
    /// server's versions, [MS-PRES] §2.2.2.2.3).
    mutating func servicePublished(_ response: SIPResponse) -> [GatewayCore.Action] {
        guard var publisher = user.publisher else { return [] }
        let actions = publisher.receive(response)
        user.publisher = publisher
        return Self.serviceActions(actions)
    }

    var hasPublisher: Bool { user.publisher != nil }

    private static func serviceActions(_ actions: [CategoryPublisher.Action]) -> [GatewayCore.Action] {
        actions.compactMap { action in
            if case .send(let request) = action { return .send(request, to: .enterprise, context: .upnpUser) }
            return nil
        }
    }

    /// Runs `step` on the publication, if there is one.
    mutating func withPublication(_ step: (inout PublicationClient) -> [PublicationClient.Action])
        -> [GatewayCore.Action]
    {
        guard var client = user.publication else { return [] }
        let actions = step(&client)
        user.publication = client
        return Self.actions(actions)
    }

    private static func actions(_ actions: [PublicationClient.Action]) -> [GatewayCore.Action] {
        actions.compactMap { action in
            switch action {
            case .send(let request): .send(request, to: .oma, context: .upnpUser)
            case .scheduleRefresh(let at): .schedule(.refresh(.upnpUser), at: at)
            case .scheduleRetry(let at): .schedule(.retry(.upnpUser), at: at)
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

// MARK: - The durable store (records: `UPnPPresenceBridge+Storage`)

extension UPnPPresenceBridge: DurableComponent {
    struct ChangedKeys: ChangedKeySet {
        var registrations: Set<Int> = []
        var user = false
        var isEmpty: Bool { registrations.isEmpty && !user }
    }

    var journaling: Bool {
        get { changes.enabled }
        set { changes.enabled = newValue }
    }

    mutating func takeChangedKeys() -> ChangedKeys {
        defer { changes = Changes(enabled: changes.enabled) }
        return changes.keys
    }

    func stateChanges(_ keys: ChangedKeys, coding: RecordCoding, encoder: JSONEncoder) -> [StateChange] {
        Registration.changes(keys.registrations.map(String.init), coding: coding, encoder: encoder) {
            Int($0).flatMap { registrations[$0] }
        } + (keys.user ? User.changes([User.key], coding: coding, encoder: encoder) { _ in user } : [])
    }

    func dialogRecordIDs() -> [StateRecordID] {
        registrations.filter { $0.value.subscription != nil }.keys.sorted().map {
            StateRecordID(kind: Registration.recordKind.rawValue, key: String($0))
        }
    }

    /// A registration another node took over is let go: its dialog closed, its timers cancelled
    /// (the OMA watch of an enterprise contact is the notifier's record, let go with it).
    mutating func disown(_ id: StateRecordID) -> ComponentOutput {
        guard id.kind == Registration.recordKind.rawValue, let key = Int(id.key) else { return ComponentOutput() }
        return remove(key, journaled: false).output
    }

    func holds(_ context: GatewayCore.Context) -> Bool? {
        switch context {
        case .upnpContact(let key): registrations[key] != nil
        case .upnpUser: true
        default: nil
        }
    }

    /// Takes the user's state and the registrations back: the publication refreshed at once,
    /// each subscription refreshed in its dialog (made again when it had none, unsubscribed
    /// again when it was being ended), each registration's `Expire` scheduled again.
    mutating func restore(_ entries: GatewayCore.StoredEntries, core: GatewayCore, now: NIODeadline)
        -> ComponentOutput
    {
        var out = ComponentOutput()
        if let stored = entries.entries(User.self).first?.value {
            user = stored
            if user.publication != nil { out.actions.append(.schedule(.refresh(.upnpUser), at: now)) }
            out.actions += decisionTimer
        }
        for (key, registration) in entries.table(Registration.self).sorted(by: { $0.key < $1.key }) {
            registrations[key] = registration
            if let watch = registration.watch { byWatch[watch] = key }
            let context = GatewayCore.Context.upnpContact(key)
            if let subscription = registration.subscription {
                out.dialog(.restored, context, subscription.dialogKey)
            }
            if registration.closing {
                out.actions.append(.schedule(.cleanup(context), at: now))
                continue
            }
            byContact[registration.contact] = key
            out.actions.append(.schedule(.expiry(context), at: registration.until))
            switch registration.subscription?.dialog {
            case .some: out.actions.append(.schedule(.refresh(context), at: now))
            case .none where registration.subscription != nil: out.actions.append(.schedule(.retry(context), at: now))
            case .none: break
            }
        }
        return out
    }
}
