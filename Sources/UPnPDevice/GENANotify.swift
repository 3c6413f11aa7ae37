/// An event message to deliver (UDA 1.1 §4.3.2): NOTIFY to the first callback that works.
public struct GENANotify: Sendable, Hashable {
    public var sid: String
    public var callbacks: [String]
    public var sequence: UInt32
    public var body: [UInt8]
}
