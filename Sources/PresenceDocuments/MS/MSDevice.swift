public import XMLBridge

/// The `device` category data ([MS-PRES] §2.2.2.7.2, schema §7.4).
public struct MSDevice: Hashable, Sendable {
    public var endpointID: String?
    public var capabilities: [Capabilities]
    public var timezone: String?
    public var machineName: String?
    public var extensions: [XMLElement]

    public struct Capabilities: Hashable, Sendable {
        public var uri: String?
        public var preferred: Bool?
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
