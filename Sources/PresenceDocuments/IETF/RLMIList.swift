/// An RLMI `list` (RFC 4662 §5, [MS-PRES] §2.2.2.4.2 schema §6.9): in the
/// batch SUBSCRIBE 200 OK it lists only rejected resources.
public struct RLMIList: Hashable, Sendable {
    public var uri: String
    public var version: UInt32
    public var fullState: Bool
    public var cid: String?
    /// RFC 4662 `name` children of the list.
    public var names: [PIDFNote]
    public var resources: [Resource]

    public struct Resource: Hashable, Sendable {
        public var uri: String
        public var names: [PIDFNote]
        public var instances: [Instance]
        public init(uri: String, names: [PIDFNote] = [], instances: [Instance] = []) {
            self.uri = uri
            self.names = names
            self.instances = instances
        }
    }

    /// An `instance`: RFC 4662 defines id, state (active, pending, terminated),
    /// reason and cid; Microsoft adds state `resubscribe`, `statusCode` and `poolFqdn`.
    public struct Instance: Hashable, Sendable {
        public var id: String
        public var state: State
        public var reason: String?
        public var cid: String?
        public var statusCode: Int?
        public var poolFqdn: String?
        public init(
            id: String = "0", state: State, reason: String? = nil, cid: String? = nil, statusCode: Int? = nil,
            poolFqdn: String? = nil
        ) {
            self.id = id
            self.state = state
            self.reason = reason
            self.cid = cid
            self.statusCode = statusCode
            self.poolFqdn = poolFqdn
        }
    }

    /// Instance state: an open vocabulary.
    public struct State: Hashable, Sendable, RawRepresentable, ExpressibleByStringLiteral {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.rawValue = value }
        public static let active: State = "active"
        public static let pending: State = "pending"
        public static let terminated: State = "terminated"
        public static let resubscribe: State = "resubscribe"
    }

    public init(
        uri: String, version: UInt32 = 0, fullState: Bool = false, cid: String? = nil, names: [PIDFNote] = [],
        resources: [Resource] = []
    ) {
        self.uri = uri
        self.version = version
        self.fullState = fullState
        self.cid = cid
        self.names = names
        self.resources = resources
    }
}
