/// The identity of the device as its description shows it (UPnP Device Architecture 1.1 §2.3).
public struct DeviceIdentity: Sendable, Hashable {
    /// The UUID of the UDN, without `uuid:` (UDA 1.1 §1.1.4).
    public var uuid: String
    public var friendlyName: String
    public var manufacturer: String
    public var modelName: String
    /// `modelDescription` (UDA 1.1 §2.3: a long description for the end user, under 128
    /// characters); none when nil.
    public var modelDescription: String?
    /// CONFIGID.UPNP.ORG and the `configId` attribute of both documents (UDA 1.1 §2.3, §2.5).
    public var configID: UInt32

    public init(
        uuid: String, friendlyName: String = "PresenceGateway", manufacturer: String = "PresenceGateway",
        modelName: String = "PresenceGateway UPnP Presence", modelDescription: String? = nil, configID: UInt32 = 1
    ) {
        self.uuid = uuid
        self.friendlyName = friendlyName
        self.manufacturer = manufacturer
        self.modelName = modelName
        self.modelDescription = modelDescription
        self.configID = configID
    }
}
