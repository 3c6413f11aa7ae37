public import XMLBridge

// Optional stored properties are declared `Optional<T>`, not `T?`: a `var x: T?`
// starts out nil, so the initializer's `self.x = x` assigns it a second time,
// and the optimizer then builds the whole value aside and copies it into place
// (a retain and a release per field on every value made). `Optional<T>` has no
// implicit initial value: the initializer's assignment is the only one.

/// The `device` category data ([MS-PRES] §2.2.2.7.2, schema §7.4).
public struct MSDevice: Hashable, Sendable {
    public var endpointID: Optional<String>
    public var capabilities: [Capabilities]
    public var timezone: Optional<String>
    public var machineName: Optional<String>
    public var extensions: [XMLElement]

    public struct Capabilities: Hashable, Sendable {
        public var uri: Optional<String>
        public var preferred: Optional<Bool>
        public var items: [MSCapability]
        public init(uri: String?, preferred: Bool? = nil, items: [MSCapability] = []) {
            self.uri = uri
            self.preferred = preferred
            self.items = items
        }
    }

    public init(
        endpointID: String? = nil, capabilities: [Capabilities] = [], timezone: String? = nil,
        machineName: String? = nil, extensions: [XMLElement] = []
    ) {
        self.endpointID = endpointID
        self.capabilities = capabilities
        self.timezone = timezone
        self.machineName = machineName
        self.extensions = extensions
    }
}
