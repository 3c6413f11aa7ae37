import Foundation
import GatewayState
import NIOCore
import XMLBridge

/// Flow 1, enterprise watcher → OMA presentity: the enterprise watchers' subscriptions the
/// gateway answers (category, PIDF and msrtc.pidf, [MS-PRES] §3.4.5.1, §4.10, §4.11), the PIDF
/// legs it keeps toward the OMA side for them, and the list subscriptions toward OMA resource
/// list servers that carry those legs (RFC 4662) with the rls-services documents holding them
/// (RFC 4826). Its own subscriptions toward the OMA side are made, refreshed and ended in
/// `+Subscriptions`, its entries restored here; the rest of its flow logic is in this folder,
/// `GatewayCore+EnterpriseWatchers`, `+EnterpriseDocumentWatchers`, `+OMAResourceLists` and
/// `+EnterpriseWatcherRestore`. Quotas and the dialog index are the coordinator's, changed
/// from the outputs the bridge returns.
struct EnterpriseWatcherBridge: Sendable {
    // Dense tables, not dictionaries: a dictionary pays each value's bytes for every bucket
    // (1.3–2.7 times the count), see `DenseTable`. Each remembers what changed for the durable
    // store (``JournaledTable``).
    /// The enterprise watchers' subscriptions: read through ``subscript(watch:)``, written only
    /// here (``openWatch(_:_:)``, ``modifyWatch(_:_:)``, ``answerWatch(_:_:)``, ``closeWatch(_:)``).
    private var watches = JournaledTable<GatewayCore.EnterpriseWatch>()
    /// The PIDF legs toward the OMA side: read through ``subscript(leg:)``, written only here
    /// (``openLeg(_:_:)``, ``modifyLeg(_:_:)``, ``removeLeg(_:)``).
    private var legs = JournaledTable<GatewayCore.OMALeg>()
    /// List subscriptions toward OMA resource list servers, by key: read through
    /// ``subscript(list:)``, written only here (``openList(_:_:)``, ``modifyList(_:_:)``,
    /// ``removeList(_:)``).
    private var lists = JournaledTable<GatewayCore.OMAList>()
    /// The rls-services documents holding them, by document URI: written only here (a list is
    /// filed in its document when it is opened or restored; see "The rls-services documents").
    private var listDocuments: [String: GatewayCore.ListDocument] = [:]
    /// OMA domains whose RLS or XCAP server refused a list, until when lists are not tried there
    /// (``refuseLists(in:until:)``, ``refusesLists(in:now:)``).
    private var rlsRefused: [String: NIODeadline] = [:]
    /// The sphere each OMA presentity whose pres-rules have sphere conditions last published (RFC
    /// 4480 §3.12), by address of record: ``GatewayCore/policy(for:)`` decides those conditions
    /// with it. Written only here (``noteSphere(_:of:)``).
    private(set) var spheres: [String: String] = [:]
    /// The watches to report to the watchers' roster (``takeWatcherReports()``).
    private var reporting = WatcherReporting()

    // MARK: - Reading the tables

    subscript(watch key: Int) -> GatewayCore.EnterpriseWatch? { watches[key] }
    subscript(leg key: Int) -> GatewayCore.OMALeg? { legs[key] }
    subscript(list key: Int) -> GatewayCore.OMAList? { lists[key] }
    var watchKeys: [Int] { watches.keys }
    var legKeys: [Int] { legs.keys }
    var listKeys: [Int] { lists.keys }
    var watchCount: Int { watches.count }
    var legCount: Int { legs.count }

    // MARK: - Enterprise watches

    /// Opens watch `key` (the caller indexes its dialog once it is answered).
    mutating func openWatch(_ key: Int, _ watch: GatewayCore.EnterpriseWatch) {
        watches[key] = watch
        reporting.changed(key)
    }

    /// Changes watch `key` in place (its dialog is given by ``answerWatch(_:_:)``); nil when
    /// there is none.
    @discardableResult
    mutating func modifyWatch<R>(_ key: Int, _ body: (inout GatewayCore.EnterpriseWatch) -> R) -> R? {
        reporting.changed(key)
        return watches.modify(key, body)
    }

    /// Watch `key` answered: `answer` gives it its dialog, returned as opened for the
    /// coordinator to index (its peer was charged when its SUBSCRIBE was admitted).
    mutating func answerWatch(_ key: Int, _ answer: (inout GatewayCore.EnterpriseWatch) -> Void) -> ComponentOutput {
        var out = ComponentOutput()
        let dialog = modifyWatch(key) { watch in
            answer(&watch)
            return watch.storedDialog.dialogKey
        }
        out.dialog(.opened, .enterpriseWatch(key), dialog ?? nil)
        return out
    }

    /// Removes watch `key`: its dialog closed, when it was answered, and the subscription its
    /// peer was charged given back.
    mutating func closeWatch(_ key: Int) -> (watch: GatewayCore.EnterpriseWatch?, output: ComponentOutput) {
        var out = ComponentOutput()
        reporting.changed(key)
        guard let watch = watches.removeValue(forKey: key) else { return (nil, out) }
        out.dialog(.closed, .enterpriseWatch(key), watch.storedDialog.dialogKey)
        out.released = [HeldQuota(peer: watch.peer)]
        return (watch, out)
    }

    // MARK: - The watchers' roster

    /// Whether anyone follows watchers (``WatcherRoster``): the watches are then reported as
    /// they change, every one of them when following starts.
    mutating func followWatchers(_ on: Bool) { reporting.follow(on, keys: watches.keys) }

    /// Each watch changed since the last call, as the roster files it: the presentities it names
    /// (its document's resource, its legs, those awaiting their owner, those refused, its
    /// batch's, and an unanswered batch's), by address of record.
    mutating func takeWatcherReports() -> [WatcherReport.Update] {
        reporting.take().map { key in
            WatcherReport.Update(id: WatcherReport.id(.enterprise, key: key), report: watches[key].map(Self.report))
        }
    }

    private static func report(_ watch: GatewayCore.EnterpriseWatch) -> WatcherReport {
        var named: [String: WatcherReport.Naming] = [:]
        func name(_ resource: String) {
            guard let presentity = WatcherIdentity.addressOfRecord(resource), named[presentity] == nil else { return }
            named[presentity] = WatcherReport.Naming(resource: resource, refused: watch.refused.contains(resource))
        }
        watch.documentResource.map(name)
        for resource in watch.legs.keys { name(resource) }
        for resource in watch.awaiting { name(resource) }
        for resource in watch.refused { name(resource) }
        if let subscription = watch.subscription { for resource in subscription.resources.keys { name(resource) } }
        if let pending = watch.pending {
            for action in pending.batch.actions where action.kind == .subscribe {
                for resource in action.resources { name(resource.uri) }
            }
        }
        return WatcherReport(source: .enterprise, watcher: watch.watcher, named: named)
    }

    // MARK: - OMA legs

    /// Opens leg `key`: its dialog, when it has one of its own (a list's member has not),
    /// returned as opened, and one of its presentity's legs counted (its watcher's and its
    /// sender's shares were taken when the resource was admitted).
    mutating func openLeg(_ key: Int, _ leg: GatewayCore.OMALeg) -> ComponentOutput {
        legs[key] = leg
        var out = ComponentOutput()
        out.dialog(.opened, .omaLeg(key), leg.subscription?.dialogKey)
        out.counted = [HeldQuota(presentity: leg.resource)]
        return out
    }

    /// Changes leg `key` in place; nil when there is none.
    @discardableResult
    mutating func modifyLeg<R>(_ key: Int, _ body: (inout GatewayCore.OMALeg) -> R) -> R? {
        legs.modify(key, body)
    }

    /// Removes leg `key` (the caller removes its dialog and releases its quota).
    @discardableResult
    mutating func removeLeg(_ key: Int) -> GatewayCore.OMALeg? { legs.removeValue(forKey: key) }

    // MARK: - Lists toward OMA resource list servers

    /// Opens list `key`, filed in the document that holds it (not written yet:
    /// ``writeListDocument(of:)``).
    mutating func openList(_ key: Int, _ list: GatewayCore.OMAList) {
        lists[key] = list
        listDocuments[list.document, default: GatewayCore.ListDocument()].lists.insert(key)
    }

    /// Changes list `key` in place; nil when there is none.
    @discardableResult
    mutating func modifyList<R>(_ key: Int, _ body: (inout GatewayCore.OMAList) -> R) -> R? {
        lists.modify(key, body)
    }

    @discardableResult
    mutating func removeList(_ key: Int) -> GatewayCore.OMAList? { lists.removeValue(forKey: key) }

    // MARK: - The rls-services documents (RFC 4826)

    /// Writes the document holding list `key` as it stands; the list is subscribed to or
    /// refreshed once the write is answered (``documentAnswered(_:written:)``). A write under way
    /// is let finish first.
    mutating func writeListDocument(of key: Int) -> [GatewayCore.Action] {
        guard let list = lists[key] else { return [] }
        if list.subscription != nil { lists.modify(key) { $0.changed = true } }
        return modifyDocument(list.document) {
            $0.lists.insert(key)
            $0.waiting.insert(key)
        }
    }

    /// Writes the document of list `key` without it (deleted when nothing is left in it).
    mutating func writeListDocument(without key: Int) -> [GatewayCore.Action] {
        guard let uri = lists[key]?.document, listDocuments[uri] != nil else { return [] }
        return modifyDocument(uri) {
            $0.lists.remove(key)
            $0.waiting.remove(key)
        }
    }

    /// The XCAP server answered the write of document `uri`. Written, and changed meanwhile: the
    /// write that brings it up to date. Otherwise the lists that waited for it, to be subscribed
    /// to or refreshed (written) or given up (not).
    mutating func documentAnswered(_ uri: String, written: Bool) -> (write: [GatewayCore.Action], waiting: [Int]) {
        guard var document = listDocuments[uri], document.writing else { return ([], []) }
        document.writing = false
        if document.stale, written {
            document.stale = false
            defer { listDocuments[uri] = document }
            return (write(&document, at: uri), [])
        }
        let waiting = document.waiting.sorted()
        document.waiting = []
        document.stale = false
        document.lists = document.lists.filter { lists[$0] != nil }
        listDocuments[uri] = document.lists.isEmpty ? nil : document
        return ([], waiting)
    }

    /// Changes document `uri` and writes it (now, or once the write under way is answered).
    private mutating func modifyDocument(_ uri: String, _ change: (inout GatewayCore.ListDocument) -> Void)
        -> [GatewayCore.Action]
    {
        var document = listDocuments[uri] ?? GatewayCore.ListDocument()
        change(&document)
        defer { listDocuments[uri] = document }
        return write(&document, at: uri)
    }

    /// Writes `document` to `uri` now, or once the write under way is answered.
    private func write(_ document: inout GatewayCore.ListDocument, at uri: String) -> [GatewayCore.Action] {
        if document.writing {
            document.stale = true
            return []
        }
        document.writing = true
        return [.writeListDocument(uri: uri, body: listDocumentBody(document))]
    }

    /// The rls-services document (RFC 4826 §4) of the lists `document` holds that have members
    /// and are not being ended, one `service` each, for the `presence` package; nil when there
    /// is none left (the document is then deleted).
    ///
    /// ```
    /// <rls-services xmlns="urn:ietf:params:xml:ns:rls-services" xmlns:rl="urn:ietf:params:xml:ns:resource-lists">
    ///   <service uri="sip:gw-list-TAG@oma.example">
    ///     <list> <rl:entry uri="sip:bob@oma.example"/>* </list>
    ///     <packages><package>presence</package></packages>
    ///   </service>*
    /// </rls-services>
    /// ```
    private func listDocumentBody(_ document: GatewayCore.ListDocument) -> [UInt8]? {
        let ns = GatewayConfiguration.rlsServicesNamespace
        let rl = GatewayConfiguration.resourceListsNamespace
        var services: [XMLNode] = []
        for key in document.lists.sorted() {
            guard let list = lists[key], !list.closing, !list.members.isEmpty else { continue }
            let entries = list.members.keys.map { uri in
                XMLNode.element(
                    XMLElement(XMLName(rl, "entry"), attributes: [XMLAttribute(XMLName("", "uri"), uri)], prefix: "rl"))
            }
            let package = XMLElement(XMLName(ns, "package"), children: [.text("presence")])
            services.append(
                .element(
                    XMLElement(
                        XMLName(ns, "service"), attributes: [XMLAttribute(XMLName("", "uri"), list.uri)],
                        children: [
                            .element(XMLElement(XMLName(ns, "list"), children: entries)),
                            .element(XMLElement(XMLName(ns, "packages"), children: [.element(package)])),
                        ])))
        }
        guard !services.isEmpty else { return nil }
        let root = XMLElement(
            XMLName(ns, "rls-services"), children: services,
            namespaceDeclarations: [(prefix: nil, uri: ns), (prefix: "rl", uri: rl)])
        return XMLWriter().bytes(root)
    }

    /// Whether `domain`'s RLS or XCAP server refused a list less than the retry delay ago.
    func refusesLists(in domain: String, now: NIODeadline) -> Bool { rlsRefused[domain].map { $0 > now } ?? false }

    /// `domain`'s RLS or XCAP server refused a list: no list is tried there until `until`.
    mutating func refuseLists(in domain: String, until: NIODeadline) { rlsRefused[domain] = until }

    // MARK: - Spheres (RFC 4480 §3.12)

    /// `presentity` now publishes `sphere`; whether that changed it, and what it published before.
    mutating func noteSphere(_ sphere: String?, of presentity: String) -> (changed: Bool, before: String?) {
        let before = spheres[presentity]
        spheres[presentity] = sphere
        return (sphere != before, before)
    }

    // MARK: - Restore and takeover, for the coordinator (docs/state.md)

    /// Takes back the watches, lists and legs the store kept, with their dialogs and what they
    /// hold of the quotas. A watch never answered comes back without its dialog
    /// (``GatewayCore/EnterpriseWatch/init(from:)``): it is not taken back (the store learns
    /// it), and its legs end when the flow resumes (``GatewayCore/resumeEnterpriseWatchers(_:now:pace:)``).
    /// A list's member whose list was not kept is left out: its watch makes it a leg of its own.
    mutating func restore(_ entries: GatewayCore.StoredEntries, core: GatewayCore, now: NIODeadline)
        -> ComponentOutput
    {
        var out = ComponentOutput()
        let read = entries.table(GatewayCore.EnterpriseWatch.self)
        for (key, watch) in read {
            watches.restore(key, watch)
            reporting.changed(key)
            guard watch.subscription != nil || watch.document != nil else {
                watches.removeValue(forKey: key)
                continue
            }
            out.dialog(.restored, .enterpriseWatch(key), watch.storedDialog.dialogKey, peer: watch.peer)
        }
        let readLists = entries.table(GatewayCore.OMAList.self)
        for (key, list) in readLists {
            lists.restore(key, list)
            listDocuments[list.document, default: GatewayCore.ListDocument()].lists.insert(key)
            out.dialog(.restored, .omaList(key), list.storedDialog.dialogKey)
        }
        for (key, leg) in entries.table(GatewayCore.OMALeg.self) {
            if let list = leg.list, readLists[list]?.members[leg.resource] != key { continue }
            // Charged to the sender of its watcher's SUBSCRIBE, as when it was made.
            var leg = leg
            leg.charged = core.knownCharge(read[leg.watch]?.peer)
            legs.restore(key, leg)
            out.counted.append(leg.held)
            out.dialog(.restored, .omaLeg(key), leg.storedDialog.dialogKey)
        }
        return out
    }

    /// The senders of the watchers' SUBSCRIBEs whose legs the store kept.
    func chargedPeers(in entries: GatewayCore.StoredEntries) -> [DialogPeer] {
        let read = entries.table(GatewayCore.EnterpriseWatch.self)
        return entries.entries(GatewayCore.OMALeg.self).compactMap { read[$0.value.watch]?.peer }
    }

    /// Lets go, without a message and as no change, of a record another node took over: its
    /// timers cancelled, its dialog closed, what it held of the quotas given back (a list's
    /// document keeps it no more).
    mutating func disown(_ id: StateRecordID) -> ComponentOutput {
        var out = ComponentOutput()
        guard let kind = GatewayCore.RecordKind(rawValue: id.kind), let key = Int(id.key) else { return out }
        switch kind {
        case .enterpriseWatch:
            guard let watch = watches.forget(key) else { break }
            reporting.changed(key)
            let context = GatewayCore.Context.enterpriseWatch(key)
            out.actions = [.cancel(.expiry(context)), .cancel(.firstAnswer(context))]
            out.dialog(.closed, context, watch.storedDialog.dialogKey)
            out.released = [HeldQuota(peer: watch.peer)]
        case .omaLeg:
            guard let leg = legs.forget(key) else { break }
            let context = GatewayCore.Context.omaLeg(key)
            out.actions = [.cancel(.refresh(context)), .cancel(.expiry(context)), .cancel(.cleanup(context))]
            out.dialog(.closed, context, leg.storedDialog.dialogKey)
            out.released = [leg.held]
        case .omaList:
            guard let list = lists.forget(key) else { break }
            listDocuments[list.document]?.lists.remove(key)
            listDocuments[list.document]?.waiting.remove(key)
            let context = GatewayCore.Context.omaList(key)
            out.actions = [.cancel(.refresh(context)), .cancel(.expiry(context)), .cancel(.cleanup(context))]
            out.dialog(.closed, context, list.storedDialog.dialogKey)
        default:
            break
        }
        return out
    }
}

/// The tables' journal, restore and takeover, for the coordinator (docs/architecture.md,
/// "Persistence").
extension EnterpriseWatcherBridge: DurableComponent {
    struct ChangedKeys: ChangedKeySet {
        var watches, legs, lists: Set<Int>

        var isEmpty: Bool { watches.isEmpty && legs.isEmpty && lists.isEmpty }
    }

    var journaling: Bool {
        get { watches.journaling }
        set {
            watches.journaling = newValue
            legs.journaling = newValue
            lists.journaling = newValue
        }
    }

    mutating func takeChangedKeys() -> ChangedKeys {
        ChangedKeys(watches: watches.takeChanged(), legs: legs.takeChanged(), lists: lists.takeChanged())
    }

    func stateChanges(_ keys: ChangedKeys, coding: RecordCoding, encoder: JSONEncoder) -> [StateChange] {
        func changes<E: StoredEntry>(_ keys: Set<Int>, _ table: JournaledTable<E>) -> [StateChange] {
            E.changes(keys.map(String.init), coding: coding, encoder: encoder) { Int($0).flatMap { table[$0] } }
        }
        return changes(keys.watches, watches) + changes(keys.legs, legs) + changes(keys.lists, lists)
    }

    mutating func beginQuiet() {
        watches.beginQuiet()
        legs.beginQuiet()
        lists.beginQuiet()
    }

    mutating func endQuiet() {
        watches.endQuiet()
        legs.endQuiet()
        lists.endQuiet()
    }

    /// The records of the dialogs it holds (docs/state.md, "Several nodes").
    func dialogRecordIDs() -> [StateRecordID] {
        func ids(_ kind: GatewayCore.RecordKind, _ keys: [Int]) -> [StateRecordID] {
            keys.map { StateRecordID(kind: kind.rawValue, key: String($0)) }
        }
        return ids(.enterpriseWatch, watches.keys) + ids(.omaLeg, legs.keys) + ids(.omaList, lists.keys)
    }

    /// Whether the entry of `context` is still held; nil when `context` is not the bridge's.
    func holds(_ context: GatewayCore.Context) -> Bool? {
        switch context {
        case .enterpriseWatch(let key): watches[key] != nil
        case .omaLeg(let key): legs[key] != nil
        case .omaList(let key): lists[key] != nil
        default: nil
        }
    }
}
