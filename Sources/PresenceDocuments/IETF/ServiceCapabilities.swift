public import XMLBridge

/// `caps:servcaps` (RFC 5196 §3): what a service supports.
public struct ServiceCapabilities: Hashable, Sendable {
    /// Boolean capabilities (audio, application, data, control, video, text,
    /// message, automata, isfocus), in the order RFC 5196 §6's schema requires
    /// (the codec sorts them so that output validates and round-trips).
    public var flags: [Flag]
    /// List capabilities (methods, event-packages, extensions, schemes,
    /// languages, type, class, duplex, actor, priority), in schema order like `flags`.
    public var lists: [List]
    public var descriptions: [PIDFNote]
    public var extensions: [XMLElement]

    public struct Flag: Hashable, Sendable {
        public var name: String
        public var value: Bool
        public init(_ name: String, _ value: Bool) {
            self.name = name
            self.value = value
        }
    }

    /// A capability with `<supported>` and `<notsupported>` children. Each
    /// entry is the child element's local name, or its text when it has text
    /// (`<caps:s>sip</caps:s>`, `<caps:l>en</caps:l>`, `<caps:type>text/plain</caps:type>`).
    public struct List: Hashable, Sendable {
        public var name: String
        public var supported: [String]
        public var notSupported: [String]
        public init(_ name: String, supported: [String] = [], notSupported: [String] = []) {
            self.name = name
            self.supported = supported
            self.notSupported = notSupported
        }
    }

    public init(flags: [Flag] = [], lists: [List] = [], descriptions: [PIDFNote] = [], extensions: [XMLElement] = []) {
        self.flags = flags
        self.lists = lists
        self.descriptions = descriptions
        self.extensions = extensions
    }

    /// The value of a boolean capability, if stated.
    public func flag(_ name: String) -> Bool? { flags.first { $0.name == name }?.value }
}
