import NIOCore
import NIOEmbedded
@testable import SIPStack
import Testing

/// The transaction layer's timer FIFOs, driven by an `EmbeddedEventLoop`'s clock.
@Suite struct SIPTimerQueueTests {
    /// Records what fired, in order (the loop is single-threaded).
    private final class Log: @unchecked Sendable {
        var fired: [String] = []
    }

    @Test func timersFireAtTheirDeadlinesInDeadlineOrderAcrossDelays() {
        let loop = EmbeddedEventLoop()
        let queue = SIPTimerQueue(eventLoop: loop)
        let log = Log()
        queue.schedule(in: .seconds(32)) { log.fired.append("J1") }
        queue.schedule(in: .milliseconds(500)) { log.fired.append("E1") }
        loop.advanceTime(by: .seconds(1))
        queue.schedule(in: .seconds(32)) { log.fired.append("J2") }
        queue.schedule(in: .milliseconds(500)) { log.fired.append("E2") }
        #expect(log.fired == ["E1"])
        loop.advanceTime(by: .milliseconds(499))
        #expect(log.fired == ["E1"])
        loop.advanceTime(by: .milliseconds(1))
        #expect(log.fired == ["E1", "E2"])
        loop.advanceTime(by: .milliseconds(30_499))
        #expect(log.fired == ["E1", "E2"])
        loop.advanceTime(by: .milliseconds(1))
        #expect(log.fired == ["E1", "E2", "J1"])
        loop.advanceTime(by: .seconds(1))
        #expect(log.fired == ["E1", "E2", "J1", "J2"])
    }

    @Test func timersWithTheSameDeadlineFireInTheOrderTheyWereStarted() {
        let loop = EmbeddedEventLoop()
        let queue = SIPTimerQueue(eventLoop: loop)
        let log = Log()
        for name in ["a", "b", "c"] { queue.schedule(in: .seconds(5)) { log.fired.append(name) } }
        loop.advanceTime(by: .seconds(5))
        #expect(log.fired == ["a", "b", "c"])
    }

    @Test func aTimerStartedWhileAnotherFiresWaitsForItsOwnDelay() {
        let loop = EmbeddedEventLoop()
        let queue = SIPTimerQueue(eventLoop: loop)
        let log = Log()
        // Timer E doubling (RFC 3261 §17.1.2.2): the callback starts the next interval.
        queue.schedule(in: .milliseconds(500)) {
            log.fired.append("first")
            queue.schedule(in: .milliseconds(500)) { log.fired.append("second") }
        }
        loop.advanceTime(by: .milliseconds(500))
        #expect(log.fired == ["first"])
        loop.advanceTime(by: .milliseconds(499))
        #expect(log.fired == ["first"])
        loop.advanceTime(by: .milliseconds(1))
        #expect(log.fired == ["first", "second"])
        // Nothing is left to fire.
        loop.advanceTime(by: .seconds(60))
        #expect(log.fired == ["first", "second"])
    }
}
