extension XMLCursor {
    /// True for an element in `namespace` (false for text): `namespaceURI ==
    /// namespace` without copying the URI out of the recording (a retain and a
    /// release), and with the lengths compared first, as in ``is(_:_:)``.
    public func isIn(namespace: String) -> Bool {
        let n = events.nodes[index]
        if n.isText { return false }
        let uri = events.names[Int(n.name)].namespace
        return uri.utf8.count == namespace.utf8.count && uri == namespace
    }
}
