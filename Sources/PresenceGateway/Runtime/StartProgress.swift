import Logging
import Synchronization

/// How far a start has come (README, "Watching a start"). The admin endpoint is bound before the
/// store is opened, so `/health` can say "restoring" with the records restored so far rather than
/// refuse the connection; each tenth of the records is logged, and told to the service manager
/// (systemd's `STATUS=`) through ``observe(_:)``.
public final class StartProgress: Sendable {
    public enum Phase: String, Sendable, Codable {
        /// Opening the store: its lock, schema checks and migrations.
        case opening
        /// Reading the records it kept.
        case reading
        /// Binding the listeners.
        case binding
        /// Restoring the records read into the core.
        case restoring
        /// Serving.
        case ready
    }

    public struct Snapshot: Sendable, Equatable, Codable {
        public var phase: Phase
        /// Records restored so far, and of how many the store kept.
        public var done: Int
        public var of: Int
    }

    private let state = Mutex((snapshot: Snapshot(phase: .opening, done: 0, of: 0), tenths: 0))
    private let observer = Mutex<(@Sendable (Snapshot) -> Void)?>(nil)
    private let logger: Logger

    init(logger: Logger) { self.logger = logger }

    public var snapshot: Snapshot { state.withLock { $0.snapshot } }

    /// `report` is told each phase and each tenth of the records restored.
    public func observe(_ report: @escaping @Sendable (Snapshot) -> Void) {
        observer.withLock { $0 = report }
    }

    /// Enters `phase`; `total` records when restoring starts.
    func enter(_ phase: Phase, of total: Int? = nil) {
        let snapshot = state.withLock { state in
            state.snapshot.phase = phase
            if let total { state.snapshot.of = total }
            return state.snapshot
        }
        tell(snapshot)
    }

    /// `count` more records restored; safe from any thread (the records are read on every core).
    func advance(by count: Int) {
        let crossed: Snapshot? = state.withLock { state in
            state.snapshot.done += count
            guard state.snapshot.of > 0 else { return nil }
            let tenths = min(10, state.snapshot.done * 10 / state.snapshot.of)
            guard tenths > state.tenths else { return nil }
            state.tenths = tenths
            return state.snapshot
        }
        guard let crossed else { return }
        logger.notice("restoring: \(crossed.done) of \(crossed.of) records (\(crossed.done * 100 / crossed.of) %)")
        tell(crossed)
    }

    private func tell(_ snapshot: Snapshot) {
        observer.withLock { $0 }?(snapshot)
    }
}
