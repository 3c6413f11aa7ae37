/// A state variable of the SCPD's `<serviceStateTable>` (UDA 1.1 §2.5).
public struct UPnPStateVariable: Hashable, Sendable {
    public var name: String
    /// The UPnP data type (`string`, `i4`; UDA 1.1 §2.5, Table 2-4).
    public var dataType: String
    public var sendEvents: Bool

    public init(_ name: String, _ dataType: String, sendEvents: Bool = false) {
        self.name = name
        self.dataType = dataType
        self.sendEvents = sendEvents
    }
}
