import Foundation
import GatewayState
import MSPresenceEvents
import NIOCore
import SIPStack

/// One kind of entry the durable store keeps (docs/state.md, "What is stored"), declared once
/// with the entry: the store's kind name, the record the entry is written as (JSON in
/// `StateRecord.body`), the dialog a record is found by, and the entry made again from its record.
/// Writing changes (``GatewayCore/takeStateChanges(clock:)``), reading a store back
/// (``GatewayCore/StoredEntries``) and checking the records' form are generic over it: a new kind
/// is this conformance and its place in ``GatewayCore/storedKinds``.
protocol StoredEntry: Sendable {
    associatedtype Record: Codable
    /// What reading a record gives: the entry, or the entry with what its restore needs to know.
    associatedtype Restored: Sendable = Self

    static var recordKind: GatewayCore.RecordKind { get }
    /// Whether the store's `key` column is a number (the key of a core's table) rather than text.
    static var numberedKeys: Bool { get }

    func record(in core: GatewayCore, clock: WallClock) -> Record
    /// The dialog the entry holds and when it expires: the record's `callID`, `localTag` and
    /// `expires` columns, by which a node finds a dialog's record (docs/state.md, "Several nodes").
    var storedDialog: StoredDialog { get }

    /// The entry its record describes, as `core` restores it (its Contact, its configured peers).
    static func restored(from record: Record, key: String, core: GatewayCore, clock: WallClock)
        throws(GatewayCore.RestoreError.Detail) -> Restored
}

/// The columns of a record that find it by dialog.
struct StoredDialog {
    var callID: String?
    var localTag: String?
    var expiresAt: NIODeadline?

    static let none = StoredDialog()

    init(callID: String? = nil, localTag: String? = nil, expiresAt: NIODeadline? = nil) {
        self.callID = callID
        self.localTag = localTag
        self.expiresAt = expiresAt
    }

    init(_ dialog: SIPDialog.ID?, expiresAt: NIODeadline?) {
        self.init(callID: dialog?.callID, localTag: dialog?.localTag, expiresAt: expiresAt)
    }

    /// The dialog of a subscription the gateway holds (its own Call-ID and From tag).
    init(_ subscription: SubscriberSubscription?) {
        self.init(
            callID: subscription?.callID, localTag: subscription?.localTag, expiresAt: subscription?.expiresAt)
    }

    /// The dialog index's key of the dialog, when there is one.
    var dialogKey: SIPDialogKey? {
        guard let callID, let localTag else { return nil }
        return SIPDialogKey(callID: callID, localTag: localTag)
    }
}

extension StoredEntry {
    static var numberedKeys: Bool { true }

    /// The entry as the store keeps it under `key`.
    func stateRecord(key: String, core: GatewayCore, clock: WallClock, encoder: JSONEncoder) -> StateRecord {
        // The records are plain values: encoding them cannot fail.
        let body = (try? encoder.encode(record(in: core, clock: clock))) ?? Data()
        let dialog = storedDialog
        return StateRecord(
            kind: Self.recordKind.rawValue, key: key, callID: dialog.callID, localTag: dialog.localTag,
            expires: dialog.expiresAt.map(clock.milliseconds), body: Array(body))
    }

    /// Reads `record`, one of this kind.
    static func read(_ record: StateRecord, decoder: JSONDecoder, core: GatewayCore, clock: WallClock)
        throws(GatewayCore.RestoreError.Detail) -> Restored
    {
        if numberedKeys, Int(record.key) == nil { throw GatewayCore.RestoreError.Detail("the key is not a number") }
        let stored: Record
        do { stored = try decoder.decode(Record.self, from: Data(record.body)) } catch {
            throw GatewayCore.RestoreError.Detail("unreadable: \(error)")
        }
        return try restored(from: stored, key: record.key, core: core, clock: clock)
    }

    /// What the store needs to keep this kind as the table's `changed` keys say: the record of
    /// each key still held, the removal of each one gone.
    static func changes(
        _ keys: some Sequence<String>, in core: GatewayCore, clock: WallClock, encoder: JSONEncoder,
        entry: (String) -> Self?
    ) -> [StateChange] {
        keys.sorted().map { key in
            guard let value = entry(key) else { return .delete(kind: recordKind.rawValue, key: key) }
            return .put(value.stateRecord(key: key, core: core, clock: clock, encoder: encoder))
        }
    }
}

extension GatewayCore {
    /// Every kind of entry the durable store keeps. A record of a kind not listed is refused on
    /// restore (written by a newer presence-gateway).
    static let storedKinds: [any StoredEntry.Type] = [
        EnterpriseWatch.self, OMALeg.self, OMAList.self, StoredOMAWatch.self, EnterpriseLeg.self,
        LinkedIdentityPublisher.Link.self,
        EventStateCompositor.Publication.self, CategoryPublisher.self, WatcherInfoServer.Watch.self, PoolHint.self,
        BatchRefusal.self,
    ]

    /// The records of a store read back, by kind, in the order read, before any enters the core.
    struct StoredEntries: Sendable {
        private var columns: [RecordKind: any StoredColumn] = [:]

        /// Reads `record` with its kind's ``StoredEntry`` and keeps what it gives.
        mutating func read(_ record: StateRecord, decoder: JSONDecoder, core: GatewayCore, clock: WallClock)
            throws(RestoreError.Detail)
        {
            guard let kind = RecordKind(rawValue: record.kind), let reader = Self.readers[kind] else {
                throw RestoreError.Detail("unknown kind (written by a newer presence-gateway?)")
            }
            try reader(&self, record, decoder, core, clock)
        }

        /// What was read of kind `type`, by key, in the order read (a key read twice: the later).
        func entries<E: StoredEntry>(_ type: E.Type) -> [(key: String, value: E.Restored)] {
            (columns[E.recordKind] as? Column<E>)?.entries ?? []
        }

        /// The same by numbered key; a key read twice keeps the later entry.
        func table<E: StoredEntry>(_ type: E.Type) -> [Int: E.Restored] {
            var table: [Int: E.Restored] = [:]
            for (key, value) in entries(type) { table[Int(key) ?? 0] = value }
            return table
        }

        /// Adds what a later slice of the records read.
        mutating func merge(_ other: StoredEntries) {
            for (kind, column) in other.columns {
                // Taken out and put back, so the column is appended to in place.
                guard var merged = columns.removeValue(forKey: kind) else {
                    columns[kind] = column
                    continue
                }
                merged.append(column)
                columns[kind] = merged
            }
        }

        private typealias Reader =
            @Sendable (
                inout StoredEntries, StateRecord, JSONDecoder, GatewayCore, WallClock
            ) throws(RestoreError.Detail) -> Void

        private static let readers: [RecordKind: Reader] = Dictionary(
            uniqueKeysWithValues: storedKinds.map { ($0.recordKind, reader(for: $0)) })

        private static func reader<E: StoredEntry>(for type: E.Type) -> Reader {
            { entries, record, decoder, core, clock throws(RestoreError.Detail) in
                let value = try E.read(record, decoder: decoder, core: core, clock: clock)
                // Taken out and put back, so the column is appended to in place.
                var column = entries.columns.removeValue(forKey: E.recordKind) as? Column<E> ?? Column<E>()
                column.entries.append((record.key, value))
                entries.columns[E.recordKind] = column
            }
        }
    }
}

/// The entries of one kind read from a store.
private protocol StoredColumn: Sendable {
    /// Adds the entries of `other`, a column of the same kind read later.
    mutating func append(_ other: any StoredColumn)
}

private struct Column<E: StoredEntry>: StoredColumn {
    var entries: [(key: String, value: E.Restored)] = []

    mutating func append(_ other: any StoredColumn) {
        entries += (other as? Column<E>)?.entries ?? []
    }
}
