import NIOCore

/// Flow 1, enterprise watcher → OMA presentity: the enterprise watchers' subscriptions the
/// gateway answers (category, PIDF and msrtc.pidf, [MS-PRES] §3.4.5.1, §4.10, §4.11), the PIDF
/// legs it keeps toward the OMA side for them, and the list subscriptions toward OMA resource
/// list servers that carry those legs (RFC 4662) with the rls-services documents holding them
/// (RFC 4826). Its flow logic is in `Core/GatewayCore+EnterpriseWatchers`,
/// `+EnterpriseDocumentWatchers` and `+OMAResourceLists`; quotas and the dialog index are the
/// coordinator's.
struct EnterpriseWatcherBridge: Sendable {
    // Dense tables, not dictionaries: a dictionary pays each value's bytes for every bucket
    // (1.3–2.7 times the count), see `DenseTable`. Each remembers what changed for the durable
    // store (``JournaledTable``).
    var watches = JournaledTable<GatewayCore.EnterpriseWatch>()
    var legs = JournaledTable<GatewayCore.OMALeg>()
    /// List subscriptions toward OMA resource list servers, by key.
    var lists = JournaledTable<GatewayCore.OMAList>()
    /// The rls-services documents holding them, by document URI.
    var listDocuments: [String: GatewayCore.ListDocument] = [:]
    /// OMA domains whose RLS or XCAP server refused a list, until when lists are not tried there.
    var rlsRefused: [String: NIODeadline] = [:]
    /// The sphere each OMA presentity whose pres-rules have sphere conditions last published (RFC
    /// 4480 §3.12), by address of record: ``GatewayCore/policy(for:)`` decides those conditions
    /// with it.
    var spheres: [String: String] = [:]
}
