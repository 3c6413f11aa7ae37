import CoreMetrics
import Logging
public import NIOCore

/// The refreshes a restore (or a takeover) paced at `recovery-rate` a second (docs/state.md,
/// "After a restart"): how many are still to be sent, as the gauge
/// `gateway_recovery_refreshes_pending` and a log line at each tenth, so a recovery of 100,000
/// subscriptions (100 s at the default pace) can be watched to its end. Confined to the relay's
/// loop.
final class RecoveryRefreshes {
    /// The deadlines of the paced refreshes not yet due, earliest first.
    private var deadlines: [NIODeadline] = []
    private var total = 0
    private var tenths = 0
    private var ticking: RepeatedTask?
    private let gauge: Gauge
    private let eventLoop: any EventLoop
    private let logger: Logger

    init(eventLoop: any EventLoop, logger: Logger, factory: any MetricsFactory) {
        self.eventLoop = eventLoop
        self.logger = logger
        gauge = Gauge(label: "gateway_recovery_refreshes_pending", factory: factory)
        gauge.record(0)
    }

    /// `actions` (a restore's or a takeover's, worked out at `pacedFrom`) with their paced
    /// refreshes moved to start `now`: a restore of 100,000 records takes seconds, and a pace
    /// counted from its beginning would send that many seconds' worth at once. The refreshes
    /// are followed each second until every one is due.
    func follow(_ actions: [GatewayCore.Action], pacedFrom: NIODeadline, now: NIODeadline) -> [GatewayCore.Action] {
        eventLoop.preconditionInEventLoop()
        let delay = max(.nanoseconds(0), now - pacedFrom)
        var paced: [NIODeadline] = []
        let out = actions.map { action -> GatewayCore.Action in
            guard case .schedule(let timer, let deadline) = action, case .refresh = timer, deadline >= pacedFrom else {
                return action
            }
            paced.append(deadline + delay)
            return .schedule(timer, at: deadline + delay)
        }
        guard let last = paced.max() else { return out }
        deadlines = (deadlines.filter { $0 > now } + paced).sorted()
        total = deadlines.count
        tenths = 0
        logger.notice(
            "recovery: \(total) subscriptions to refresh at the configured pace, the last in \((last - now).nanoseconds / 1_000_000_000) s"
        )
        gauge.record(total)
        if ticking == nil {
            ticking = eventLoop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { [self] task in
                if !tick(now: .now()) {
                    task.cancel()
                    ticking = nil
                }
            }
        }
        return out
    }

    /// Updates the gauge and the log; false once none is pending.
    private func tick(now: NIODeadline) -> Bool {
        var due = 0
        var high = deadlines.count
        while due < high {
            let middle = (due + high) / 2
            if deadlines[middle] <= now { due = middle + 1 } else { high = middle }
        }
        deadlines.removeFirst(due)
        gauge.record(deadlines.count)
        let sent = total - deadlines.count
        let reached = total == 0 ? 10 : sent * 10 / total
        if reached > tenths {
            tenths = reached
            logger.notice("recovery: \(sent) of \(total) subscriptions refreshed (\(sent * 100 / max(1, total)) %)")
        }
        return !deadlines.isEmpty
    }

    func stop() {
        ticking?.cancel()
        ticking = nil
    }
}
