package import NIOCore

/// The timers of many subscriptions on one scheduled task: a binary min-heap of (deadline,
/// owner) and a single NIO task armed for the earliest deadline. A NIO scheduled task costs a
/// promise, a future and closure contexts — hundreds of bytes per subscription — and a cancelled
/// one is removed from the loop's queue by a linear search; here a timer is 16 bytes in the heap.
///
/// Each owner keeps a ``TimerSlot``: moving its deadline later only records it (the queued
/// entry fires early and is queued again for the recorded deadline), moving it earlier queues
/// another entry; entries that no longer match their owner's slot are skipped when they come up.
package struct TimerQueue<Owner: Hashable & Sendable> {
    private var heap: [(deadline: NIODeadline, owner: Owner)] = []
    private var task: Scheduled<Void>?
    private var armedFor: NIODeadline?

    package init() {}

    /// Queues `owner` at `deadline`; `fire` runs on the loop when the earliest deadline comes
    /// (it must call ``due(now:)`` then ``rearm(on:_:)``).
    package mutating func add(
        _ owner: Owner, at deadline: NIODeadline, on loop: any EventLoop,
        _ fire: @escaping @Sendable () -> Void
    ) {
        push((deadline, owner))
        rearm(on: loop, fire)
    }

    /// The entries due at `now`, earliest first, taken off the queue.
    package mutating func due(now: NIODeadline) -> [(deadline: NIODeadline, owner: Owner)] {
        task = nil
        armedFor = nil
        var out: [(deadline: NIODeadline, owner: Owner)] = []
        while let first = heap.first, first.deadline <= now { out.append(pop()) }
        return out
    }

    /// Arms the loop's task for the earliest deadline, unless it already is.
    package mutating func rearm(on loop: any EventLoop, _ fire: @escaping @Sendable () -> Void) {
        guard let first = heap.first?.deadline else {
            task?.cancel()
            task = nil
            armedFor = nil
            if heap.capacity > 1024 { heap = [] }
            return
        }
        if let armedFor, task != nil, armedFor <= first { return }
        task?.cancel()
        armedFor = first
        task = loop.scheduleTask(deadline: first, fire)
    }

    /// Entries queued, including those that will only be skipped.
    package var count: Int { heap.count }

    /// Drops the entries `isStale` picks (those of stopped or moved timers, which would only be
    /// skipped when they came up) and rebuilds the heap. An owner that stops its timer leaves
    /// its entry queued until the deadline; a holder whose owners come and go calls this when
    /// the queue has grown well past its live timers, so the queue stays proportional to them.
    package mutating func removeAll(where isStale: (NIODeadline, Owner) -> Bool) {
        heap.removeAll { isStale($0.deadline, $0.owner) }
        var parent = heap.count / 2 - 1
        while parent >= 0 {
            siftDown(from: parent)
            parent -= 1
        }
        if heap.capacity > 2 * heap.count + 1024 {
            var smaller: [(deadline: NIODeadline, owner: Owner)] = []
            smaller.reserveCapacity(heap.count)
            smaller.append(contentsOf: heap)
            heap = smaller
        }
    }

    private mutating func push(_ item: (deadline: NIODeadline, owner: Owner)) {
        heap.append(item)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func pop() -> (deadline: NIODeadline, owner: Owner) {
        heap.swapAt(0, heap.count - 1)
        let item = heap.removeLast()
        siftDown(from: 0)
        return item
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < heap.count, heap[left].deadline < heap[smallest].deadline { smallest = left }
            if right < heap.count, heap[right].deadline < heap[smallest].deadline { smallest = right }
            if smallest == parent { break }
            heap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

/// One owner's timer in a ``TimerQueue``: when the work is due, and the deadline of the queue
/// entry that stands for it.
///
/// Both are stored as plain deadlines with `.distantFuture` for "none" (16 bytes instead of 32
/// for two optionals: a slot is kept per running timer, two per bridged subscription pair). A
/// timer set for `.distantFuture` never fires, which is what "none" means too.
package struct TimerSlot: Sendable {
    private var dueAt = NIODeadline.distantFuture
    private var queuedAt = NIODeadline.distantFuture

    package init() {}

    /// When the work is due; nil when stopped.
    package var due: NIODeadline? { dueAt == .distantFuture ? nil : dueAt }

    /// Whether the queue entry for `deadline` is this slot's (the one ``came(_:now:)`` acts on).
    package func isQueued(at deadline: NIODeadline) -> Bool { queuedAt != .distantFuture && queuedAt == deadline }

    /// Sets the deadline. Returns the deadline to queue an entry for, when one is needed (none
    /// queued, or the new deadline is earlier than the queued one).
    package mutating func schedule(at deadline: NIODeadline) -> NIODeadline? {
        dueAt = deadline
        guard deadline != .distantFuture, deadline < queuedAt else { return nil }
        queuedAt = deadline
        return deadline
    }

    /// A queue entry for `deadline` came up at `now`. `.fire` when the work is due (the slot
    /// stops), `.requeue(at:)` when the deadline moved later, `.ignore` for an entry that is not
    /// this slot's or a stopped timer.
    package mutating func came(_ deadline: NIODeadline, now: NIODeadline) -> Outcome {
        guard isQueued(at: deadline) else { return .ignore }
        queuedAt = .distantFuture
        guard let due else { return .ignore }
        if now >= due {
            dueAt = .distantFuture
            return .fire
        }
        queuedAt = due
        return .requeue(at: due)
    }

    package enum Outcome: Equatable, Sendable {
        case fire
        case requeue(at: NIODeadline)
        case ignore
    }

    /// Stops the timer (its queued entry is skipped when it comes up).
    package mutating func cancel() { dueAt = .distantFuture }
}
