import SIPMessages
import _GatewayInternals

/// The tables of the event layer.
enum SharedValues {
    static let addresses = SharedValueTable<SIPAddress>()
    static let terms = SharedValueTable<SubscriptionTerms>()
}
