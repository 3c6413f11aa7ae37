import PresenceDocuments
import SIPMessages
import SIPStack
import XMLBridge

/// Partial notifications (RFC 5263, documents of RFC 5262) as subscriber (flow 1, with
/// `oma.partial-notifications`; docs/flows.md, "Partial notifications"): a leg's `pidf-full` or
/// PIDF is kept, each `pidf-diff` of the next version applied to it; a diff out of sequence or
/// that does not apply makes the leg refresh its subscription for full state, and diffs are
/// ignored until that state arrives.
extension EnterpriseWatcherBridge {
    /// A leg's partial notifications from the OMA side.
    enum ReceivedPartialState: Sendable {
        /// A diff did not follow: the leg asked for full state and waits for it.
        case awaitingFull
        /// The last full state, and its version when it had one.
        case base(version: UInt32?, document: XMLElement)
    }

    /// The PIDF document of a leg's NOTIFY body (`application/pidf+xml` or, with partial
    /// notifications, `application/pidf-diff+xml`), with the leg's partial state moved on.
    /// `.unreadable`: the body does not parse (the NOTIFY is refused, 400). `.needsFullState`:
    /// a diff out of sequence or that does not apply (the leg refreshes for full state).
    enum LegBody {
        case none
        case document(PIDFDocument)
        case unreadable
        case needsFullState
        case ignored
    }

    static func legBody(_ request: SIPRequest, _ leg: inout GatewayCore.OMALeg) -> LegBody {
        guard !request.body.isEmpty, let type = (try? request.headers.contentType)?.mediaType else { return .none }
        switch type {
        case SIPBodyType.pidf:
            guard let document = try? PIDFDocument(bytes: request.body) else { return .unreadable }
            // Kept only by a leg that has had partial notifications: the others relay as before.
            if leg.partialBox != nil, let tree = try? XMLParser.parse(request.body) {
                leg.partial = .base(version: nil, document: tree)
            }
            return .document(document)
        case OMAWatcherNotifier.pidfDiffType:
            guard let body = try? PIDFDiff(bytes: request.body) else { return .unreadable }
            switch body {
            case .full(let version, let presence):
                guard let document = try? PIDFDocument(xml: presence) else { return .unreadable }
                leg.partial = .base(version: version, document: presence)
                return .document(document)
            case .diff(let version, let operations):
                guard case .base(let last, var tree) = leg.partial else {
                    // No state to apply it to: ask for it once, then wait for it.
                    if case .awaitingFull = leg.partial { return .ignored }
                    leg.partial = .awaitingFull
                    return .needsFullState
                }
                // RFC 5263 §4.3: a diff applies only to the version before it.
                if let last, let version, version != last &+ 1 {
                    leg.partial = .awaitingFull
                    return .needsFullState
                }
                do {
                    try PIDFDiff.apply(operations, to: &tree)
                    let document = try PIDFDiff.document(tree)
                    leg.partial = .base(version: version, document: tree)
                    return .document(document)
                } catch {
                    leg.partial = .awaitingFull
                    return .needsFullState
                }
            }
        default:
            return .none
        }
    }
}
