import Foundation
import FuzzTargets
import PresenceGateway
import Testing
import XMLBridge

/// Replays `Vectors/fuzz/<target>/*` through the fuzz targets' entry functions: every input the
/// fuzzer once crashed on, and the gateway seeds, must now pass every property of its target
/// (README, "Fuzzing and soak"). A vector that still traps ends the test process, which fails
/// the run as well.
struct FuzzRegressionTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Vectors/fuzz")

    /// The vectors of `target`, by file name.
    static func vectors(_ target: FuzzTarget) -> [(name: String, bytes: [UInt8])] {
        let directory = root.appendingPathComponent(target.rawValue)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.sorted().compactMap { name in
            FileManager.default.contents(atPath: directory.appendingPathComponent(name).path).map { (name, [UInt8]($0)) }
        }
    }

    @Test(arguments: FuzzTarget.allCases.filter { $0 != .gateway })
    func regressionVectorsPassTheirTarget(target: FuzzTarget) {
        for (name, bytes) in Self.vectors(target) {
            #expect(target.check(bytes) == nil, "\(target.rawValue)/\(name)")
        }
    }

    /// The rls-services seeds reach both ends of the reader: a document served as lists, and
    /// one refused for a nested list.
    @Test func rlsServicesSeedsAreReadAndRefused() throws {
        let domains = try #require(FuzzTarget.listDomains)
        let seeds = Dictionary(uniqueKeysWithValues: Self.vectors(.rlsServices).map { ($0.name, $0.bytes) })
        let served = try GatewayConfiguration.resourceLists(
            rlsServices: try #require(seeds["seed-rfc4826.xml"]), enterprise: domains, limit: FuzzTarget.listLimit)
        #expect(served == ["sip:team@contoso.com": ["sip:bob@contoso.com", "sip:carol@contoso.com"]])
        #expect(throws: XMLError.self) {
            try GatewayConfiguration.resourceLists(
                rlsServices: try #require(seeds["seed-nested-list.xml"]), enterprise: domains,
                limit: FuzzTarget.listLimit)
        }
    }

    /// Each gateway vector on a fresh core (as the fuzzer found it, state from earlier inputs
    /// aside), then all of them in turn on one core.
    @Test func gatewayVectorsPassOnAFreshCoreAndInSequence() {
        let vectors = Self.vectors(.gateway)
        #expect(!vectors.isEmpty, "Vectors/fuzz/gateway holds the seeds")
        for (name, bytes) in vectors {
            #expect(GatewayFuzzHarness().check(bytes) == nil, "gateway/\(name)")
        }
        let harness = GatewayFuzzHarness()
        for (name, bytes) in vectors {
            #expect(harness.check(bytes) == nil, "gateway/\(name) in sequence")
        }
    }

    /// The harness reaches the core's subscription logic, not just the router: a batched category
    /// SUBSCRIBE from the enterprise side ([MS-PRES] §3.4.5.1.1) makes the core subscribe toward
    /// the OMA side, get a NOTIFY and answer the watcher; an unparsable input does nothing.
    @Test func gatewaySeedDrivesTheCoreThroughABridgedSubscription() throws {
        let seed = try #require(Self.vectors(.gateway).first { $0.name == "seed-enterprise-batch-subscribe.sip" })
        let harness = GatewayFuzzHarness()
        #expect(harness.check(seed.bytes) == nil)
        #expect(harness.lastSends >= 2, "the core sent \(harness.lastSends) requests for the seed")
        #expect(harness.lastResponses >= 1, "the core answered \(harness.lastResponses) requests for the seed")
        #expect(harness.check(Array("0 not SIP".utf8)) == nil)
        #expect(harness.lastSends == 0 && harness.lastResponses == 0)
    }

    /// The list-notify seeds reach the list's notification handling (RFC 4662 §5): full state is
    /// taken and sent to the watcher, a partial one too, and a terminated list is given up.
    @Test func listNotifySeedsReachTheList() throws {
        let seeds = Dictionary(uniqueKeysWithValues: Self.vectors(.listNotify).map { ($0.name, $0.bytes) })
        let harness = ListNotifyFuzzHarness()
        #expect(harness.check(try #require(seeds["seed-full-state.sip"])) == nil)
        #expect(harness.lastStatus == 200 && harness.lastNotifications == 1)
        #expect(harness.check(try #require(seeds["seed-partial-two-members.sip"])) == nil)
        #expect(harness.lastStatus == 200 && harness.lastNotifications == 1)
        #expect(harness.check(try #require(seeds["seed-full-state.sip"])) == nil)
        #expect(harness.lastStatus == 400, "version 1 is not above 2")
        #expect(harness.check(try #require(seeds["seed-terminated-list.sip"])) == nil)
        #expect(harness.lastStatus == 200)
        #expect(harness.check(Array("not SIP".utf8)) == nil)
    }

    /// The winfo-notify seeds reach the watcher information handling (RFC 3858 §4.4): a full
    /// table makes stand-ins for the two OMA watchers (not the enterprise one), a partial one
    /// ends one, an older document is discarded, and a terminated subscription is given up.
    @Test func winfoNotifySeedsReachTheWatch() throws {
        let seeds = Dictionary(uniqueKeysWithValues: Self.vectors(.winfoNotify).map { ($0.name, $0.bytes) })
        let harness = WinfoNotifyFuzzHarness()
        #expect(harness.check(try #require(seeds["seed-full-two-watchers.sip"])) == nil)
        #expect(harness.lastStatus == 200 && harness.lastStandIns == 2)
        #expect(harness.check(try #require(seeds["seed-partial-one-leaves.sip"])) == nil)
        #expect(harness.lastStatus == 200 && harness.lastStandIns == 0)
        #expect(harness.check(try #require(seeds["seed-full-two-watchers.sip"])) == nil)
        #expect(harness.lastStatus == 200 && harness.lastStandIns == 0, "version 1 is not above 2")
        #expect(harness.check(try #require(seeds["seed-terminated.sip"])) == nil)
        #expect(harness.lastStatus == 200)
        #expect(harness.check(Array("not SIP".utf8)) == nil)
    }

    /// The watcher information seed (RFC 3857) reaches the core's winfo notifier: the owner of a
    /// linked identity is answered and sent its watcher list.
    @Test func gatewayWinfoSeedIsAnsweredAndNotified() throws {
        let seed = try #require(Self.vectors(.gateway).first { $0.name == "seed-oma-winfo-subscribe.sip" })
        let harness = GatewayFuzzHarness()
        #expect(harness.check(seed.bytes) == nil)
        #expect(harness.lastResponses >= 1 && harness.lastSends >= 1, "responses \(harness.lastResponses), sends \(harness.lastSends)")
    }

    /// The core is rebuilt every ``GatewayFuzzHarness/resetEvery`` inputs, so what fuzzing keeps is bounded.
    @Test func gatewayHarnessRebuildsItsCoreOnSchedule() throws {
        let seed = try #require(Self.vectors(.gateway).first { $0.name == "seed-enterprise-batch-subscribe.sip" })
        let harness = GatewayFuzzHarness()
        for _ in 0..<GatewayFuzzHarness.resetEvery { _ = harness.check(seed.bytes) }
        #expect(harness.coresBuilt == 1)
        _ = harness.check(seed.bytes)
        #expect(harness.coresBuilt == 2)
    }
}
