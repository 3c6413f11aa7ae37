/// What the publisher hands to the delivery loop.
public enum EventDelivery: Sendable, Hashable {
    /// An event message to send.
    case notify(GENANotify)
    /// A subscription ended: nothing more will come for it.
    case ended(sid: String)
}
