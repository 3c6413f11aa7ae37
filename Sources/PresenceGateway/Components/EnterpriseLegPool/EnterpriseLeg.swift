import MSPresenceEvents
import PresenceDocuments
import SIPStack
import _GatewayInternals

/// A leg, the pool's entry (``EnterpriseLegPool``): a category subscription the gateway keeps
/// toward the enterprise for an OMA watcher, single or batched ([MS-PRES] §3.4.5.1), and the
/// consumers of its resources.
extension GatewayCore {
    struct EnterpriseLeg: Codable, Journaled {
        /// The watcher's URI (From and, for batch dialogs, To).
        var watcher: String
        /// The pool GRUU a batch dialog targets; nil for the first batch dialog and single ones.
        var pool: String?
        var single: Bool
        @DialogState var subscriber: BatchCategorySubscriber
        /// Resource → the OMA watch it serves.
        var watches: SmallMap<String, Int>
        /// Resource → enterprise state merged from every notification (each carries the complete
        /// set of instances of the categories it names, [MS-PRES] §3.2.5.3).
        @Transient var categories: SmallMap<String, CategoriesDocument> = [:]
        /// A 2xx was received for it.
        var established = false
        var closing = false
        /// The enterprise peer its SUBSCRIBE was sent to (``GatewayCore/reached(_:for:)``).
        var peer: DialogPeer?
        /// The watcher's network and whether its peer was verified, for the edge marking of its
        /// requests (``EnterpriseLegPool/edgeTrust(network:verified:)``).
        var network: SourceNetwork = .federated
        var verified = false
    }

    /// The categories an OMA watcher's bridge subscribes to (`legacyInterop` is
    /// private and not subscribable).
    static let bridgedCategories: [CategoryName] = [.state, .note, .contactCard, .calendarData, .services]
}
