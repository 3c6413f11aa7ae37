import PresenceDocuments
import SIPMessages
import SIPStack
import XMLBridge

/// Partial notifications (RFC 5263, documents of RFC 5262) as notifier (flow 2; docs/flows.md,
/// "Partial notifications"): an OMA watcher whose Accept lists `application/pidf-diff+xml` beside
/// PIDF gets `pidf-full` first and after each refresh, then a `pidf-diff` for each change where
/// one can say it (elements replaced, removed or added by `id`); otherwise `pidf-full` again.
/// Every document has the next `version`. The subscriber's side (flow 1's legs) is the bridge's
/// (`EnterpriseWatcherBridge+PartialState.swift`).
extension OMAWatcherNotifier {
    /// A watcher's partial notifications: the version of the last document sent (nil: none
    /// yet) and the presence document it described (nil after a restart: the next one is full).
    struct PartialNotifications: Sendable, Equatable {
        var version: UInt32?
        var last: XMLElement?

        /// Alike for the store (``Journaled``): the version is written when it enters a new block,
        /// as a CSeq is; the document last sent is not kept.
        static func == (a: Self, b: Self) -> Bool {
            (a.version ?? 0) / GatewayCore.sequenceBlock == (b.version ?? 0) / GatewayCore.sequenceBlock
        }
    }

    static let pidfDiffType = "application/pidf-diff+xml"

    /// Whether a presence SUBSCRIBE negotiated PIDF and accepts partial PIDF too (RFC 5263 §4.1).
    static func acceptsPartialPIDF(_ request: SIPRequest, terms: SubscriptionTerms) -> Bool {
        guard terms.bodyType == SIPBodyType.pidf, let accept = try? request.headers.accept else { return false }
        return accept.contains { $0.type == "application" && $0.subtype == "pidf-diff+xml" && $0.q > 0 }
    }

    /// The body a watcher is sent for the PIDF document `full`: itself, or for a watcher of
    /// partial notifications a `pidf-full` (`forceFull`, or nothing to diff against) or a
    /// `pidf-diff`, with the body type to send it as (nil: the negotiated one).
    static func partialBody(_ full: [UInt8], _ partial: inout PartialNotifications?, forceFull: Bool)
        -> (body: [UInt8], type: String?)
    {
        guard var state = partial, let document = try? XMLParser.parse(full) else { return (full, nil) }
        let version = state.version.map { $0 &+ 1 } ?? 0
        defer {
            state.version = version
            state.last = document
            partial = state
        }
        if !forceFull, let last = state.last, let diff = PIDFDiff.diff(from: last, to: document, version: version) {
            return (diff, pidfDiffType)
        }
        return (PIDFDiff.full(document, version: version), pidfDiffType)
    }
}
