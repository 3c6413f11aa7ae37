import Foundation
import GatewayState
import Logging
import Metrics
import NIOCore

/// Carries the core's state changes to the durable store (docs/state.md, "What is written
/// when") and holds back what must not go out before they are written.
///
/// - One transaction at a time: what the core changes while one is under way is gathered
///   (each record's last change only) and written in the next, so the batch grows with the load
///   and a write costs one commit however many changes it carries.
/// - A SIP message that follows from a change (the 200 OK that answers a SUBSCRIBE, the request
///   that makes a subscription on the other side) waits until the change is committed: no
///   dialog is answered 200 that a crash could lose. Messages after it wait behind it, so their
///   order never changes; while nothing waits, messages that change nothing durable (a NOTIFY
///   relayed in an existing pair) go out at once.
/// - When a write fails, the store is marked unavailable (new subscriptions are refused with
///   503 by the runtime, existing pairs go on), what waited goes out anyway, and the changes are
///   written again every second until the store takes them.
///
/// Confined to the runtime's event loop, hence `@unchecked Sendable`: ``drain(timeout:)``,
/// ``storeAnswered()`` and ``storeFailed(_:)`` check it in release builds too; ``admit(_:changes:)``,
/// called for every step of the core, relies on the check of the runtime's entry point that
/// made the step, and what it schedules runs on the loop by construction.
final class StateWriter: @unchecked Sendable {
    let store: any StateStore
    private let eventLoop: any EventLoop
    private let logger: Logger
    /// Sends or answers what was held, once its changes are committed.
    var release: ([GatewayCore.Action]) -> Void = { _ in }
    /// Records another node took over while this one still held them (docs/state.md, "Several
    /// nodes"): the runtime lets them go without a word.
    var disowned: ([StateRecordID]) -> Void = { _ in }
    /// ``available`` changed: `/health` shows it.
    var availabilityChanged: () -> Void = {}

    /// Changes not yet handed to the store, each record's last.
    private var pending: [RecordID: StateChange] = [:]
    /// Messages waiting, in order, each with the batch that must be committed first. A ring:
    /// under a steady load it may never be empty, and what went out must not stay referenced.
    private var held = CircularBuffer<(batch: UInt64, action: GatewayCore.Action)>()
    /// The batch `pending` goes into.
    private var openBatch: UInt64 = 1
    private var writing = false
    private var flushQueued = false
    private var retryDelay = TimeAmount.seconds(1)
    /// Whether the last write succeeded.
    private(set) var available = true
    private(set) var unavailableSince: Date?

    private let writes: Counter
    private let records: Counter
    private let failures: Counter
    private let up: Gauge
    private let waiting: Gauge

    private struct RecordID: Hashable {
        var kind: String
        var key: String
    }

    /// Its series go to `factory` (each shard's gauges are its own: GatewayMetricsFactory).
    init(store: any StateStore, eventLoop: any EventLoop, logger: Logger, factory: any MetricsFactory) {
        self.store = store
        self.eventLoop = eventLoop
        self.logger = logger
        writes = Counter(label: "gateway_state_writes_total", factory: factory)
        records = Counter(label: "gateway_state_records_written_total", factory: factory)
        failures = Counter(label: "gateway_state_write_failures_total", factory: factory)
        up = Gauge(label: "gateway_state_store_up", factory: factory)
        waiting = Gauge(label: "gateway_state_pending_changes", factory: factory)
        up.record(1)
        waiting.record(0)
    }

    /// The actions of one step of the core with the changes it made: returns those to carry out
    /// now; the rest wait for their batch.
    func admit(_ actions: [GatewayCore.Action], changes: [StateChange]) -> [GatewayCore.Action] {
        let batch: UInt64
        if !changes.isEmpty {
            for change in changes { pending[RecordID(kind: change.kind, key: change.key)] = change }
            batch = openBatch
            queueFlush()
        } else if let last = held.last {
            batch = last.batch
        } else {
            return actions
        }
        var now: [GatewayCore.Action] = []
        for action in actions {
            switch action {
            case .respond, .send, .writeListDocument, .xcapDocumentChanged, .upnpEvent: held.append((batch, action))
            case .schedule, .cancel: now.append(action)
            }
        }
        return now
    }

    /// Changes or messages are waiting.
    var isIdle: Bool { pending.isEmpty && !writing && held.isEmpty }

    private func queueFlush() {
        guard !flushQueued, !writing else { return }
        flushQueued = true
        // After the rest of this event loop turn: its other steps' changes join the batch.
        eventLoop.execute { [self] in
            flushQueued = false
            flush()
        }
    }

    private func flush() {
        guard !writing, !pending.isEmpty else { return }
        let batch = openBatch
        openBatch += 1
        let changes = Array(pending.values)
        pending = [:]
        writing = true
        waiting.record(changes.count)
        let store = self.store
        eventLoop.makeFutureWithTask { try await store.write(changes) }.whenComplete { [self] result in
            writing = false
            switch result {
            case .success(let lost):
                if !lost.isEmpty { disowned(lost) }
                writes.increment()
                records.increment(by: Int64(changes.count))
                markAvailable("\(changes.count) changes written")
                releaseHeld(upTo: batch)
                if !pending.isEmpty { flush() }
            case .failure(let error):
                failures.increment()
                storeFailed(error)
                // What was held goes out: the pairs go on, only their durability waits.
                releaseHeld(upTo: batch)
                for change in changes {
                    let id = RecordID(kind: change.kind, key: change.key)
                    if pending[id] == nil { pending[id] = change }
                }
                let delay = retryDelay
                retryDelay = min(retryDelay * 2, .seconds(10))
                eventLoop.scheduleTask(in: delay) { [self] in flush() }
            }
            waiting.record(pending.count)
        }
    }

    /// The store answered (a write, or a shared store's lease renewal): new subscriptions are
    /// taken again, and what waited for it is written now rather than at the next retry.
    func storeAnswered() {
        eventLoop.preconditionInEventLoop()
        if !available, !writing, !pending.isEmpty { return flush() }
        if pending.isEmpty, !writing { markAvailable("nothing waited") }
    }

    private func markAvailable(_ what: String) {
        retryDelay = .seconds(1)
        guard !available else { return }
        logger.notice("state store \(store.location) available again; \(what)")
        available = true
        unavailableSince = nil
        up.record(1)
        availabilityChanged()
    }

    /// The store did not answer (a write, or a shared store's lease renewal, failed): new
    /// subscriptions are refused with 503 until it answers again.
    func storeFailed(_ error: any Error) {
        eventLoop.preconditionInEventLoop()
        guard available else { return }
        logger.error(
            """
            state store \(store.location) unavailable: \(error); new subscriptions are refused with 503 \
            until it takes writes again, existing pairs go on
            """)
        available = false
        unavailableSince = Date()
        up.record(0)
        availabilityChanged()
    }

    private func releaseHeld(upTo batch: UInt64) {
        var ready: [GatewayCore.Action] = []
        while let first = held.first, first.batch <= batch {
            ready.append(first.action)
            held.removeFirst()
        }
        if !ready.isEmpty { release(ready) }
    }

    /// Writes everything pending, waiting for a write under way; at most `timeout`. For a stop
    /// that keeps the state (`shutdown: keep`). Returns whether all of it was written.
    func drain(timeout: TimeAmount) -> EventLoopFuture<Bool> {
        eventLoop.preconditionInEventLoop()
        let deadline = NIODeadline.now() + timeout
        let promise = eventLoop.makePromise(of: Bool.self)
        func check() {
            if pending.isEmpty && !writing { return promise.succeed(available) }
            guard NIODeadline.now() < deadline else { return promise.succeed(false) }
            if !writing { flush() }
            eventLoop.scheduleTask(in: .milliseconds(10)) { check() }
        }
        check()
        return promise.futureResult
    }
}
