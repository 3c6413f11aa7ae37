public import XMLBridge

/// A watcher information document (RFC 3858, `application/watcherinfo+xml`): who watches a
/// resource in an event package, and how far each subscription got (RFC 3857 §3.7).
///
/// ```
/// <watcherinfo xmlns="urn:ietf:params:xml:ns:watcherinfo" version state="full|partial">
///   <watcher-list resource package>
///     <watcher id status event display-name? expiration? duration-subscribed? xml:lang?>URI</watcher>*
///   </watcher-list>*
/// </watcherinfo>
/// ```
///
/// `version` counts the documents of one subscription from 0 (RFC 3858 §4.2); a `partial` one
/// carries only the watchers whose state changed, each keyed by its `id` (RFC 3858 §4.4).
public struct WatcherInfo: Hashable, Sendable {
    public enum State: String, Sendable {
        case full
        case partial
    }

    public var version: UInt64
    public var state: State
    public var lists: [WatcherList]

    public init(version: UInt64, state: State, lists: [WatcherList] = []) {
        self.version = version
        self.state = state
        self.lists = lists
    }

    /// The watchers of one resource in one package (RFC 3858 §5.3).
    public struct WatcherList: Hashable, Sendable {
        public var resource: String
        public var package: String
        public var watchers: [Watcher]

        public init(resource: String, package: String, watchers: [Watcher] = []) {
            self.resource = resource
            self.package = package
            self.watchers = watchers
        }
    }

    /// One subscription to the resource (RFC 3858 §5.4).
    public struct Watcher: Hashable, Sendable {
        /// Stable for the subscription's life and unique within the list.
        public var id: String
        /// The watcher's URI (its From, RFC 3857 §3.2).
        public var uri: String
        public var status: Status
        /// What last moved the subscription to `status` (RFC 3857 §3.7).
        public var event: Event
        public var displayName: String?
        /// Seconds until the subscription expires.
        public var expiration: UInt64?
        /// Seconds the subscription has existed.
        public var durationSubscribed: UInt64?

        public init(
            id: String, uri: String, status: Status, event: Event, displayName: String? = nil,
            expiration: UInt64? = nil, durationSubscribed: UInt64? = nil
        ) {
            self.id = id
            self.uri = uri
            self.status = status
            self.event = event
            self.displayName = displayName
            self.expiration = expiration
            self.durationSubscribed = durationSubscribed
        }
    }

    /// A subscription's state (RFC 3857 §3.7).
    public enum Status: String, Sendable, CaseIterable {
        case pending
        case active
        case waiting
        case terminated
    }

    /// The transitions between the states (RFC 3857 §3.7): `subscribe` creates a subscription,
    /// `approved` activates a pending one, `rejected` ends one the presentity refused,
    /// `timeout` one that expired or was ended by its subscriber, `deactivated` and `probation`
    /// ones the server ended (the watcher may retry at once, or later), `giveup` a pending one
    /// nobody decided, `noresource` one whose resource is gone.
    public enum Event: String, Sendable, CaseIterable {
        case subscribe
        case approved
        case deactivated
        case probation
        case rejected
        case timeout
        case giveup
        case noresource
    }
}
