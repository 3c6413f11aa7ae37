public import PresenceDocuments

/// How a presentity served by the gateway treats watchers: the sub-handling decision (RFC 5025,
/// from configuration and pres-rules documents) and the container view (§3.2.5.3).
public struct PresentityPolicy: Sendable, Hashable {
    public var containers: ContainerSet
    public var rules: PresRules
    /// The sub-handling for watchers no rule speaks of, per network. Missing networks get `block`
    /// (RFC 5025 §3.2.1: without a matching rule nothing is permitted).
    public var defaults: [SourceNetwork: SubHandling]

    public init(
        containers: ContainerSet = ContainerSet(), rules: PresRules = PresRules(),
        defaults: [SourceNetwork: SubHandling] = [:]
    ) {
        self.containers = containers
        self.rules = rules
        self.defaults = defaults
    }

    /// The decision for one watcher: the combined sub-handling of the matching pres-rules, else
    /// the default for its network, else `block`.
    public func subHandling(for watcher: WatcherIdentity) -> SubHandling {
        rules.subHandling(for: watcher) ?? defaults[watcher.network] ?? .block
    }

    /// What `watcher` sees of `published` for the `wanted` categories, in the order asked: for
    /// each category the instances of the one container it resolves to, carrying only name,
    /// instance, publishTime and data ([MS-PRES] §2.2.2.1: container, version and expiry are for the
    /// publisher's own view), or an empty category element when it resolves to none (§3.2.5.3
    /// rule 7). A politely blocked watcher resolves to none for every category: it gets exactly
    /// the document of a presentity that never published. nil for `block` and `confirm`, which
    /// see nothing (403, pending).
    public func view(
        of published: [Category], uri: String, for watcher: WatcherIdentity,
        categories wanted: [CategoryName]
    ) -> CategoriesDocument? {
        switch subHandling(for: watcher) {
        case .block, .confirm:
            return nil
        case .politeBlock:
            return Self.view(of: [], uri: uri, containers: containers, watcher: watcher, categories: wanted)
        case .allow:
            return Self.view(of: published, uri: uri, containers: containers, watcher: watcher, categories: wanted)
        }
    }

    static func view(
        of published: [Category], uri: String, containers: ContainerSet, watcher: WatcherIdentity,
        categories wanted: [CategoryName]
    ) -> CategoriesDocument {
        var document = CategoriesDocument(uri: uri)
        for name in wanted {
            let instances = published.filter { $0.name == name }
            let holding = Set(instances.map { $0.container ?? 0 })
            guard let container = containers.resolve(watcher, holding: holding) else {
                document.categories.append(Category(name: name))
                continue
            }
            for publication in instances where (publication.container ?? 0) == container {
                document.categories.append(
                    Category(
                        name: name, instance: publication.instance, publishTime: publication.publishTime,
                        payload: publication.payload))
            }
        }
        return document
    }
}
