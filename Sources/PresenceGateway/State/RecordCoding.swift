import Foundation
import MSPresenceEvents
import SIPMessages
import SIPStack
import SIPTransport
import _GatewayInternals

/// What writing and reading the store's records needs of the core (docs/state.md, "What is
/// stored"), handed to the JSON coders in their `userInfo`: the wall clock deadlines are written
/// in, the configured peers (a dialog's peer is written by name), and this node's Contacts,
/// which dialogs read back take (a node that takes over another's dialogs puts its own in their
/// next requests: a target refresh, RFC 6665 §4.1.2.2, §4.2.2). A class: the coders hand it out
/// of their `userInfo` for every dialog and peer of a record, a reference rather than a copy of
/// the configuration.
final class RecordCoding: Sendable {
    // swift-format-ignore: NeverForceUnwrap
    // A constant key: it is a valid one.
    static let key = CodingUserInfoKey(rawValue: "presence-gateway.record-coding")!

    let clock: WallClock
    let settings: CoreSettings

    init(clock: WallClock, settings: CoreSettings) {
        self.clock = clock
        self.settings = settings
    }

    var configuration: GatewayConfiguration { settings.configuration }

    /// This side's Contact as written in records; a watcher's dialog gets the Contact of the
    /// transport its peer uses.
    func contact(_ side: GatewayConfiguration.Side, for peer: DialogPeer? = nil) -> SIPAddress? {
        peer.flatMap { settings.transportContacts[side]?[$0.transport] } ?? settings.contacts[side]
    }

    /// A JSON encoder that writes records with this context.
    func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.userInfo[Self.key] = self
        return encoder
    }

    /// A JSON decoder that reads records with this context.
    func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.userInfo[Self.key] = self
        return decoder
    }

    static func of(_ encoder: any Encoder) throws -> RecordCoding {
        try of(encoder.userInfo, encoder.codingPath)
    }

    static func of(_ decoder: any Decoder) throws -> RecordCoding {
        try of(decoder.userInfo, decoder.codingPath)
    }

    private static func of(_ info: [CodingUserInfoKey: Any], _ path: [any CodingKey]) throws -> RecordCoding {
        guard let coding = info[key] as? RecordCoding else {
            throw EncodingError.invalidValue(
                info, .init(codingPath: path, debugDescription: "a record is coded with the core's RecordCoding"))
        }
        return coding
    }
}

extension GatewayCore {
    /// What records are written and read with now.
    func recordCoding(clock: WallClock) -> RecordCoding {
        RecordCoding(clock: clock, settings: settings)
    }
}

// MARK: - The durable part of a dialog's state

/// A subscription of the transaction layer as an entry's record keeps it (its own `Record`), and
/// whether two of them would be kept alike: what a NOTIFY relayed in an existing pair changes
/// (CSeqs within a block of ``GatewayCore/sequenceBlock``, the remote CSeq) is left out.
protocol DurableDialog: Sendable {
    associatedtype Record: Codable
    func record(clock: WallClock) -> Record
    /// The subscription read back: a dialog this side notifies in goes on two blocks above the
    /// stored CSeq, so above every one it used (RFC 3261 §12.2.1.1).
    static func read(_ record: Record, _ coding: RecordCoding) throws(SIPStackError) -> Self
    /// Whether the store keeps the same of `self` and `other`.
    func keptAlike(_ other: Self) -> Bool
}

extension DurableDialog {
    /// The CSeq block a dialog's local CSeq is in: the store writes it when it enters a new one.
    static func block(_ dialog: SIPDialog) -> UInt32 { (dialog.localSequence ?? 0) / GatewayCore.sequenceBlock }
}

extension NotifierSubscription: DurableDialog {
    static func read(_ record: Record, _ coding: RecordCoding) throws(SIPStackError) -> Self {
        try Self(record: record, clock: coding.clock, reservedSequences: 2 * GatewayCore.sequenceBlock)
    }

    func keptAlike(_ other: Self) -> Bool {
        status == other.status && Self.block(dialog) == Self.block(other.dialog)
            && dialog.withoutSequences == other.dialog.withoutSequences
    }
}

extension BatchCategorySubscription: DurableDialog {
    static func read(_ record: Record, _ coding: RecordCoding) throws(SIPStackError) -> Self {
        try Self(record: record, clock: coding.clock, reservedSequences: 2 * GatewayCore.sequenceBlock)
    }

    func keptAlike(_ other: Self) -> Bool {
        subscription.keptAlike(other.subscription) && resources == other.resources
    }
}

/// Toward the OMA side: read back with this node's Contact there.
extension SubscriberSubscription: DurableDialog {
    static func read(_ record: Record, _ coding: RecordCoding) throws(SIPStackError) -> Self {
        var record = record
        record.contact = coding.contact(.oma)?.description ?? record.contact
        return try Self(record: record, clock: coding.clock)
    }

    func keptAlike(_ other: Self) -> Bool {
        status == other.status && dialog?.withoutSequences == other.dialog?.withoutSequences
    }
}

/// Toward the enterprise: read back with this node's Contact there.
extension BatchCategorySubscriber: DurableDialog {
    static func read(_ record: Record, _ coding: RecordCoding) throws(SIPStackError) -> Self {
        var record = record
        record.subscription.contact = coding.contact(.enterprise)?.description ?? record.subscription.contact
        return try Self(record: record, clock: coding.clock)
    }

    func keptAlike(_ other: Self) -> Bool {
        subscription.keptAlike(other.subscription) && resources == other.resources
    }
}

extension Optional: DurableDialog where Wrapped: DurableDialog {
    func record(clock: WallClock) -> Wrapped.Record? { self?.record(clock: clock) }

    static func read(_ record: Wrapped.Record?, _ coding: RecordCoding) throws(SIPStackError) -> Self {
        guard let record else { return nil }
        return try Wrapped.read(record, coding)
    }

    func keptAlike(_ other: Self) -> Bool {
        switch (self, other) {
        case (nil, nil): true
        case (let a?, let b?): a.keptAlike(b)
        default: false
        }
    }
}

extension OutOfLine: DurableDialog where Value: DurableDialog {
    func record(clock: WallClock) -> Value.Record { value.record(clock: clock) }

    static func read(_ record: Value.Record, _ coding: RecordCoding) throws(SIPStackError) -> OutOfLine<Value> {
        OutOfLine(try Value.read(record, coding))
    }

    func keptAlike(_ other: OutOfLine<Value>) -> Bool { self === other || value.keptAlike(other.value) }
}

/// A dialog's state in an entry of the core: written as its transaction layer's record, and
/// equal to another when the store keeps the same of both (``DurableDialog/keptAlike(_:)``), so
/// that a NOTIFY relayed in an existing pair writes nothing (``JournaledTable``).
@propertyWrapper
struct DialogState<Value: DurableDialog>: Sendable {
    var wrappedValue: Value
}

extension DialogState: Equatable {
    static func == (a: Self, b: Self) -> Bool { a.wrappedValue.keptAlike(b.wrappedValue) }
}

extension DialogState: Codable {
    init(from decoder: any Decoder) throws {
        let record = try Value.Record(from: decoder)
        wrappedValue = try Value.read(record, RecordCoding.of(decoder))
    }

    func encode(to encoder: any Encoder) throws {
        try wrappedValue.record(clock: RecordCoding.of(encoder).clock).encode(to: encoder)
    }
}

// MARK: - What the store does not keep

/// A field of an entry the store does not keep (the last state seen, what was last sent): not
/// written, read back as ``TransientValue/initial``, and never a reason to write the entry.
@propertyWrapper
struct Transient<Value: TransientValue & Sendable>: Sendable {
    var wrappedValue: Value
}

/// What a ``Transient`` field is read back as.
protocol TransientValue {
    static var initial: Self { get }
}

extension Optional: TransientValue {
    static var initial: Self { nil }
}

extension UInt32: TransientValue {
    static var initial: UInt32 { 0 }
}

extension Bool: TransientValue {
    static var initial: Bool { false }
}

extension SmallMap: TransientValue {
    static var initial: SmallMap { [:] }
}

extension Dictionary: TransientValue {
    static var initial: Dictionary { [:] }
}

extension Transient: Equatable {
    static func == (a: Self, b: Self) -> Bool { true }
}

extension Transient: Codable {
    init(from decoder: any Decoder) throws { wrappedValue = .initial }
    func encode(to encoder: any Encoder) throws {}
}

/// A version written when it enters a new block of ``GatewayCore/sequenceBlock``, as a CSeq is,
/// and read back two blocks above, so above every one sent since (RFC 4662 §5.2, RFC 5263 §4.2:
/// a version that skips ahead tells the subscriber to refresh for full state; one repeated would
/// be discarded).
@propertyWrapper
struct BlockedVersion: Sendable, Equatable, Codable {
    var wrappedValue: UInt32

    init(wrappedValue: UInt32) { self.wrappedValue = wrappedValue }

    static func == (a: Self, b: Self) -> Bool {
        a.wrappedValue / GatewayCore.sequenceBlock == b.wrappedValue / GatewayCore.sequenceBlock
    }

    init(from decoder: any Decoder) throws {
        wrappedValue = try UInt32(from: decoder) &+ 2 * GatewayCore.sequenceBlock
    }

    func encode(to encoder: any Encoder) throws { try wrappedValue.encode(to: encoder) }
}

/// What is kept of a request waiting for its answer: only that there is one (a record says
/// `answered`; a restart ends what was never answered).
@propertyWrapper
struct Waiting<Value: Sendable>: Sendable, Equatable {
    var wrappedValue: Value?

    static func == (a: Self, b: Self) -> Bool { (a.wrappedValue == nil) == (b.wrappedValue == nil) }
}

// MARK: - Optional fields left out when absent, as a synthesized record leaves them

extension KeyedEncodingContainer {
    mutating func encode<Value>(_ value: DialogState<Value?>, forKey key: Key) throws {
        guard value.wrappedValue != nil else { return }
        try value.encode(to: superEncoder(forKey: key))
    }

    mutating func encode<Value>(_ value: Transient<Value>, forKey key: Key) throws {}
}

extension KeyedDecodingContainer {
    func decode<Value>(_ type: DialogState<Value?>.Type, forKey key: Key) throws -> DialogState<Value?> {
        guard contains(key), try !decodeNil(forKey: key) else { return DialogState(wrappedValue: nil) }
        return try DialogState(from: superDecoder(forKey: key))
    }

    func decode<Value>(_ type: Transient<Value>.Type, forKey key: Key) throws -> Transient<Value> {
        Transient(wrappedValue: .initial)
    }
}

// MARK: - Values written as text

/// A dialog's peer as records write it: the configured peer by name, since the position it had
/// may be another peer's after the configuration changed; a configured peer that is gone leaves
/// the dialog with the address it was made with.
extension DialogPeer: Codable {
    private enum CodingKeys: String, CodingKey {
        case side, transport, host, port, peer, certificateNames
    }

    public init(from decoder: any Decoder) throws {
        let peers = try RecordCoding.of(decoder).configuration.peers
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let sideText = try c.decode(String.self, forKey: .side)
        let transportText = try c.decode(String.self, forKey: .transport)
        guard let side = GatewayConfiguration.Side(rawValue: sideText),
            let transport = SIPTransportKind(rawValue: transportText)
        else {
            throw GatewayCore.RestoreError.Detail("peer \(sideText)/\(transportText): unknown side or transport")
        }
        let name = try c.decodeIfPresent(String.self, forKey: .peer)
        let index = name.flatMap { name in peers.firstIndex { $0.name == name } }
        let configured = index.map { peers[$0].certificateNames } ?? []
        self.init(
            side: side, transport: transport, host: try c.decode(String.self, forKey: .host),
            port: try c.decode(UInt16.self, forKey: .port), peer: index.map(UInt16.init),
            certificateNames: configured.isEmpty
                ? try c.decode([String].self, forKey: .certificateNames) : configured)
        self = shared()
    }

    public func encode(to encoder: any Encoder) throws {
        let peers = try RecordCoding.of(encoder).configuration.peers
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(side.rawValue, forKey: .side)
        try c.encode(transport.rawValue, forKey: .transport)
        try c.encode(host, forKey: .host)
        try c.encode(port, forKey: .port)
        try c.encodeIfPresent(peer.flatMap { Int($0) < peers.count ? peers[Int($0)].name : nil }, forKey: .peer)
        try c.encode(certificateNames, forKey: .certificateNames)
    }
}

/// By its pres-rules token (RFC 5025 §3.2.1).
extension SubHandling: Codable {
    public init(from decoder: any Decoder) throws {
        self = try decoder.decodeWord("sub-handling", SubHandling.init(token:))
    }

    public func encode(to encoder: any Encoder) throws { try token.encode(to: encoder) }
}

extension SourceNetwork: Codable {
    public init(from decoder: any Decoder) throws {
        self = try decoder.decodeWord("network", SourceNetwork.init(rawValue:))
    }
}

extension Decoder {
    /// A value written as one word; a word it does not know is a restore error naming `what`.
    fileprivate func decodeWord<T>(_ what: String, _ parse: (String) -> T?) throws -> T {
        let word = try String(from: self)
        guard let value = parse(word) else { throw GatewayCore.RestoreError.Detail("unknown \(what) \(word)") }
        return value
    }
}
