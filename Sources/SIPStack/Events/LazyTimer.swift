public import NIOCore

/// One timer per subscription that is moved without cancelling: NIO removes a cancelled
/// scheduled task from its queue by a linear search, so cancelling on every refresh makes
/// 100,000 subscriptions quadratic. Moving the deadline later only records it; when the task
/// fires early it schedules itself again for the recorded deadline. Moving it earlier cancels
/// (rare: a NOTIFY shortening a subscription).
struct LazyTimer {
    private var task: Scheduled<Void>?
    private var firesAt: NIODeadline?
    /// When the work is due.
    private(set) var due: NIODeadline?

    /// Arms or moves the timer; `fire` runs on the loop at `deadline` (see ``fired(now:)``).
    mutating func schedule(at deadline: NIODeadline, on loop: any EventLoop, _ fire: @escaping @Sendable () -> Void) {
        due = deadline
        if let firesAt, task != nil, firesAt <= deadline { return }
        task?.cancel()
        firesAt = deadline
        task = loop.scheduleTask(deadline: deadline, fire)
    }

    /// The task ran: true when the work is due now; false when the deadline moved later (the
    /// timer is then armed again with `fire`) or the timer was stopped.
    mutating func fired(now: NIODeadline, on loop: any EventLoop, _ fire: @escaping @Sendable () -> Void) -> Bool {
        task = nil
        firesAt = nil
        guard let due else { return false }
        if now >= due {
            self.due = nil
            return true
        }
        firesAt = due
        task = loop.scheduleTask(deadline: due, fire)
        return false
    }

    /// Stops the timer.
    mutating func cancel() {
        task?.cancel()
        task = nil
        firesAt = nil
        due = nil
    }
}
