public import PresenceDocuments

/// A presentity's containers and their members ([MS-PRES] §1.3.1.3), and the container each
/// watcher resolves to for a category (§3.2.5.3).
public struct ContainerSet: Sendable, Hashable {
    /// Container number → members. Container 0, the default container, is readable by everyone
    /// and has no editable membership (§1.3.1.3.5, §1.3.1.3.3); it need not be listed.
    public var members: [UInt32: [ContainerMember]]
    /// Container number → the categories it holds of the presentity's state
    /// (per-container category selection). A container without an entry holds every category
    /// (``ContainerExposure/all``).
    public var exposure: [UInt32: ContainerExposure]

    public init(_ members: [UInt32: [ContainerMember]] = [:], exposure: [UInt32: ContainerExposure] = [:]) {
        self.members = members
        self.exposure = exposure
    }

    /// What `container` holds: its configured exposure, else every category.
    public func exposure(of container: UInt32) -> ContainerExposure { exposure[container] ?? .all }

    /// Places a presentity's state into its containers, as its publications would be: each
    /// category into every container that exposes it (``ContainerExposure``), and an empty
    /// element of every `wanted` category into containers holding the never-published view.
    /// Without configured containers everything goes into container 0 (readable by everyone,
    /// §1.3.1.3.5). `state` nil (nothing known) places only the never-published views.
    public func publications(of state: [Category]?, wanted: [CategoryName]) -> [Category] {
        let containers = members.isEmpty ? [0] : members.keys.sorted()
        var published: [Category] = []
        for container in containers {
            switch exposure(of: container) {
            case .neverPublished:
                for name in wanted { published.append(Category(name: name, container: container)) }
            case let exposed:
                for var category in state ?? [] where exposed.holds(category.name) {
                    category.container = container
                    published.append(category)
                }
            }
        }
        return published
    }

    /// The container a watcher sees a category from, or nil: blocked for that category (it then
    /// receives an empty category element, indistinguishable from "not published").
    ///
    /// `holding` are the containers that hold at least one publication of the category: only those
    /// take part ("The server considers only containers that contain at least one publication of
    /// the category", §3.2.5.3). The rules, first match wins, highest container
    /// number within a rule:
    /// 1. a `user` member equal to the watcher's URI;
    /// 2. a `domain` member covering the watcher's domain (docs/flows.md, "Domain members": equal or a sub-domain);
    /// 3. `sameEnterprise`, 4. `federated`, 5. `publicCloud`, when the watcher is of that network;
    /// 6. an `everyone` member in a non-zero container — docs/flows.md, "Everyone members":
    ///    absent from §3.2.5.3 but the
    ///    sixth priority of §1.3.1.3.7, so ranked after the network types;
    /// 7. container 0 when it holds the category; else nil.
    ///
    /// docs/flows.md, "Container precedence": the overview's "highest-numbered container wins"
    /// (§1.3.1.3.6) is not used;
    /// §3.2.5.3 ranks by member type first, as it is the normative text.
    public func resolve(_ watcher: WatcherIdentity, holding: Set<UInt32>) -> UInt32? {
        let candidates = holding.filter { $0 != 0 }.sorted(by: >)
        let rules: [(ContainerMember) -> Bool] = [
            { if case .user(let uri) = $0 { uri == watcher.uri } else { false } },
            { if case .domain(let d) = $0 { domain(d, covers: watcher.domain) } else { false } },
            { $0 == .sameEnterprise && watcher.network == .sameEnterprise },
            { $0 == .federated && watcher.network == .federated },
            { $0 == .publicCloud && watcher.network == .publicCloud },
            { $0 == .everyone },
        ]
        for rule in rules {
            if let hit = candidates.first(where: { (members[$0] ?? []).contains(where: rule) }) { return hit }
        }
        return holding.contains(0) ? 0 : nil
    }
}
