import Foundation
import GatewayState
import MSPresenceEvents
import NIOCore
import SIPStack

/// One kind of entry the durable store keeps (docs/state.md, "What is stored"), declared once
/// with the entry: the store's kind name, the dialog a record is found by, and the record itself,
/// which is the entry's own `Codable` conformance (its durable fields; what the store does not
/// keep is ``Transient``, a dialog's state is ``DialogState``). Writing changes
/// (``GatewayCore/takeStateChanges(clock:)``), reading a store back (``GatewayCore/StoredEntries``)
/// and checking the records' form are generic over it: a new kind is this conformance and its
/// place in ``GatewayCore/storedKinds``; a new durable field of a kind is one more stored property.
protocol StoredEntry: Sendable {
    /// What the entry is written as: the entry itself, unless the type is another module's and
    /// names its own record.
    associatedtype Record: Codable = Self

    static var recordKind: GatewayCore.RecordKind { get }
    /// Whether the store's `key` column is a number (the key of a core's table) rather than text.
    static var numberedKeys: Bool { get }

    func record(clock: WallClock) -> Record
    /// The dialog the entry holds and when it expires: the record's `callID`, `localTag` and
    /// `expires` columns, by which a node finds a dialog's record (docs/state.md, "Several nodes").
    var storedDialog: StoredDialog { get }

    /// The entry its record describes, with what only the core as it runs now gives (its
    /// configured identities, its Contacts).
    static func restored(from record: Record, key: String, coding: RecordCoding)
        throws(GatewayCore.RestoreError.Detail) -> Self
}

extension StoredEntry where Record == Self {
    func record(clock: WallClock) -> Self { self }

    static func restored(from record: Self, key: String, coding: RecordCoding) throws(GatewayCore.RestoreError.Detail)
        -> Self
    { record }
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

    /// The entry as the store keeps it under `key`; `encoder` is one of ``RecordCoding``.
    func stateRecord(key: String, coding: RecordCoding, encoder: JSONEncoder) -> StateRecord {
        // The records are plain values: encoding them fails only for a programming error.
        let body: Data
        do { body = try encoder.encode(record(clock: coding.clock)) } catch {
            preconditionFailure("record \(Self.recordKind.rawValue) \(key): \(error)")
        }
        let dialog = storedDialog
        return StateRecord(
            kind: Self.recordKind.rawValue, key: key, callID: dialog.callID, localTag: dialog.localTag,
            expires: dialog.expiresAt.map(coding.clock.milliseconds), body: Array(body))
    }

    /// Reads `record`, one of this kind; `decoder` is one of ``RecordCoding``.
    static func read(_ record: StateRecord, decoder: JSONDecoder, coding: RecordCoding)
        throws(GatewayCore.RestoreError.Detail) -> Self
    {
        if numberedKeys, Int(record.key) == nil { throw GatewayCore.RestoreError.Detail("the key is not a number") }
        let stored: Record
        do { stored = try decoder.decode(Record.self, from: Data(record.body)) } catch let detail
            as GatewayCore.RestoreError.Detail
        {
            throw detail
        } catch let error as SIPStackError {
            throw GatewayCore.RestoreError.Detail(error.detail)
        } catch {
            throw GatewayCore.RestoreError.Detail("unreadable: \(error)")
        }
        return try restored(from: stored, key: record.key, coding: coding)
    }

    /// What the store needs to keep this kind as the table's `changed` keys say: the record of
    /// each key still held, the removal of each one gone.
    static func changes(
        _ keys: some Sequence<String>, coding: RecordCoding, encoder: JSONEncoder, entry: (String) -> Self?
    ) -> [StateChange] {
        keys.sorted().map { key in
            guard let value = entry(key) else { return .delete(kind: recordKind.rawValue, key: key) }
            return .put(value.stateRecord(key: key, coding: coding, encoder: encoder))
        }
    }
}

extension GatewayCore {
    /// Every kind of entry the durable store keeps. A record of a kind not listed is refused on
    /// restore (written by a newer presence-gateway).
    static let storedKinds: [any StoredEntry.Type] = [
        EnterpriseWatch.self, OMALeg.self, OMAList.self, OMAWatcherNotifier.StoredWatch.self, EnterpriseLeg.self,
        LinkedIdentityPublisher.Link.self,
        EventStateCompositor.Publication.self, CategoryPublisher.self, WatcherInfoServer.Watch.self, PoolHint.self,
        BatchRefusal.self, UPnPPresenceBridge.Registration.self, UPnPPresenceBridge.User.self,
    ]

    /// The records of a store read back, by kind, in the order read, before any enters the core.
    struct StoredEntries: Sendable {
        private var columns: [RecordKind: any StoredColumn] = [:]

        /// Reads `record` with its kind's ``StoredEntry`` and keeps what it gives; `decoder` is
        /// one of `coding`.
        mutating func read(_ record: StateRecord, decoder: JSONDecoder, coding: RecordCoding)
            throws(RestoreError.Detail)
        {
            guard let kind = RecordKind(rawValue: record.kind), let reader = Self.readers[kind] else {
                throw RestoreError.Detail("unknown kind (written by a newer presence-gateway?)")
            }
            try reader(&self, record, decoder, coding)
        }

        /// What was read of kind `type`, by key, in the order read (a key read twice: the later).
        func entries<E: StoredEntry>(_ type: E.Type) -> [(key: String, value: E)] {
            (columns[E.recordKind] as? Column<E>)?.entries ?? []
        }

        /// The same by numbered key; a key read twice keeps the later entry.
        func table<E: StoredEntry>(_ type: E.Type) -> [Int: E] {
            var table: [Int: E] = [:]
            for (key, value) in entries(type) { table[Int(key) ?? 0] = value }
            return table
        }

        /// The keys of every entry whose kind numbers them (``StoredEntry/numberedKeys``): the
        /// table keys a restore takes back.
        var numberedKeys: [Int] { columns.values.flatMap(\.numberedKeys) }

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
            @Sendable (inout StoredEntries, StateRecord, JSONDecoder, RecordCoding) throws(RestoreError.Detail) -> Void

        private static let readers: [RecordKind: Reader] = Dictionary(
            uniqueKeysWithValues: storedKinds.map { ($0.recordKind, reader(for: $0)) })

        private static func reader<E: StoredEntry>(for type: E.Type) -> Reader {
            { entries, record, decoder, coding throws(RestoreError.Detail) in
                let value = try E.read(record, decoder: decoder, coding: coding)
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
    /// Its entries' keys, when its kind numbers them.
    var numberedKeys: [Int] { get }
}

private struct Column<E: StoredEntry>: StoredColumn {
    var entries: [(key: String, value: E)] = []

    var numberedKeys: [Int] { E.numberedKeys ? entries.compactMap { Int($0.key) } : [] }

    mutating func append(_ other: any StoredColumn) {
        entries += (other as? Column<E>)?.entries ?? []
    }
}
