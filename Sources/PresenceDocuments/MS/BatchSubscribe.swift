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
        /// subscription) or holding a `subscriptionContext` ([MS-PRES] §2.2.2.4.1).
        public var context: XMLElement?
        public init(uri: String, context: XMLElement? = nil) {
            self.uri = uri
            self.context = context
        }

        /// The `context` of a resource the subscriber has just added to its contact list: the
        /// subscriber asks to join the resource's subscriber list, whose owner is told ([MS-PRES]
        /// §2.2.2.4.1, §3.4.5.1.2; schema §6.13).
        ///
        /// ```
        /// <context> <subscriptionContext majorVersion="1" minorVersion="0">
        ///   <watcher> <contactList/> </watcher>
        /// </subscriptionContext> </context>
        /// ```
        public static let addedAsWatcher: XMLElement = {
            let ns = NS.subscriptionContext
            let watcher = XMLElement(
                XMLName(ns, "watcher"), children: [.element(XMLElement(XMLName(ns, "contactList")))])
            let subscriptionContext = XMLElement(
                XMLName(ns, "subscriptionContext"),
                attributes: [
                    XMLAttribute(XMLName("", "majorVersion"), "1"), XMLAttribute(XMLName("", "minorVersion"), "0"),
                ],
                children: [.element(watcher)])
            return XMLElement(XMLName(NS.batchSubscribe, "context"), children: [.element(subscriptionContext)])
        }()
    }

    public init(uri: String? = nil, name: String? = nil, actions: [Action] = []) {
        self.uri = uri
        self.name = name
        self.actions = actions
    }
}
