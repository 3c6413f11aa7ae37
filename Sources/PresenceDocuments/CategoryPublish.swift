public import XMLBridge

/// The body of a category publish SERVICE, `application/msrtc-category-publish+xml`
/// ([MS-PRES] §2.2.2.2.1, schema §6.10).
///
/// ```
/// <publish xmlns=".../rich-presence"> <publications uri>
///   <publication categoryName instance container version expireType expires?
///                endpointId?> data? </publication>* </publications> </publish>
/// ```
public struct CategoryPublish: Hashable, Sendable {
    public var uri: String
    public var publications: [Publication]

    public struct Publication: Hashable, Sendable {
        public var categoryName: CategoryName
        public var instance: UInt32
        public var container: UInt32
        public var version: UInt32
        public var expireType: ExpireType
        /// Seconds (guide Q7); 0 deletes the publication (§4.2.2).
        public var expires: UInt32?
        public var endpointID: String?
        /// The published data; `nil` for a delete.
        public var payload: CategoryPayload?
        public init(
            categoryName: CategoryName, instance: UInt32, container: UInt32, version: UInt32,
            expireType: ExpireType, expires: UInt32? = nil, endpointID: String? = nil, payload: CategoryPayload? = nil
        ) {
            self.categoryName = categoryName
            self.instance = instance
            self.container = container
            self.version = version
            self.expireType = expireType
            self.expires = expires
            self.endpointID = endpointID
            self.payload = payload
        }
    }

    public init(uri: String, publications: [Publication] = []) {
        self.uri = uri
        self.publications = publications
    }
}

/// The 409 Conflict body of a publish, `application/msrtc-fault+xml`
/// ([MS-PRES] §2.2.2.2.3, example §4.2.1 lines 8996-9034). No namespace.
///
/// ```
/// <Fault> <Faultcode>Client.BadCall.WrongDelta</Faultcode>
///   <details> <operation index version curVersion> data? </operation>* </details> </Fault>
/// ```
public struct PublishFault: Hashable, Sendable {
    /// "Protocol client.BadCall.WrongDelta" in §4.2.1, "Client.BadCall.WrongDelta"
    /// in §2.2.2.10.4 (guide Q11): read both, written as given.
    public var faultCode: String
    public var operations: [Operation]

    public struct Operation: Hashable, Sendable {
        /// 1-based position of the publication in the request.
        public var index: Int
        public var version: UInt32?
        public var currentVersion: UInt32?
        /// The current data of that publication, verbatim.
        public var data: [XMLElement]
        public init(index: Int, version: UInt32? = nil, currentVersion: UInt32? = nil, data: [XMLElement] = []) {
            self.index = index
            self.version = version
            self.currentVersion = currentVersion
            self.data = data
        }
    }

    public init(faultCode: String = "Client.BadCall.WrongDelta", operations: [Operation] = []) {
        self.faultCode = faultCode
        self.operations = operations
    }
}
