public import XMLBridge

/// The `services` category data ([MS-PRES] §2.2.2.7.3, schema §7.5).
public struct MSServices: Hashable, Sendable {
    public var services: [Service]
    public var extensions: [XMLElement]

    public struct Service: Hashable, Sendable {
        public var uri: String
        public var capabilities: [MSCapability]
        /// Elements after the capabilities (e.g. `preferredEndpointId`), kept verbatim.
        public var extensions: [XMLElement]
        public init(uri: String, capabilities: [MSCapability] = [], extensions: [XMLElement] = []) {
            self.uri = uri
            self.capabilities = capabilities
            self.extensions = extensions
        }
    }

    public init(services: [Service] = [], extensions: [XMLElement] = []) {
        self.services = services
        self.extensions = extensions
    }
}
