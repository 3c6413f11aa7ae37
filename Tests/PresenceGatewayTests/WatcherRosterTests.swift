@testable import PresenceGateway
import Testing

/// The roster watcher information is worked out from (``WatcherRoster``): filed by presentity
/// from the components' reports, telling which presentities' watchers changed, once.
@Suite struct WatcherRosterTests {
    static let carol = WatcherIdentity(uri: "sip:carol@contoso.com", network: .sameEnterprise)!

    static func report(_ named: [String], refused: Set<String> = []) -> WatcherReport {
        var naming: [String: WatcherReport.Naming] = [:]
        for uri in named { naming[uri] = WatcherReport.Naming(resource: uri, refused: refused.contains(uri)) }
        return WatcherReport(source: .enterprise, watcher: carol, named: naming)
    }

    @Test func reportsAreFiledByPresentityAndTheirChangesTakenOnce() {
        var roster = WatcherRoster()
        let mary = "sip:mary@oma.example", john = "sip:john@oma.example"
        roster.file([WatcherReport.Update(id: "e1", report: Self.report([mary, john]))])
        #expect(roster.watchers(of: mary, from: .enterprise).map(\.id) == ["e1"])
        #expect(roster.watchers(of: mary, from: .oma).isEmpty)
        #expect(roster.takeChanged() == [mary: ["e1"], john: ["e1"]])
        #expect(roster.takeChanged().isEmpty)

        // The same report again is no change; one naming John no more changes both lists.
        roster.file([WatcherReport.Update(id: "e1", report: Self.report([mary, john]))])
        #expect(roster.takeChanged().isEmpty)
        roster.file([WatcherReport.Update(id: "e1", report: Self.report([mary], refused: [mary]))])
        #expect(roster.takeChanged() == [mary: ["e1"], john: ["e1"]])
        #expect(roster.watchers(of: john, from: .enterprise).isEmpty)
        #expect(roster["e1"]?.named[mary]?.refused == true)

        // Gone: out of every list it was in.
        roster.file([WatcherReport.Update(id: "e1", report: nil)])
        #expect(roster.takeChanged() == [mary: ["e1"]])
        #expect(roster.watchers(of: mary, from: .enterprise).isEmpty && roster["e1"] == nil)
    }

    /// The roster keeps only the presentities whose watchers someone may be shown: Carol's
    /// subscription to John and Mary is filed under Mary (who has a policy of her own), not
    /// under John; with no one following, nothing is kept.
    @Test func onlyThePresentitiesWhoseWatchersAreListedAreFiled() throws {
        typealias P = PendingResourceTests
        var h = try GatewayCoreTests.Harness(yaml: P.marysYAML("allow"))
        #expect(h.core.configuration.servesWatcherInfo(of: P.mary) && !h.core.configuration.servesWatcherInfo(of: P.john))
        _ = h.receive(
            try GatewayCoreTests.enterpriseSubscribe(resources: [P.john, P.mary]), from: .enterprise,
            network: .sameEnterprise)
        #expect(h.core.watcherInfo.roster.watchers(of: P.mary, from: .enterprise).isEmpty)
        _ = try WatcherInfoServiceTests.marySubscribes(&h)
        let filed = h.core.watcherInfo.roster.watchers(of: P.mary, from: .enterprise)
        #expect(filed.map { Array($0.report.named.keys) } == [[P.mary]])
        #expect(h.core.watcherInfo.roster.watchers(of: P.john, from: .enterprise).isEmpty)
    }

    @Test func aComponentReportsOnlyWhileFollowedAndEverythingWhenFollowingStarts() {
        var reporting = WatcherReporting()
        reporting.changed(1)
        #expect(reporting.take().isEmpty)
        reporting.follow(true, keys: [1, 2])
        reporting.changed(3)
        #expect(reporting.take() == [1, 2, 3])
        reporting.follow(true, keys: [1, 2, 3])
        #expect(reporting.take().isEmpty)
        reporting.changed(2)
        reporting.follow(false, keys: [])
        #expect(reporting.take().isEmpty)
    }
}
