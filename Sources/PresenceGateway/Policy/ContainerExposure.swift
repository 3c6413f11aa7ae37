public import PresenceDocuments

/// Which categories of a served presentity's state a container holds, so that watchers resolving
/// to it see them ([MS-PRES] §1.3.1.3: a container holds publications of categories; §3.2.5.3:
/// "The server considers only containers that contain at least one publication of the
/// category", so a watcher is resolved per category and may see different categories from
/// different containers, or none — rule 7: an empty category element).
public enum ContainerExposure: Sendable, Hashable {
    /// Every category the gateway maps (the behaviour of container 0 and of custom containers).
    case all
    /// Only these categories; the others are not in the container, so its members are resolved
    /// for them by the next §3.2.5.3 rule (or see them empty).
    case only(Set<CategoryName>)
    /// Every category as a presentity that never published shows it (empty category elements):
    /// the offline view the server keeps in container 32000 for blocked watchers ([MS-PRES]
    /// §3.2.6.2, §4.4.2; docs/flows.md, "Containers and polite blocking"). Its members are
    /// resolved to it for every category and see exactly the polite-block view.
    case neverPublished

    /// What a container exposes when the configuration lists only its members: the conventional
    /// meaning of the well-known container numbers ([MS-PRES] examples; the names are the Lync
    /// client's privacy relationships, outside [MS-PRES]; docs/flows.md, "Container catalogue"):
    ///
    /// - 100 (external contacts, `federated` in the examples): `state` and `contactCard`;
    /// - 200 (company, `sameEnterprise`), 300 (workgroup), 400 (friends and family), 0 and
    ///   custom numbers: every category;
    /// - 32000 (blocked): the never-published view.
    public static func wellKnown(_ container: UInt32) -> ContainerExposure {
        switch container {
        case 100: .only([.state, .contactCard])
        case 32_000: .neverPublished
        default: .all
        }
    }

    /// Whether a category with real state is placed into the container.
    public func holds(_ name: CategoryName) -> Bool {
        switch self {
        case .all: true
        case .only(let names): names.contains(name)
        case .neverPublished: false
        }
    }
}
