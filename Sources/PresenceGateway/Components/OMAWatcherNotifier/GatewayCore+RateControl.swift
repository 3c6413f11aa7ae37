import NIOCore
import SIPStack

/// The rate-control timer of an OMA watch (RFC 6446), the notifier's
/// (``OMAWatcherNotifier/rateControlDue(_:state:_:now:)``), lent the enterprise state its leg
/// holds.
extension GatewayCore {
    mutating func rateControlDue(_ key: Int, now: NIODeadline) -> [Action] {
        applyOMAWatch(
            notifier.rateControlDue(key, state: enterpriseState(of: key), settings, now: now), key, now: now)
    }
}
