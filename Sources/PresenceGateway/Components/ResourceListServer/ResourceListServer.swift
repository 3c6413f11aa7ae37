/// The resource lists the gateway serves to OMA watchers (RFC 4662; docs/flows.md, "Resource
/// lists"). A list subscription is an OMA watcher's dialog, and so an OMA watch of the notifier,
/// which answers, refreshes and expires it as any other; what makes it a list is kept here: its
/// members, each with the back-end watch that serves it, and its RLMI version. Each member's
/// back-end watch is an OMA watch too (it joins the watcher's category dialogs toward the
/// enterprise as a single watch would), and this component knows which list it serves. Its flow
/// logic is `GatewayCore+ResourceLists` in this folder.
///
/// Both tables are private: a list is opened, changed in place (``modify(_:_:)``) and removed
/// here, and the members' owners follow its members, so no caller keeps the two in step. What
/// a list change means for the store is the list watch's record, which the notifier writes
/// (``takeChanged()``; `OMAWatcherNotifier+Storage`). The notifier holds this component
/// (``OMAWatcherNotifier/lists``).
struct ResourceListServer: Sendable {
    /// The lists, by the key of their list watch.
    private var lists = JournaledTable<GatewayCore.ResourceList>()
    /// Each member's back-end watch → the key of the list watch it serves.
    private var owners: [Int: Int] = [:]

    /// The list the watch `key` subscribed to, when it is a list subscription.
    subscript(key: Int) -> GatewayCore.ResourceList? { lists[key] }

    func isList(_ key: Int) -> Bool { lists[key] != nil }

    /// The list watch that the member watch `key` serves, when it serves one.
    func owner(of key: Int) -> Int? { owners[key] }

    /// Members' back-end watches, which are no watcher's subscription of their own (for metrics).
    var memberWatches: Int { owners.count }

    /// A list subscription `key` with its members.
    mutating func open(_ key: Int, _ list: GatewayCore.ResourceList) {
        lists[key] = list
        own(list.members, by: key)
    }

    /// Changes a list in place; a member watch that leaves it (ended or dropped) no longer
    /// serves it, one that joins does. nil when there is no such list.
    mutating func modify<R>(_ key: Int, _ body: (inout GatewayCore.ResourceList) -> R) -> R? {
        guard let before = lists[key]?.members.compactMap(\.watch),
            let (result, after) = lists.modify(key, { list in (body(&list), list.members.compactMap(\.watch)) })
        else { return nil }
        if before != after {
            for watch in before where owners[watch] == key { owners[watch] = nil }
            for watch in after { owners[watch] = key }
        }
        return result
    }

    /// The list subscription `key` ended: its list, whose member watches the caller ends.
    mutating func remove(_ key: Int) -> GatewayCore.ResourceList? {
        memberGone(key)
        guard isList(key) else { return nil }
        let list = lists.removeValue(forKey: key)
        release(list, of: key)
        return list
    }

    /// The member watch `key` is gone (its list keeps the member, ended: ``modify(_:_:)``).
    mutating func memberGone(_ key: Int) { owners[key] = nil }

    /// Puts back a list as the store held it, or a member's owner.
    mutating func restore(_ key: Int, list: GatewayCore.ResourceList?, owner: Int?) {
        if let list {
            lists.restore(key, list)
            own(list.members, by: key)
        }
        if let owner { owners[key] = owner }
    }

    /// Lets go of a list or member watch without a record: another node holds it now.
    mutating func forget(_ key: Int) {
        memberGone(key)
        release(lists.forget(key), of: key)
    }

    private mutating func own(_ members: [GatewayCore.ResourceList.Member], by key: Int) {
        for case let watch? in members.map(\.watch) { owners[watch] = key }
    }

    /// The member watches of the list `key`, gone with it, serve no list.
    private mutating func release(_ list: GatewayCore.ResourceList?, of key: Int) {
        for case let watch? in list?.members.map(\.watch) ?? [] where owners[watch] == key { owners[watch] = nil }
    }

    // MARK: Journal

    var journaling: Bool {
        get { lists.journaling }
        set { lists.journaling = newValue }
    }

    mutating func beginQuiet() { lists.beginQuiet() }
    mutating func endQuiet() { lists.endQuiet() }
    /// The list watches whose list changed what their record keeps.
    mutating func takeChanged() -> Set<Int> { lists.takeChanged() }
}
