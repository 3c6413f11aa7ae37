import PresenceDocuments
import SIPMessages
import SIPStack
import XMLBridge

/// Event notification filters (RFC 4660, documents of RFC 4661) of OMA watchers (flow 2;
/// docs/flows.md, "Filters"). A presence SUBSCRIBE may carry an `application/simple-filter+xml`
/// body: what it includes decides the categories the gateway asks of the enterprise for that
/// watcher (a filter of the note and the basic status asks for `state` and `note`), and the
/// PIDF the watcher is sent is cut to what the filter selects; its triggers decide which
/// changes are notified.
extension OMAWatcherNotifier {
    struct WatcherFilter: Sendable, Equatable {
        var filter: SimpleFilter
        /// The filter-set as received: kept with the watch's record.
        var document: [UInt8]
        /// The categories asked of the enterprise for it.
        var categories: [CategoryName]
        /// The last full document, for the triggers.
        var last: XMLElement?

        /// Alike for the store (``Journaled``), which keeps the filter as received.
        static func == (a: Self, b: Self) -> Bool { a.document == b.document }
    }

    static let simpleFilterType = "application/simple-filter+xml"

    /// Why a filter is refused: its status (400 for a document that does not parse, 415 for
    /// another body type, 488 for one that cannot be honoured, RFC 4660 §4.2) and the reason.
    struct FilterRefusal: Error {
        var status: Int
        var reason: String
    }

    /// The filter a SUBSCRIBE's body holds for `resource`; nil without a body, or when no
    /// filter of it applies (another resource's, disabled, or removed).
    static func watcherFilter(body: [UInt8], type: String?, resource: String, terms: SubscriptionTerms)
        throws(FilterRefusal) -> WatcherFilter?
    {
        guard !body.isEmpty else { return nil }
        guard type == simpleFilterType else { throw FilterRefusal(status: 415, reason: "Unsupported Media Type") }
        guard terms.bodyType == SIPBodyType.pidf else {
            throw FilterRefusal(status: 488, reason: "Filters Apply To PIDF Only")
        }
        let filters: [SimpleFilter]
        do { filters = try SimpleFilter.filters(bytes: body) } catch {
            // A filter this gateway cannot evaluate is refused rather than half honoured.
            let unsupported = error.code == .notServed
            throw FilterRefusal(
                status: unsupported ? 488 : 400, reason: unsupported ? "Filter Not Supported" : "Bad Filter")
        }
        let applicable = filters.filter {
            $0.enabled && !$0.remove && ($0.uri.map { WatcherIdentity.addressOfRecord($0) == resource } ?? true)
        }
        guard let filter = applicable.first else { return nil }
        guard applicable.count == 1 else { throw FilterRefusal(status: 488, reason: "One Filter Per Resource") }
        return WatcherFilter(filter: filter, document: body, categories: categories(for: filter))
    }

    /// The categories a filter needs of the enterprise ([MS-PRES] §3.7.5.4 maps each into PIDF):
    /// always `state` (the basic status and activities come from it); `note` for a note;
    /// `contactCard` for CIPID (RFC 4482); `services` for capabilities (RFC 5196) and devices;
    /// `calendarData` for the time offset; all of them for a selection of the whole document,
    /// a person or a tuple as such, or no `include` at all.
    static func categories(for filter: SimpleFilter) -> [CategoryName] {
        guard !filter.includes.isEmpty else { return GatewayCore.bridgedCategories }
        var wanted: Set<CategoryName> = [.state]
        for selection in filter.includes {
            switch selection {
            case .namespace(let uri):
                switch uri {
                case NS.cipid: wanted.insert(.contactCard)
                case NS.caps: wanted.insert(.services)
                case NS.rpid: wanted.formUnion([.calendarData, .note])
                default: return GatewayCore.bridgedCategories
                }
            case .path(let path, _):
                let names = path.split(separator: "/").map { step in
                    let name = step.prefix { $0 != "[" }
                    return String(name.split(separator: ":").last ?? name)
                }
                // The whole document, or a tuple or person selected whole, carries everything.
                guard names.count > 1, !(names.count == 2 && ["person", "tuple"].contains(names[1])) else {
                    return GatewayCore.bridgedCategories
                }
                let below = Set(names.dropFirst())
                if below.contains("note") { wanted.insert(.note) }
                if !below.isDisjoint(with: ["display-name", "card", "homepage", "icon"]) {
                    wanted.insert(.contactCard)
                }
                if !below.isDisjoint(with: ["servcaps", "devcaps", "deviceID", "device"]) { wanted.insert(.services) }
                if below.contains("time-offset") { wanted.insert(.calendarData) }
            }
        }
        return GatewayCore.bridgedCategories.filter(wanted.contains)
    }
}
