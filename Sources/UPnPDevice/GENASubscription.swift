public import NIOCore

/// One subscription of a control point (UDA 1.1 §4.1).
public struct GENASubscription: Sendable, Hashable {
    /// `uuid:…`, the SID.
    public var sid: String
    public var callbacks: [String]
    public var controlPoint: String
    public var expires: NIODeadline
    /// The SEQ of the next event message; 0 until the initial event message went out.
    public var nextSequence: UInt32
    /// False until the initial event message is made: no other event is sent before it.
    public var initialSent: Bool
}
