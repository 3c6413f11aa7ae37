import Foundation
import GatewayState
import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPStack

/// How flow 5's entries are kept by the durable store (``StoredEntry``, docs/state.md): each
/// registration by key, with its subscription's dialog toward the OMA side; and the user's
/// own state (the presence last set, its publication, the decisions on watchers) as one record.
/// What a contact was last shown is not kept: the refresh after a restart brings it again.
extension UPnPPresenceBridge.Registration: StoredEntry, Codable {
    static var recordKind: GatewayCore.RecordKind { .upnpRegistration }

    var storedDialog: StoredDialog { StoredDialog(subscription) }

    private enum CodingKeys: String, CodingKey {
        case contact, subscription, watch, state, until, peer, closing, controlPoint
    }

    init(from decoder: any Decoder) throws {
        let coding = try RecordCoding.of(decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            contact: try c.decode(String.self, forKey: .contact),
            until: coding.clock.deadline(milliseconds: try c.decode(Int64.self, forKey: .until)))
        subscription = try c.decodeIfPresent(DialogState<SubscriberSubscription>.self, forKey: .subscription)?
            .wrappedValue
        watch = try c.decodeIfPresent(Int.self, forKey: .watch)
        let text = try c.decode(String.self, forKey: .state)
        guard let state = UPnPRegistrationState(rawValue: text) else {
            throw GatewayCore.RestoreError.Detail("state \(text) is not a registration's")
        }
        self.state = state
        peer = try c.decodeIfPresent(DialogPeer.self, forKey: .peer)
        closing = try c.decodeIfPresent(Bool.self, forKey: .closing) ?? false
        controlPoint = try c.decodeIfPresent(String.self, forKey: .controlPoint) ?? ""
    }

    func encode(to encoder: any Encoder) throws {
        let clock = try RecordCoding.of(encoder).clock
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(contact, forKey: .contact)
        try c.encodeIfPresent(subscription.map { DialogState(wrappedValue: $0) }, forKey: .subscription)
        try c.encodeIfPresent(watch, forKey: .watch)
        try c.encode(state.rawValue, forKey: .state)
        try c.encode(clock.milliseconds(until), forKey: .until)
        try c.encodeIfPresent(peer, forKey: .peer)
        if closing { try c.encode(true, forKey: .closing) }
        if !controlPoint.isEmpty { try c.encode(controlPoint, forKey: .controlPoint) }
    }
}

extension UPnPPresenceBridge.User: StoredEntry, Codable {
    static var recordKind: GatewayCore.RecordKind { .upnpUser }
    static var numberedKeys: Bool { false }
    /// The one key of the user's record.
    static let key = "user"

    var storedDialog: StoredDialog {
        StoredDialog(callID: publication?.callID, localTag: publication?.localTag, expiresAt: publication?.expiresAt)
    }

    private enum CodingKeys: String, CodingKey {
        case presence, publication, publisher, decisions
    }

    init(from decoder: any Decoder) throws {
        let coding = try RecordCoding.of(decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init()
        if let stored = try c.decodeIfPresent(StoredBytes.self, forKey: .presence) {
            do {
                presence = try PIDFDocument(bytes: stored.bytes)
            } catch { throw GatewayCore.RestoreError.Detail("presence: \(error)") }
        }
        publication = try c.decodeIfPresent(PublicationClient.Record.self, forKey: .publication).map {
            try PublicationClient(record: $0, clock: coding.clock)
        }
        if let record = try c.decodeIfPresent(CategoryPublisher.Record.self, forKey: .publisher) {
            publisher = try GatewayCore.restored { () throws(SIPStackError) in try CategoryPublisher(record: record) }
        }
        for (watcher, stored) in try c.decodeIfPresent([String: StoredDecision].self, forKey: .decisions) ?? [:] {
            guard let handling = SubHandling(token: stored.handling) else {
                throw GatewayCore.RestoreError.Detail("decision \(stored.handling) on \(watcher) is no sub-handling")
            }
            decisions[watcher] = UPnPPresenceBridge.Decision(
                handling: handling, until: coding.clock.deadline(milliseconds: stored.until))
        }
    }

    func encode(to encoder: any Encoder) throws {
        let clock = try RecordCoding.of(encoder).clock
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(presence.map { StoredBytes($0.serialized()) }, forKey: .presence)
        try c.encodeIfPresent(publication?.record(clock: clock), forKey: .publication)
        try c.encodeIfPresent(publisher?.record, forKey: .publisher)
        if !decisions.isEmpty {
            let stored = decisions.mapValues {
                StoredDecision(handling: $0.handling.token, until: clock.milliseconds($0.until))
            }
            try c.encode(stored, forKey: .decisions)
        }
    }

    /// A decision as the record holds it: the sub-handling's token and when it lapses.
    private struct StoredDecision: Codable {
        var handling: String
        var until: Int64
    }
}
