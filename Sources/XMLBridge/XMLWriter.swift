/// Writes value trees as namespace-well-formed XML 1.0 in UTF-8.
///
/// Each element is written with the prefix it prefers (`nil` = default
/// namespace); a declaration is added wherever the prefix is not already bound
/// to the element's namespace. Elements whose children are elements only are
/// indented when `indent` is set; elements with any text child are written
/// exactly as they are, so mixed and verbatim content round-trips.
public struct XMLWriter: Sendable {
    public var indent: String?
    public var declaration: Bool

    public init(indent: String? = "  ", declaration: Bool = true) {
        self.indent = indent
        self.declaration = declaration
    }

    public func string(_ root: XMLElement) -> String {
        String(decoding: bytes(root), as: UTF8.self)
    }

    /// The tree as bytes, written through ``XMLStreamWriter`` (the one serializer).
    public func bytes(_ root: XMLElement) -> [UInt8] {
        var out = XMLStreamWriter(indent: indent, declaration: declaration)
        out.element(root)
        return out.finish()
    }

    /// A direct writer with this writer's settings, for codecs that write their values without a tree.
    public func streamWriter(capacity: Int = 2048) -> XMLStreamWriter {
        XMLStreamWriter(indent: indent, declaration: declaration, capacity: capacity)
    }
}
