import SIPMessages
public import XMLBridge

extension GatewayConfiguration {
    /// Reads `resource-lists:`, the lists the gateway serves to OMA watchers as a resource list
    /// server (RFC 4662; docs/flows.md, "Resource lists"): inline, each list URI with its
    /// members, or the path of an RFC 4826 `rls-services` document, read with the pres-rules
    /// files (``resourceLists(rlsServices:enterprise:limit:)``). Each list URI and member is an
    /// address of record in the enterprise domains, a member once per list, and no list is a
    /// member of another (lists are not nested here). At most `limit` members per list, the
    /// number of resources the gateway takes in one batch.
    ///
    /// ```yaml
    /// resource-lists:
    ///   "sip:sales@enterprise.example":
    ///     - "sip:alice@enterprise.example"
    ///     - "sip:bob@enterprise.example"
    /// # or
    /// resource-lists: /etc/presence-gateway/rls-services.xml
    /// ```
    static func resourceLists(_ node: ConfigurationNode?, enterprise: Domains, limit: Int) throws(ConfigurationError)
        -> (lists: [String: [String]], file: String?)
    {
        guard let node else { return ([:], nil) }
        if let path = try? node.string() {
            guard !path.isEmpty else { throw node.error("expected lists, or the path of an rls-services document") }
            return ([:], path)
        }
        var lists: [String: [String]] = [:]
        for (key, entry) in try node.entries() {
            guard let list = Self.enterpriseAddress(key, enterprise) else {
                throw entry.error("'\(key)' is not a sip:user@host address in an enterprise domain")
            }
            guard lists[list] == nil else { throw entry.error("list \(list) is defined twice") }
            let items = try entry.list()
            var members: [String] = []
            for item in items {
                let text = try item.string()
                guard let member = Self.enterpriseAddress(text, enterprise) else {
                    throw item.error("'\(text)' is not a sip:user@host address in an enterprise domain")
                }
                members.append(member)
            }
            if let (index, message) = Self.listProblem(list, members: members, limit: limit) {
                throw (index.map { items[$0] } ?? entry).error(message)
            }
            lists[list] = members
        }
        if let nested = Self.nestedList(lists) { throw node.error(nested) }
        return (lists, nil)
    }

    static let rlsServicesNamespace = "urn:ietf:params:xml:ns:rls-services"
    static let resourceListsNamespace = "urn:ietf:params:xml:ns:resource-lists"

    /// The lists of an RFC 4826 §4 `rls-services` document: each `service` whose `packages`, when
    /// given, name `presence`, with its `list` of `entry` elements (§3.2). A `resource-list`
    /// reference, a nested `list`, an `external` or an `entry-ref` is not followed: an error, as
    /// is any address or list the inline form refuses. Errors carry line and column.
    public static func resourceLists(rlsServices bytes: [UInt8], enterprise: Domains, limit: Int) throws(XMLError)
        -> [String: [String]]
    {
        let root = try XMLParser.parse(bytes)
        func name(_ namespace: String, _ local: String) -> XMLName { XMLName(namespace, local) }
        guard root.name == name(rlsServicesNamespace, "rls-services") else {
            throw root.error("expected an RFC 4826 rls-services document, found \(root.name)")
        }
        var lists: [String: [String]] = [:]
        for service in root.elements(name(rlsServicesNamespace, "service")) {
            guard let uri = service[attribute: "uri"], let list = enterpriseAddress(uri, enterprise) else {
                throw service.error("a service uri must be a sip:user@host address in an enterprise domain")
            }
            if let packages = service.element(name(rlsServicesNamespace, "packages")),
                !packages.elements(name(rlsServicesNamespace, "package")).contains(where: { $0.text == "presence" })
            {
                continue  // a list of another event package: not served here
            }
            if let reference = service.element(name(rlsServicesNamespace, "resource-list")) {
                throw reference.error("a <resource-list> reference (RFC 4826 §4.2) is not followed: give the <list>")
            }
            guard let body = service.element(name(resourceListsNamespace, "list")) else {
                throw service.error("a service needs a <list> (RFC 4826 §4.1)")
            }
            guard lists[list] == nil else { throw service.error("list \(list) is defined twice") }
            var entries: [XMLElement] = []
            for child in body.elements where child.name.namespace == resourceListsNamespace {
                switch child.name.local {
                case "entry": entries.append(child)
                case "display-name": continue
                default: throw child.error("<\(child.name.local)> (RFC 4826 §3.2) is not followed: list each entry")
                }
            }
            var members: [String] = []
            for entry in entries {
                guard let text = entry[attribute: "uri"], let member = enterpriseAddress(text, enterprise) else {
                    throw entry.error("an entry uri must be a sip:user@host address in an enterprise domain")
                }
                members.append(member)
            }
            if let (index, message) = listProblem(list, members: members, limit: limit) {
                throw (index.map { entries[$0] } ?? service).error(message)
            }
            lists[list] = members
        }
        if let nested = nestedList(lists) { throw root.error(nested) }
        return lists
    }

    /// `text`'s address of record when it is a `sip:user@host` URI in an enterprise domain.
    static func enterpriseAddress(_ text: String, _ enterprise: Domains) -> String? {
        guard let uri = try? SIPURI(text), uri.isSIP, uri.user?.isEmpty == false,
            enterprise.domains.contains(canonicalHost(uri.host))
        else { return nil }
        return WatcherIdentity.addressOfRecord(text)
    }

    /// What is wrong with a list's members, and which member it is (nil: the list as a whole).
    static func listProblem(_ list: String, members: [String], limit: Int) -> (Int?, String)? {
        var seen: Set<String> = []
        for (index, member) in members.enumerated() {
            guard seen.insert(member).inserted else { return (index, "\(member) is already a member") }
            guard member != list else { return (index, "a list cannot be a member of itself") }
        }
        if members.isEmpty { return (nil, "a list needs at least one member") }
        if members.count > limit {
            return (nil, "\(members.count) members; at most \(limit) (limits.resources-per-batch)")
        }
        return nil
    }

    /// A list that is also a member of another, when there is one.
    static func nestedList(_ lists: [String: [String]]) -> String? {
        lists.values.joined().first { lists[$0] != nil }.map {
            "\($0) is a list and a member of another; lists are not nested"
        }
    }
}
