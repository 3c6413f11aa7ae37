import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// What a leg's dialog takes from the enterprise: the responses to its SUBSCRIBEs and its
/// NOTIFYs and BENOTIFYs ([MS-PRES] §3.4.5.1.4), read by its ``BatchCategorySubscriber``. The
/// pool answers and sends what the dialog does, and reports to the coordinator what the
/// resources' consumers are to be told (``Report``); each state a report names is merged into
/// the leg's when the coordinator hands it on (``merge(_:into:)``), so that a consumer that an
/// earlier event moved elsewhere is not shown it.
extension EnterpriseLegPool {
    /// What leg `key`'s dialog did, for its consumers.
    struct Report {
        /// The answers, requests and timers, and a closed leg's dialog.
        var output = ComponentOutput()
        /// The resources' state and rejections, in the order the dialog reported them.
        var events: [BatchCategorySubscriber.ResourceEvent] = []
        /// The dialog ended, for this reason (`"481"`: a refresh found it gone).
        var ended: String?
        /// The status of the response it took, when it took one.
        var status: Int?
        /// On a 2xx: the resources (and their consumers) it brought no state for.
        var undelivered: [(resource: String, consumer: Int)] = []
    }

    /// The final response to a SUBSCRIBE of leg `key`; nil when there is no such leg. A closing
    /// leg is forgotten once the response ends it or refuses its unsubscribe (RFC 6665
    /// §4.1.2.3: a 2xx is followed by a final NOTIFY, which must still find the dialog).
    mutating func response(_ key: Int, _ response: SIPResponse, jitter: Double, now: NIODeadline) -> Report? {
        let received = modify(key) { leg in
            let actions = leg.subscriber.receive(response, now: now, jitter: jitter)
            if (200..<300).contains(response.statusCode) { leg.established = true }
            return (actions, closing: leg.closing, ended: leg.subscriber.isTerminated)
        }
        guard let (actions, closing, ended) = received else { return nil }
        if closing {
            return Report(output: response.statusCode >= 300 || ended ? close(key) : ComponentOutput())
        }
        return take(key, actions, status: response.statusCode)
    }

    /// A NOTIFY or BENOTIFY in leg `key`; nil when there is no such leg. A closing leg answers
    /// it and is forgotten when it was the final one.
    mutating func notify(
        _ key: Int, _ request: SIPRequest, id: GatewayCore.ServerRequestID, jitter: Double, now: NIODeadline
    ) -> Report? {
        let received = modify(key) { leg in
            (
                leg.subscriber.receive(notify: request, now: now, jitter: jitter), closing: leg.closing,
                ended: leg.subscriber.isTerminated
            )
        }
        guard let (actions, closing, ended) = received else { return nil }
        guard closing else { return take(key, actions, notifyID: id) }
        var report = Report()
        for case .subscription(.respond(let response)) in actions {
            report.output.actions.append(.respond(id, response))
        }
        if ended { report.output.add(close(key)) }
        return report
    }

    /// What leg `key`'s subscriber did (`actions`), for the response of `status` or the NOTIFY
    /// `notifyID`: its answers (a body that does not parse refused, RFC 3261 §21.4.1, and
    /// nothing of it relayed), its requests marked with the edge's trust, its timers, the
    /// resources' events and its end.
    mutating func take(
        _ key: Int, _ actions: [BatchCategorySubscriber.Action], status: Int? = nil,
        notifyID: GatewayCore.ServerRequestID? = nil
    ) -> Report {
        var report = Report(status: status)
        let unreadable = actions.contains { if case .unreadableBody = $0 { true } else { false } }
        for action in actions {
            switch action {
            case .subscription(.respond(var response)):
                if unreadable, (200..<300).contains(response.statusCode) {
                    response.statusCode = 400
                    response.reasonPhrase = "Unreadable Body"
                }
                if let notifyID { report.output.actions.append(.respond(notifyID, response)) }
            case .subscription(.ended(let reason)):
                report.ended = reason
            case .subscription(let other):
                report.output.actions += GatewayCore.subscriberActions(
                    [other], context: .enterpriseLeg(key), to: .enterprise, trust: trust(of: key))
            case .resources(let events):
                report.events += events
            case .unreadableBody:
                break
            }
        }
        if let status, (200..<300).contains(status), report.ended == nil, let leg = self[key] {
            // A 2xx without data for a resource: its consumer is answered later (by the
            // coordinator, which knows whether it waits).
            let delivered = Set(
                report.events.compactMap { event in
                    if case .categories(let document) = event { return Self.resource(of: document, in: leg) }
                    if case .rejected(let uri, _) = event { return uri }
                    return nil
                })
            report.undelivered = leg.watches.filter { !delivered.contains($0.key) }.sorted { $0.key < $1.key }
                .map { (resource: $0.key, consumer: $0.value) }
        }
        return report
    }

    /// Merges `document` into what leg `key` holds for the resource it is about (each
    /// notification carries the complete set of instances of the categories it names, [MS-PRES]
    /// §3.2.5.3): the resource's consumer and state; nil when the leg serves no consumer of it.
    mutating func merge(_ document: CategoriesDocument, into key: Int) -> (consumer: Int, state: CategoriesDocument)? {
        modify(key) { leg -> (Int, CategoriesDocument)? in
            guard let resource = Self.resource(of: document, in: leg), let consumer = leg.watches[resource] else {
                return nil
            }
            var state = GatewayCore.merge(leg.categories[resource] ?? CategoriesDocument(uri: resource), document)
            state.uri = resource
            leg.categories[resource] = state
            return (consumer, state)
        } ?? nil
    }

    /// The leg resource a categories document is about (its `uri`; a single leg's one resource
    /// when the URI is written differently). The leg's own string is returned, not the
    /// document's: the state kept for the resource then shares its storage with the watch's
    /// (one heap string per pair instead of two).
    private static func resource(of document: CategoriesDocument, in leg: GatewayCore.EnterpriseLeg) -> String? {
        if let match = leg.watches.firstKey(where: { $0 == document.uri }) { return match }
        if let normalized = WatcherIdentity.addressOfRecord(document.uri),
            let match = leg.watches.firstKey(where: { WatcherIdentity.addressOfRecord($0) == normalized })
        {
            return match
        }
        return leg.single ? leg.watches.firstKey { _ in true } : nil
    }
}
