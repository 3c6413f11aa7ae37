import SIPMessages

extension GatewayConfiguration {
    /// Reads `resource-lists:`, the lists the gateway serves to OMA watchers as a resource list
    /// server (RFC 4662; docs/flows.md, "Resource lists"): each list URI and its members are
    /// addresses of record in the enterprise domains, a member once per list, and no list is a
    /// member of another (lists are not nested here). At most `limit` members per list, the
    /// number of resources the gateway takes in one batch.
    ///
    /// ```yaml
    /// resource-lists:
    ///   "sip:sales@enterprise.example":
    ///     - "sip:alice@enterprise.example"
    ///     - "sip:bob@enterprise.example"
    /// ```
    static func resourceLists(_ node: ConfigurationNode?, enterprise: Domains, limit: Int) throws(ConfigurationError)
        -> [String: [String]]
    {
        guard let node else { return [:] }
        func address(_ node: ConfigurationNode, _ text: String) throws(ConfigurationError) -> String {
            guard let uri = try? SIPURI(text), uri.isSIP, uri.user?.isEmpty == false,
                enterprise.domains.contains(canonicalHost(uri.host)),
                let aor = WatcherIdentity.addressOfRecord(text)
            else { throw node.error("'\(text)' is not a sip:user@host address in an enterprise domain") }
            return aor
        }
        var lists: [String: [String]] = [:]
        for (key, entry) in try node.entries() {
            let list = try address(entry, key)
            guard lists[list] == nil else { throw entry.error("list \(list) is defined twice") }
            var members: [String] = []
            for item in try entry.list() {
                let member = try address(item, try item.string())
                guard !members.contains(member) else { throw item.error("\(member) is already a member") }
                guard member != list else { throw item.error("a list cannot be a member of itself") }
                members.append(member)
            }
            guard !members.isEmpty else { throw entry.error("a list needs at least one member") }
            guard members.count <= limit else {
                throw entry.error("\(members.count) members; at most \(limit) (limits.resources-per-batch)")
            }
            lists[list] = members
        }
        if let nested = lists.values.joined().first(where: { lists[$0] != nil }) {
            throw node.error("\(nested) is a list and a member of another; lists are not nested")
        }
        return lists
    }
}
