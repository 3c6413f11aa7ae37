internal import NIOCore

/// The transaction layer's timers (RFC 3261 §17: A–K and the TU deadline), kept in one FIFO per
/// delay with one NIO task per FIFO for its earliest entry.
///
/// Why not one NIO task per timer: NIO cancels a scheduled task by a linear search of its whole
/// task heap. At 3,000 requests/s a UDP server transaction's Timer J (64·T1 = 32 s) and TU
/// deadline keep about 200,000 tasks scheduled, and every answered transaction cancelled one, so
/// each cancel scanned them all (the gateway's relay benchmark). Here a timer is
/// never cancelled: the callback checks whether it is still wanted (the layer keeps a token per
/// running timer), and an unwanted one only costs its FIFO slot until its deadline.
///
/// All timers started with the same delay expire in the order they were started, so each FIFO
/// stays sorted by deadline without a heap.
final class SIPTimerQueue: @unchecked Sendable {
    // @unchecked: confined to `eventLoop` (the layer's loop); NIO's task closures must be
    // Sendable, and they run on that loop.
    private struct Entry {
        var deadline: NIODeadline
        var fire: () -> Void
    }

    private let eventLoop: any EventLoop
    private var queues: [TimeAmount: CircularBuffer<Entry>] = [:]

    init(eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    /// Runs `fire` on the loop `delay` from now (by the loop's clock, so test loops that advance
    /// time drive it too).
    func schedule(in delay: TimeAmount, _ fire: @escaping () -> Void) {
        let deadline = eventLoop.now + delay
        let entry = Entry(deadline: deadline, fire: fire)
        if queues[delay]?.append(entry) == nil {
            queues[delay] = CircularBuffer(CollectionOfOne(entry))
            arm(delay, at: deadline)
        }
    }

    private func arm(_ delay: TimeAmount, at deadline: NIODeadline) {
        eventLoop.scheduleTask(deadline: deadline) { [self] in self.expire(delay) }
    }

    /// Fires every entry of the `delay` FIFO that is due, then re-arms for the next one (always
    /// later than now, so this makes progress) or drops the empty FIFO.
    private func expire(_ delay: TimeAmount) {
        let now = eventLoop.now
        while let head = queues[delay]?.first, head.deadline <= now {
            queues[delay]?.removeFirst()
            head.fire()
        }
        if let head = queues[delay]?.first {
            arm(delay, at: head.deadline)
        } else {
            queues[delay] = nil
        }
    }
}
