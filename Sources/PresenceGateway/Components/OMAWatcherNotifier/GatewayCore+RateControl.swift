import NIOCore
import SIPStack

/// The rate-control timer of an OMA watch (RFC 6446), the notifier's
/// (``OMAWatcherNotifier/rateControlDue(_:state:_:now:)``), lent the enterprise state its leg
/// holds.
extension GatewayCore {
    mutating func rateControlDue(_ key: Int, now: NIODeadline) -> [Action] {
        let state = notifier[key].flatMap { watch in watch.leg.flatMap { legPool[$0]?.categories[watch.resource] } }
        return applyOMAWatch(notifier.rateControlDue(key, state: state, settings, now: now), key, now: now)
    }
}
