import MSPresenceEvents
import SIPStack

/// How the linked identity publisher's entries are kept by the durable store (``StoredEntry``):
/// the links toward the OMA side by key, the publications received by entity-tag, the SERVICE
/// publishers by enterprise identity.
extension LinkedIdentityPublisher.Link: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .linkedPublication }

    var storedDialog: StoredDialog {
        StoredDialog(callID: client?.callID, localTag: client?.localTag, expiresAt: client?.expiresAt)
    }

    func record(in core: GatewayCore, clock: WallClock) -> GatewayCore.LinkedPublicationRecord {
        .init(
            oma: identity.oma, enterprise: identity.enterprise, watch: watch, client: client?.record(clock: clock),
            lastBody: lastBody.map(StoredBytes.init))
    }

    /// An identity no longer configured comes back publishing nowhere: its publication is removed.
    static func restored(
        from r: GatewayCore.LinkedPublicationRecord, key: String, core: GatewayCore, clock: WallClock
    ) throws(GatewayCore.RestoreError.Detail) -> Self {
        let identity =
            core.configuration.linkedIdentities.first { $0.oma == r.oma && $0.enterprise == r.enterprise }
            ?? GatewayConfiguration.LinkedIdentity(
                oma: r.oma, enterprise: r.enterprise, publishToEnterprise: false, publishToOMA: false)
        let client = try r.client.map { client throws(GatewayCore.RestoreError.Detail) in
            try GatewayCore.restored { () throws(SIPStackError) in try PublicationClient(record: client, clock: clock) }
        }
        return Self(identity: identity, watch: r.watch, client: client, lastBody: r.lastBody?.bytes)
    }
}

/// A publication the gateway's compositor holds for a served identity (RFC 3903 §6), by entity-tag.
extension EventStateCompositor.Publication: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .publication }
    static var numberedKeys: Bool { false }

    var storedDialog: StoredDialog { StoredDialog(expiresAt: expiresAt) }

    func record(in core: GatewayCore, clock: WallClock) -> Record { record(clock: clock) }

    static func restored(from record: Record, key: String, core: GatewayCore, clock: WallClock) -> Self {
        Self(record: record, clock: clock)
    }
}

/// A SERVICE category publisher ([MS-PRES] §2.2.2.2), by enterprise identity.
extension CategoryPublisher: StoredEntry {
    static var recordKind: GatewayCore.RecordKind { .servicePublisher }
    static var numberedKeys: Bool { false }

    var storedDialog: StoredDialog { StoredDialog(callID: callID, localTag: localTag) }

    func record(in core: GatewayCore, clock: WallClock) -> Record { record }

    static func restored(from record: Record, key: String, core: GatewayCore, clock: WallClock)
        throws(GatewayCore.RestoreError.Detail) -> Self
    {
        try GatewayCore.restored { () throws(SIPStackError) in try CategoryPublisher(record: record) }
    }
}
