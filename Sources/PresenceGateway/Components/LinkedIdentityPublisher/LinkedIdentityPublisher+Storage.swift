import Foundation
import MSPresenceEvents
import SIPStack

/// How the linked identity publisher's entries are kept by the durable store (``StoredEntry``):
/// the links toward the OMA side by key, the publications received by entity-tag, the SERVICE
/// publishers by enterprise identity.
extension LinkedIdentityPublisher.Link: StoredEntry, Codable {
    static var recordKind: GatewayCore.RecordKind { .linkedPublication }

    var storedDialog: StoredDialog {
        StoredDialog(callID: client?.callID, localTag: client?.localTag, expiresAt: client?.expiresAt)
    }

    private enum CodingKeys: String, CodingKey {
        case oma, enterprise, watch, client, lastBody
    }

    /// An identity no longer configured comes back publishing nowhere: its publication is removed.
    init(from decoder: any Decoder) throws {
        let coding = try RecordCoding.of(decoder)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let oma = try c.decode(String.self, forKey: .oma)
        let enterprise = try c.decode(String.self, forKey: .enterprise)
        let identity =
            coding.configuration.linkedIdentities.first { $0.oma == oma && $0.enterprise == enterprise }
            ?? GatewayConfiguration.LinkedIdentity(
                oma: oma, enterprise: enterprise, publishToEnterprise: false, publishToOMA: false)
        let client = try c.decodeIfPresent(PublicationClient.Record.self, forKey: .client).map {
            try PublicationClient(record: $0, clock: coding.clock)
        }
        self.init(
            identity: identity, watch: try c.decodeIfPresent(Int.self, forKey: .watch), client: client,
            lastBody: try c.decodeIfPresent(StoredBytes.self, forKey: .lastBody)?.bytes)
    }

    func encode(to encoder: any Encoder) throws {
        let clock = try RecordCoding.of(encoder).clock
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(identity.oma, forKey: .oma)
        try c.encode(identity.enterprise, forKey: .enterprise)
        try c.encodeIfPresent(watch, forKey: .watch)
        try c.encodeIfPresent(client?.record(clock: clock), forKey: .client)
        try c.encodeIfPresent(lastBody.map(StoredBytes.init), forKey: .lastBody)
    }
}

/// A publication the gateway's compositor holds for a served identity (RFC 3903 §6), by entity-tag.
extension EventStateCompositor.Publication: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .publication }
    static var numberedKeys: Bool { false }

    var storedDialog: StoredDialog { StoredDialog(expiresAt: expiresAt) }

    static func restored(from record: Record, key: String, coding: RecordCoding) -> Self {
        Self(record: record, clock: coding.clock)
    }
}

/// A SERVICE category publisher ([MS-PRES] §2.2.2.2), by enterprise identity.
extension CategoryPublisher: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .servicePublisher }
    static var numberedKeys: Bool { false }

    var storedDialog: StoredDialog { StoredDialog(callID: callID, localTag: localTag) }

    func record(clock: WallClock) -> Record { record }

    static func restored(from record: Record, key: String, coding: RecordCoding)
        throws(GatewayCore.RestoreError.Detail) -> Self
    {
        try GatewayCore.restored { () throws(SIPStackError) in try CategoryPublisher(record: record) }
    }
}
