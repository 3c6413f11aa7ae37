import Foundation
import GatewayState
import PresenceDocuments
import PresenceGateway
import SIPMessages
import SIPStack
import Testing

/// The form of the durable store's records (docs/state.md, "What is stored"): a store written by
/// an earlier presence-gateway loads unchanged, and several nodes of different versions share
/// one. `Fixtures/records.json` holds the records an earlier version wrote for the states below,
/// one of each kind and of each optional part; this version must write the same JSON for them
/// and read them back.
@Suite struct RecordFormatTests {
    typealias H = GatewayCoreTests
    typealias R = StateRestoreTests

    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/records.json")

    /// One state set up in a core: the configuration it runs with and the records it wrote.
    struct Scenario {
        var name: String
        var yaml: String
        var records: [StateRecord]
    }

    /// Sets up a state in a journaled core and takes its records.
    static func scenario(
        _ name: String, yaml: String = GatewayConfiguration.defaultYAML, _ body: (inout H.Harness) throws -> Void
    ) throws -> Scenario {
        var h = try R.journaled(yaml: yaml)
        try body(&h)
        var records = R.Records()
        R.take(&h, into: &records)
        return Scenario(name: name, yaml: yaml, records: records.all.map(withoutRandomTags))
    }

    /// The entity-tags the compositor makes are random (RFC 3903 §4.1 asks only that they be
    /// unique): one fixed tag in their place, in the key and the body.
    static func withoutRandomTags(_ record: StateRecord) -> StateRecord {
        guard record.kind == "publication" else { return record }
        let body = String(decoding: record.body, as: UTF8.self).replacingOccurrences(of: record.key, with: "etag.1")
        return StateRecord(
            kind: record.kind, key: "etag.1", callID: record.callID, localTag: record.localTag,
            expires: record.expires, body: Array(body.utf8))
    }

    /// A watcher of bob@contoso.com from the OMA side, answered (flow 2), with `accept`.
    static func omaWatcher(_ h: inout H.Harness, accept: String = "application/pidf+xml") throws {
        let (_, actions) = h.receive(try H.omaSubscribe(accept: accept), from: .oma)
        let (subscribe, context) = try #require(H.sent(actions, to: .enterprise).first)
        _ = h.core.receive(
            H.enterpriseOK(subscribe, H.categories(availability: 3500, uri: "sip:bob@contoso.com")), to: subscribe,
            context: context, now: h.now)
    }

    static func scenarios() throws -> [Scenario] {
        [
            try scenario("enterprise-watcher") { h in
                let (_, subscribe, _) = try R.enterpriseWatcherPair(&h)
                _ = h.receive(
                    try H.omaNotify(subscribe, cseq: 3, body: H.pidf("sip:john@oma.example", activity: "busy")),
                    from: .oma)
            },
            try scenario("unanswered-watcher") { h in
                _ = h.receive(
                    try H.enterpriseSubscribe(resources: ["sip:john@oma.example"]), from: .enterprise,
                    network: .sameEnterprise)
            },
            try scenario("document-watcher") { h in
                _ = try DocumentWatcherTests.answered(
                    &h, accept: "application/pidf+xml", body: H.pidf("sip:john@oma.example", activity: "away"))
            },
            try scenario("awaiting-owner", yaml: PendingResourceTests.marysYAML("confirm")) { h in
                _ = h.receive(
                    try H.enterpriseSubscribe(resources: [PendingResourceTests.mary]), from: .enterprise,
                    network: .sameEnterprise)
            },
            try scenario("oma-rls-list", yaml: OMAResourceListTests.yaml) { h in
                h = try OMAResourceListTests.answeredList(h).0
            },
            try scenario("oma-watcher") { h in try omaWatcher(&h) },
            try scenario("configured-peer") { h in
                // Over UDP from the configured peer `kamailio`: the dialog is held to it, by name.
                let peer = DialogPeer(side: .oma, transport: .udp, host: "127.0.0.1", port: 5070, peer: 1)
                let watcher = WatcherIdentity(uri: "sip:alice@oma.example", network: .federated)
                let actions = h.core.receive(
                    try H.omaSubscribe(), id: 1, from: .oma, watcher: watcher, peer: peer, now: h.now)
                let (subscribe, context) = try #require(H.sent(actions, to: .enterprise).first)
                _ = h.core.receive(
                    H.enterpriseOK(subscribe, H.categories(availability: 3500, uri: "sip:bob@contoso.com")),
                    to: subscribe, context: context, now: h.now)
            },
            try scenario("partial-notifications") { h in
                try omaWatcher(&h, accept: "application/pidf+xml, application/pidf-diff+xml")
            },
            try scenario("filtered-watcher") { h in
                let (_, actions) = h.receive(try FilterTests.subscribe(FilterTests.noteAndBasic), from: .oma)
                let (subscribe, context) = try #require(H.sent(actions, to: .enterprise).first)
                _ = h.core.receive(
                    H.enterpriseOK(subscribe, try FilterTests.categories(3500, note: "lunch")), to: subscribe,
                    context: context, now: h.now)
            },
            try scenario("served-list", yaml: ResourceListTests.yaml) { h in
                _ = try ResourceListTests.answeredList(&h)
            },
            try scenario("pool-hint") { h in try poolHint(&h) },
            try scenario("batch-refused") { h in
                // The enterprise refuses the batched SUBSCRIBE: single ones from then on.
                let (_, actions) = h.receive(try H.omaSubscribe(), from: .oma)
                let (subscribe, context) = try #require(H.sent(actions, to: .enterprise).first)
                _ = h.core.receive(
                    SIPResponse(replyingTo: subscribe, statusCode: 403, toTag: "e1"), to: subscribe, context: context,
                    now: h.now)
            },
            try scenario("winfo", yaml: PendingResourceTests.marysYAML("allow")) { h in
                _ = try WatcherInfoServiceTests.marySubscribes(&h)
            },
            try scenario("mirror", yaml: WatcherMirrorTests.yaml) { h in try mirror(&h) },
            try scenario("publications", yaml: LinkedIdentityPublicationTests.yaml) { h in try publications(&h) },
            try scenario("linked-identity") { h in try linkedIdentity(&h) },
            try scenario("upnp", yaml: UPnPPresenceBridgeTests.yaml) { h in try UPnPPresenceBridgeTests.everyEntry(&h) },
        ]
    }

    /// The enterprise answers with a pool for bob (flow 3), whose dialog answers with his state.
    static func poolHint(_ h: inout H.Harness) throws {
        let pool = "sip:pool2.contoso.com@contoso.com;gruu;opaque=srvr:HomeServer:x"
        let (_, actions) = h.receive(try H.omaSubscribe(to: "sip:bob@contoso.com", callID: "c-b1"), from: .oma)
        let (subscribe, context) = try #require(H.sent(actions, to: .enterprise).first)
        let hint = RLMIList.Instance(state: .resubscribe, cid: "bob@contoso.com", poolFqdn: pool)
        let hinted = h.core.receive(
            H.batchOK(subscribe, rejected: [("sip:bob@contoso.com", hint)]), to: subscribe, context: context,
            now: h.now)
        let (toPool, poolContext) = try #require(H.sent(hinted, to: .enterprise).first { $0.0.uri.description == pool })
        _ = h.core.receive(
            H.batchOK(toPool, accepted: [H.categories(availability: 3500, uri: "sip:bob@contoso.com")], tag: "pool1"),
            to: toPool, context: poolContext, now: h.now)
    }

    /// A stand-in for dave, a watcher of a linked identity the OMA presence server listed.
    static func mirror(_ h: inout H.Harness) throws {
        typealias M = WatcherMirrorTests
        let winfo = try M.watching(&h)
        let (_, listed) = h.receive(
            try M.notify(winfo, cseq: 1, body: M.winfo(version: 0, [("w1", "sip:dave@oma.example", "active")])),
            from: .oma)
        M.answerEnterprise(listed, &h)
    }

    /// A publication received for a served identity, and its SERVICE publisher toward the enterprise.
    static func publications(_ h: inout H.Harness) throws {
        let (_, first) = h.receive(
            try LinkedIdentityPublicationTests.publish(H.pidf("sip:bob@oma.example", activity: "busy"), cseq: 1),
            from: .oma)
        let (service, context) = try #require(H.sent(first, to: .enterprise).first)
        _ = h.core.receive(
            SIPResponse(replyingTo: service, statusCode: 200, toTag: "svc"), to: service, context: context, now: h.now)
    }

    /// Alice's enterprise state published to the OMA side under an entity-tag (flow 4).
    static func linkedIdentity(_ h: inout H.Harness) throws {
        let started = h.core.start(now: h.now)
        let (subscribe, context) = try #require(H.sent(started, to: .enterprise).first)
        let answered = h.core.receive(
            H.enterpriseOK(subscribe, H.categories(availability: 3500, uri: "sip:alice@contoso.com")), to: subscribe,
            context: context, now: h.now)
        let (publish, publishContext) = try #require(H.sent(answered, to: .oma).first)
        _ = h.core.receive(
            SIPResponse(
                replyingTo: publish, statusCode: 200, toTag: "esc", headers: [(.sipETag, "etag-1"), (.expires, "3600")]),
            to: publish, context: publishContext, now: h.now)
    }

    /// A record as the fixture holds it: its columns, and its body as JSON rather than bytes.
    static func entry(_ record: StateRecord) throws -> [String: Any] {
        var entry: [String: Any] = ["body": try JSONSerialization.jsonObject(with: Data(record.body))]
        entry["callID"] = record.callID
        entry["localTag"] = record.localTag
        entry["expires"] = record.expires
        return entry
    }

    static func id(_ scenario: Scenario, _ record: StateRecord) -> String {
        "\(scenario.name) \(record.kind) \(record.key)"
    }

    /// The fixture's records of `scenario`, as the store would hand them back.
    static func stored(_ scenario: Scenario, in fixture: [String: Any]) throws -> [StateRecord] {
        try fixture.keys.filter { $0.hasPrefix(scenario.name + " ") }.sorted().map { id in
            let parts = id.split(separator: " ").map(String.init)
            let entry = try #require(fixture[id] as? [String: Any])
            let body = try JSONSerialization.data(withJSONObject: try #require(entry["body"]))
            return StateRecord(
                kind: parts[1], key: parts[2], callID: entry["callID"] as? String,
                localTag: entry["localTag"] as? String, expires: (entry["expires"] as? NSNumber)?.int64Value,
                body: Array(body))
        }
    }

    static func loadFixture() throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: fixture)) as? [String: Any])
    }

    /// Writes the fixture from this version (`PRESENCE_GATEWAY_WRITE_RECORD_FIXTURE=1`), for a
    /// change of the records' form that is meant: docs/state.md says how such a change is made.
    @Test func writesEveryKindOfRecordAsTheFixtureHoldsIt() throws {
        let scenarios = try Self.scenarios()
        var written: [String: Any] = [:]
        for scenario in scenarios {
            for record in scenario.records { written[Self.id(scenario, record)] = try Self.entry(record) }
        }
        if ProcessInfo.processInfo.environment["PRESENCE_GATEWAY_WRITE_RECORD_FIXTURE"] == "1" {
            let data = try JSONSerialization.data(withJSONObject: written, options: [.prettyPrinted, .sortedKeys])
            try FileManager.default.createDirectory(
                at: Self.fixture.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: Self.fixture)
            return
        }
        let fixture = try Self.loadFixture()
        #expect(Set(written.keys) == Set(fixture.keys))
        // Compared as JSON read back, so numbers and booleans are of one kind on both sides.
        let now = try #require(
            try JSONSerialization.jsonObject(with: JSONSerialization.data(withJSONObject: written)) as? [String: Any])
        for (id, entry) in now.sorted(by: { $0.key < $1.key }) {
            guard let held = fixture[id] as? [AnyHashable: Any], let entry = entry as? [AnyHashable: Any] else {
                continue
            }
            #expect(NSDictionary(dictionary: entry).isEqual(to: held), "\(id): \(entry) is not \(held)")
        }
        // Every kind of record is covered, and each optional part of a watch's record.
        let kinds = Set(fixture.keys.map { String($0.split(separator: " ")[1]) })
        let every = [
            "enterprise-watch", "oma-leg", "oma-list", "oma-watch", "enterprise-leg", "linked-publication",
            "publication", "service-publisher", "winfo-watch", "pool", "flag", "upnp-registration", "upnp-user",
        ]
        #expect(kinds == Set(every), "\(kinds)")
        let bodies = fixture.values.compactMap { ($0 as? [String: Any])?["body"] as? [String: Any] }
        for part in ["document", "awaiting", "partialVersion", "filter", "list", "listOwner", "mirrorOf", "peer"] {
            #expect(bodies.contains { $0[part] != nil }, "no record with \(part)")
        }
        #expect(bodies.contains { $0["answered"] as? Bool == false }, "no record of a watch never answered")
    }

    /// The records an earlier version wrote restore as this version's own do: the same dialogs
    /// held, the same messages sent.
    @Test func readsTheRecordsAnEarlierVersionWrote() throws {
        let fixture = try Self.loadFixture()
        for scenario in try Self.scenarios() {
            var earlier = try R.journaled(yaml: scenario.yaml, prefix: "r")
            let stored = try Self.stored(scenario, in: fixture)
            try #require(!stored.isEmpty, "\(scenario.name)")
            let fromEarlier = try earlier.core.restore(stored, clock: R.clock, now: earlier.now)
            var now = try R.journaled(yaml: scenario.yaml, prefix: "r")
            let fromNow = try now.core.restore(scenario.records, clock: R.clock, now: now.now)
            #expect(earlier.core.counts == now.core.counts, "\(scenario.name)")
            #expect(
                Set(earlier.core.dialogRecordIDs().map(\.key)) == Set(now.core.dialogRecordIDs().map(\.key)),
                "\(scenario.name)")
            #expect(
                fromEarlier.map { String(describing: $0) } == fromNow.map { String(describing: $0) },
                "\(scenario.name)")
        }
    }
}
