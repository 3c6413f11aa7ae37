public import XMLBridge

extension SimpleFilter {
    /// What the watcher is sent of `presence` (RFC 4661 §3.5): each included element whole,
    /// inside its ancestors (kept with their attributes and nothing else), without the excluded
    /// ones; with no `include`, all of it but the excluded. A tuple that is kept always keeps
    /// its `status`, which PIDF requires (RFC 3863 §4.1.4). The root declares no namespace of
    /// its own: each is declared where the result uses it, so the same parts give the same
    /// bytes whatever else the document held.
    public func apply(to presence: XMLElement) -> XMLElement {
        let excluded = Set(excludes.flatMap { Self.paths($0, in: presence) })
        var result: XMLElement
        if includes.isEmpty {
            result = Self.copy(presence, at: [], whole: [[]], within: [], excluded: excluded)
        } else {
            let whole = Set(includes.flatMap { Self.paths($0, in: presence) })
            var within: Set<[Int]> = []
            for path in whole {
                for length in 0..<path.count { within.insert(Array(path.prefix(length))) }
            }
            result = Self.copy(presence, at: [], whole: whole, within: within, excluded: excluded)
        }
        result.namespaceDeclarations = []
        return result
    }

    /// Whether the change from `old` to `new` (full documents) calls for a notification: always
    /// without triggers or without an earlier state; otherwise when one trigger fires (RFC 4661
    /// §3.6): `changed` when the selected elements' text differs (from `from`, to `to`, by at
    /// least `by`), `added` when more are selected, `removed` when fewer.
    public func triggered(from old: XMLElement?, to new: XMLElement) -> Bool {
        guard !triggers.isEmpty, let old else { return true }
        return triggers.contains { trigger in
            let selection = Selection.path(trigger.path, namespaces: trigger.namespaces)
            let before = Self.paths(selection, in: old).map { Self.element(at: $0, in: old).text }
            let after = Self.paths(selection, in: new).map { Self.element(at: $0, in: new).text }
            switch trigger.kind {
            case .added: return after.count > before.count
            case .removed: return after.count < before.count
            case .changed:
                guard before != after else { return false }
                if let from = trigger.from, !before.contains(from) { return false }
                if let to = trigger.to, !after.contains(to) { return false }
                if let by = trigger.by {
                    guard let a = before.first.flatMap(Double.init), let b = after.first.flatMap(Double.init) else {
                        return false
                    }
                    return abs(b - a) >= by
                }
                return true
            }
        }
    }

    static func paths(_ selection: Selection, in root: XMLElement) -> [[Int]] {
        switch selection {
        case .path(let path, let namespaces):
            guard let selector = try? Selector(path, namespaces: SimpleFilter.scope(namespaces)) else { return [] }
            return selector.locateAll(in: root)
        case .namespace(let uri):
            var found: [[Int]] = []
            func walk(_ e: XMLElement, _ path: [Int]) {
                if e.name.namespace == uri {
                    found.append(path)
                    return
                }
                for (i, child) in e.children.enumerated() {
                    if case .element(let c) = child { walk(c, path + [i]) }
                }
            }
            walk(root, [])
            return found
        }
    }

    static func element(at path: [Int], in root: XMLElement) -> XMLElement {
        var current = root
        for i in path {
            guard case .element(let child) = current.children[i] else { break }
            current = child
        }
        return current
    }

    private static func copy(
        _ e: XMLElement, at path: [Int], whole: Set<[Int]>, within: Set<[Int]>, excluded: Set<[Int]>
    ) -> XMLElement {
        var out = e
        let keepAll = whole.contains(path)
        var children: [XMLNode] = []
        for (i, child) in e.children.enumerated() {
            let childPath = path + [i]
            switch child {
            case .text:
                if keepAll { children.append(child) }
            case .element(let c):
                guard !excluded.contains(childPath) else { continue }
                if keepAll {
                    children.append(
                        .element(copy(c, at: childPath, whole: [childPath], within: [], excluded: excluded)))
                } else if whole.contains(childPath) || within.contains(childPath) {
                    children.append(.element(copy(c, at: childPath, whole: whole, within: within, excluded: excluded)))
                } else if e.name == XMLName(NS.pidf, "tuple"), c.name == XMLName(NS.pidf, "status") {
                    children.append(child)
                }
            }
        }
        out.children = children
        return out
    }
}
