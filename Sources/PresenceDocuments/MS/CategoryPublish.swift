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
        /// Seconds (docs/flows.md, "Publication expires in seconds"); 0 deletes the publication (§4.2.2).
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

        /// The category it publishes, without the publishTime a server stamps on it
        /// (§3.2.5.1.2).
        public var category: Category {
            Category(
                name: categoryName, instance: instance, container: container, version: version, expireType: expireType,
                expires: expires, endpointID: endpointID, payload: payload)
        }
    }

    public init(uri: String, publications: [Publication] = []) {
        self.uri = uri
        self.publications = publications
    }
}
