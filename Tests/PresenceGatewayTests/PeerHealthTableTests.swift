import Foundation
import NIOCore
@testable import PresenceGateway
import Testing

/// `GET /peers`' record: rates over the last ten seconds, outcomes, and a bound on how many
/// unconfigured senders it keeps.
@Suite struct PeerHealthTableTests {
    static func at(_ seconds: Int64) -> NIODeadline { .uptimeNanoseconds(UInt64(1_000 + seconds) * 1_000_000_000) }

    @Test func ratesCoverTheLastTenSecondsAndTotalsEverything() {
        var table = PeerHealthTable(configured: [("edge", "enterprise")])
        for s in 0..<5 {
            for _ in 0..<4 { table.received(from: "edge", side: "enterprise", rejected: false, now: Self.at(Int64(s))) }
            table.received(from: "edge", side: "enterprise", rejected: true, now: Self.at(Int64(s)))
        }
        var edge = table.report(now: Self.at(5))[0]
        #expect(edge.requests == 25 && edge.rejections == 5)
        #expect(edge.requestsPerSecond == 2.5 && edge.rejectionsPerSecond == 0.5)
        // Ten seconds on, the window has moved past them all; the totals stay.
        edge = table.report(now: Self.at(15))[0]
        #expect(edge.requestsPerSecond == 0 && edge.requests == 25)
    }

    @Test func theLastOutcomesAreKeptWithTheFailureReason() {
        var table = PeerHealthTable(configured: [("kamailio", "oma")])
        let t0 = Date(timeIntervalSince1970: 1_000), t1 = Date(timeIntervalSince1970: 2_000)
        table.answered(by: "kamailio", side: "oma", failure: nil, at: t0, now: Self.at(0))
        table.answered(by: "kamailio", side: "oma", failure: "SUBSCRIBE: 403 Forbidden", at: t1, now: Self.at(1))
        let kamailio = table.report(now: Self.at(1))[0]
        #expect(kamailio.lastSuccess == t0 && kamailio.lastFailure == PeerHealth.Failure(time: t1, reason: "SUBSCRIBE: 403 Forbidden"))
        #expect(kamailio.configured)
    }

    @Test func unconfiguredSendersAreBoundedAndConfiguredPeersListedFirst() {
        var table = PeerHealthTable(configured: [("edge", "enterprise")])
        for n in 0..<(PeerHealthTable.maxAddresses + 50) {
            table.received(from: "192.0.2.\(n)", side: "oma", rejected: true, now: Self.at(Int64(n)))
        }
        let report = table.report(now: Self.at(400))
        #expect(report.count == PeerHealthTable.maxAddresses + 1)
        #expect(report.first?.name == "edge")
        // The least recently seen went first.
        #expect(!report.contains { $0.name == "192.0.2.0" } && report.contains { $0.name == "192.0.2.305" })
        // A reload that configures one of them makes it a peer; one no longer configured is an address.
        table.configure([("192.0.2.305", "oma")])
        let after = table.report(now: Self.at(400))
        #expect(after.first?.name == "192.0.2.305" && after.first?.configured == true)
        #expect(after.first { $0.name == "edge" }?.configured == false)
    }

    /// A drained unconfigured sender stays listed however many others come after it, so that it
    /// can be seen and undrained (PUT /peers/{name}); unpinned, it ages out as any other.
    @Test func aPinnedSenderIsNotDroppedForNewerOnes() {
        var table = PeerHealthTable(configured: [])
        table.received(from: "198.51.100.7", side: "oma", rejected: false, now: Self.at(0))
        table.pin("198.51.100.7", true)
        for n in 0..<(PeerHealthTable.maxAddresses + 10) {
            table.received(from: "192.0.2.\(n)", side: "oma", rejected: false, now: Self.at(Int64(n + 1)))
        }
        #expect(table.report(now: Self.at(400)).contains { $0.name == "198.51.100.7" })
        #expect(table.report(now: Self.at(400)).count == PeerHealthTable.maxAddresses)
        table.pin("198.51.100.7", false)
        table.received(from: "203.0.113.1", side: "oma", rejected: false, now: Self.at(500))
        #expect(!table.report(now: Self.at(500)).contains { $0.name == "198.51.100.7" })
    }
}
