public import XMLBridge

/// The body of a category SUBSCRIBE, `application/msrtc-adrl-categorylist+xml`
/// ([MS-PRES] §2.2.2.4.1, schemas §6.8).
///
/// ```
/// <batchSub uri? name?> <action name="subscribe|unsubscribe" id?>
///   <adhocList> <resource uri> <context>?</resource>* </adhocList>
///   <categoryList xmlns=".../categorylist"> <category name/>* </categoryList>
/// </action>* </batchSub>
/// ```
public struct BatchSubscribe: Hashable, Sendable {
    /// Both attributes are ignored by the server but written by clients.
    public var uri: String?
    public var name: String?
    public var actions: [Action]

    public struct Action: Hashable, Sendable {
        public enum Kind: String, Hashable, Sendable { case subscribe, unsubscribe }
        public var kind: Kind
        public var id: String?
        public var resources: [Resource]
        public var categories: [CategoryName]
        public init(kind: Kind, id: String? = nil, resources: [Resource] = [], categories: [CategoryName] = []) {
            self.kind = kind
            self.id = id
            self.resources = resources
            self.categories = categories
        }
    }

    public struct Resource: Hashable, Sendable {
        public var uri: String
        /// The `context` element, verbatim: empty (asserting an earlier
        /// subscription) or holding a `subscriptionContext` ([MS-PRES] lines 2334-2374).
        public var context: XMLElement?
        public init(uri: String, context: XMLElement? = nil) {
            self.uri = uri
            self.context = context
        }
    }

    public init(uri: String? = nil, name: String? = nil, actions: [Action] = []) {
        self.uri = uri
        self.name = name
        self.actions = actions
    }
}

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
        public init(id: String = "0", state: State, reason: String? = nil, cid: String? = nil, statusCode: Int? = nil, poolFqdn: String? = nil) {
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

    public init(uri: String, version: UInt32 = 0, fullState: Bool = false, cid: String? = nil, names: [PIDFNote] = [], resources: [Resource] = []) {
        self.uri = uri
        self.version = version
        self.fullState = fullState
        self.cid = cid
        self.names = names
        self.resources = resources
    }
}

/// The multipart/related body of a category SUBSCRIBE's 200 OK (and of RLMI
/// notifications): an RLMI part, then one categories document per accepted
/// resource ([MS-PRES] §2.2.2.4.2, RFC 2387, RFC 4662 §5).
public struct BatchSubscribeResponse: Hashable, Sendable {
    public var list: RLMIList
    public var categories: [CategoriesDocument]
    public init(list: RLMIList, categories: [CategoriesDocument] = []) {
        self.list = list
        self.categories = categories
    }
}
