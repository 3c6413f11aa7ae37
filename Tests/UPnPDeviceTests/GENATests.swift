import NIOCore
import Testing
import XMLBridge

@testable import UPnPDevice

/// GENA eventing, UPnP Device Architecture 1.1 §4.1 (subscription) and §4.3 (event messages).
@Suite struct GENATests {
    static let callback = "<http://127.0.0.1:4004/notify>"
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)

    static func parse(_ method: String, _ headers: [(String, String)]) -> Result<GENARequest, GENAStatus> {
        GENARequest.parse(method: method, headers: headers.map { (name: $0.0, value: $0.1) })
    }

    /// §4.1.2: CALLBACK, NT upnp:event and TIMEOUT make a new subscription.
    @Test func subscribeIsRead() throws {
        let request = try Self.parse(
            "SUBSCRIBE",
            [
                ("callback", "<http://127.0.0.1:1/a><http://10.0.0.1:2/b>"), ("NT", "upnp:event"),
                ("TIMEOUT", "Second-300"),
            ]
        ).get()
        #expect(
            request == .subscribe(callbacks: ["http://127.0.0.1:1/a", "http://10.0.0.1:2/b"], timeout: .seconds(300)))
        #expect(
            try Self.parse("SUBSCRIBE", [("CALLBACK", Self.callback), ("NT", "upnp:event")]).get()
                == .subscribe(callbacks: ["http://127.0.0.1:4004/notify"], timeout: nil))
        #expect(GENATimeout("Second-infinite") == .infinite)
    }

    /// §4.1.2: without CALLBACK, with a CALLBACK that holds no http URL, or without NT
    /// upnp:event: 412 Precondition Failed.
    @Test(arguments: [
        [("NT", "upnp:event")],
        [("CALLBACK", Self.callback)],
        [("CALLBACK", Self.callback), ("NT", "upnp:propchange")],
        [("CALLBACK", "http://127.0.0.1:1/no-brackets"), ("NT", "upnp:event")],
        [("CALLBACK", "<ftp://127.0.0.1/x>"), ("NT", "upnp:event")],
        [("CALLBACK", "<>"), ("NT", "upnp:event")],
    ])
    func subscribeWithoutPreconditionsIs412(headers: [(String, String)]) {
        #expect(Self.parse("SUBSCRIBE", headers) == .failure(.preconditionFailed))
    }

    /// §4.1.3 and §4.1.4: SID together with CALLBACK or NT is 400 Bad Request.
    @Test func sidWithCallbackOrNTIs400() {
        #expect(Self.parse("SUBSCRIBE", [("SID", "uuid:x"), ("CALLBACK", Self.callback)]) == .failure(.badRequest))
        #expect(Self.parse("SUBSCRIBE", [("SID", "uuid:x"), ("NT", "upnp:event")]) == .failure(.badRequest))
        #expect(Self.parse("UNSUBSCRIBE", [("SID", "uuid:x"), ("NT", "upnp:event")]) == .failure(.badRequest))
    }

    /// §4.1.3: SID alone is a renewal; §4.1.4: UNSUBSCRIBE needs SID (412 without).
    @Test func renewalAndUnsubscribe() {
        #expect(
            Self.parse("SUBSCRIBE", [("SID", "uuid:x"), ("TIMEOUT", "Second-60")])
                == .success(.renew(sid: "uuid:x", timeout: .seconds(60))))
        #expect(Self.parse("UNSUBSCRIBE", [("SID", "uuid:x")]) == .success(.unsubscribe(sid: "uuid:x")))
        #expect(Self.parse("UNSUBSCRIBE", []) == .failure(.preconditionFailed))
    }

    /// §4.3.2: SEQ 0 is the initial event message; the key then counts up and wraps from
    /// 4294967295 to 1, never to 0.
    @Test func sequenceWrapsToOne() {
        #expect(GENASubscriptionTable.sequence(after: 0) == 1)
        #expect(GENASubscriptionTable.sequence(after: 41) == 42)
        #expect(GENASubscriptionTable.sequence(after: 4_294_967_294) == 4_294_967_295)
        #expect(GENASubscriptionTable.sequence(after: 4_294_967_295) == 1)
    }

    static func table(_ configuration: GENAConfiguration = GENAConfiguration()) -> GENASubscriptionTable {
        GENASubscriptionTable(configuration: configuration)
    }

    /// §4.3.2: the initial event message comes first with SEQ 0; events before it skip the
    /// subscription; after it SEQ counts 1, 2, … and wraps to 1.
    @Test func initialEventThenIncrementingSequence() throws {
        var table = Self.table()
        let sub = try table.subscribe(
            callbacks: ["http://127.0.0.1:1/"], timeout: nil, controlPoint: "127.0.0.1", sid: "uuid:s1", now: Self.t0
        ).get()
        #expect(sub.nextSequence == 0)
        #expect(table.notifies(body: []).isEmpty)
        #expect(table.initialNotify(sid: "uuid:s1", body: [1])?.sequence == 0)
        #expect(table.initialNotify(sid: "uuid:s1", body: [1]) == nil)
        #expect(table.notifies(body: []).map(\.sequence) == [1])
        #expect(table.notifies(body: []).map(\.sequence) == [2])
        table.setNextSequence(.max, sid: "uuid:s1")
        #expect(table.notifies(body: []).map(\.sequence) == [.max])
        #expect(table.notifies(body: []).map(\.sequence) == [1])
    }

    /// §4.1.2: the device grants a duration of its choice; here within the configured bounds.
    @Test func timeoutIsBounded() {
        let table = Self.table(GENAConfiguration(defaultTimeout: 1800, minimumTimeout: 60, maximumTimeout: 7200))
        #expect(table.grantedTimeout(nil) == 1800)
        #expect(table.grantedTimeout(.seconds(5)) == 60)
        #expect(table.grantedTimeout(.seconds(600)) == 600)
        #expect(table.grantedTimeout(.infinite) == 7200)
    }

    /// §4.1.3: a renewal of an unknown or expired SID is 412; §4.1.4 likewise for UNSUBSCRIBE.
    @Test func unknownAndExpiredSIDsAre412() throws {
        var table = Self.table(GENAConfiguration(minimumTimeout: 60))
        _ = try table.subscribe(
            callbacks: ["http://127.0.0.1:1/"], timeout: .seconds(60), controlPoint: "127.0.0.1", sid: "uuid:s1",
            now: Self.t0
        ).get()
        #expect(table.renew(sid: "uuid:other", timeout: nil, now: Self.t0) == .failure(.preconditionFailed))
        #expect(table.renew(sid: "uuid:s1", timeout: .seconds(120), now: Self.t0 + .seconds(30)) == .success(120))
        #expect(
            table.renew(sid: "uuid:s1", timeout: nil, now: Self.t0 + .seconds(151)) == .failure(.preconditionFailed))
        #expect(table.subscriptions.isEmpty)
        guard case .failure(.preconditionFailed) = table.unsubscribe(sid: "uuid:s1", now: Self.t0) else {
            Issue.record("an unknown SID was unsubscribed")
            return
        }
    }

    /// Callbacks outside loopback and the allowed networks are refused with 412.
    @Test func callbackMustBeInAnAllowedNetwork() throws {
        let policy = CallbackPolicy(allowedNetworks: [try #require(IPNetwork("192.168.1.0/24"))])
        #expect(policy.allows(["http://127.0.0.1:9/", "http://[::1]:9/x", "http://192.168.1.77/x"]))
        #expect(!policy.allows(["http://192.168.2.1/x"]))
        #expect(!policy.allows(["http://127.0.0.1/", "http://8.8.8.8/"]))
        #expect(!policy.allows(["http://evil.example/x"]))
        #expect(!policy.allows(["http://user@127.0.0.1/x"]))
        var table = Self.table(GENAConfiguration(callbackPolicy: policy))
        let refused = table.subscribe(
            callbacks: ["http://10.1.1.1/"], timeout: nil, controlPoint: "10.1.1.1", sid: "uuid:s", now: Self.t0)
        #expect(refused.map(\.sid) == .failure(.preconditionFailed))
    }

    @Test func networksMatchByPrefix() throws {
        let net = try #require(IPNetwork("10.0.0.0/9"))
        #expect(net.contains("10.127.255.255"))
        #expect(!net.contains("10.128.0.0"))
        #expect(try #require(IPNetwork("fd00::/8")).contains("[fd12::1]"))
        #expect(IPNetwork("10.0.0.0/33") == nil)
        #expect(IPNetwork("not-an-address/8") == nil)
    }

    /// Limits per control point and overall: 503 (UDA 1.1 §4.1.2, a publisher without resources).
    @Test func subscriberLimits() {
        var table = Self.table(GENAConfiguration(maxPerControlPoint: 2, maxSubscriptions: 3))
        func subscribe(_ from: String, _ n: Int) -> Result<String, GENAStatus> {
            table.subscribe(
                callbacks: ["http://127.0.0.1:1/"], timeout: nil, controlPoint: from, sid: "uuid:\(from)-\(n)",
                now: Self.t0
            ).map(\.sid)
        }
        #expect(subscribe("127.0.0.1", 1) == .success("uuid:127.0.0.1-1"))
        #expect(subscribe("127.0.0.1", 2) == .success("uuid:127.0.0.1-2"))
        #expect(subscribe("127.0.0.1", 3) == .failure(.serviceUnavailable))
        #expect(subscribe("127.0.0.2", 1) == .success("uuid:127.0.0.2-1"))
        #expect(subscribe("127.0.0.3", 1) == .failure(.serviceUnavailable))
    }

    /// ISO/IEC 29341-26-16 §5.4: no more than one event per variable per interval; changes in
    /// between are coalesced to the latest value.
    @Test func moderationCoalesces() {
        var moderator = EventModerator(interval: .milliseconds(200))
        #expect(moderator.change(.userPresenceInfo, "a", now: Self.t0).map(\.1) == ["a"])
        #expect(moderator.change(.userPresenceInfo, "b", now: Self.t0 + .milliseconds(50)).isEmpty)
        #expect(moderator.change(.userPresenceInfo, "c", now: Self.t0 + .milliseconds(100)).isEmpty)
        // Another variable has its own interval.
        #expect(moderator.change(.watcher, "w", now: Self.t0 + .milliseconds(100)).map(\.1) == ["w"])
        #expect(moderator.nextDeadline == Self.t0 + .milliseconds(200))
        #expect(moderator.flush(now: Self.t0 + .milliseconds(150)).isEmpty)
        let due = moderator.flush(now: Self.t0 + .milliseconds(200))
        #expect(due.map(\.0) == [.userPresenceInfo])
        #expect(due.map(\.1) == ["c"])
        #expect(moderator.flush(now: Self.t0 + .seconds(5)).isEmpty)
        #expect(moderator.nextDeadline == nil)
    }

    /// §4.3.2: the body is an e:propertyset with one e:property per variable, the value as text.
    @Test func propertySetBody() throws {
        let root = try XMLParser.parse(PropertySet.body([(.userPresenceInfo, "<p/>"), (.watcher, "")]))
        let ns = "urn:schemas-upnp-org:event-1-0"
        #expect(root.name == XMLName(ns, "propertyset"))
        let properties = root.elements(XMLName(ns, "property"))
        #expect(properties.count == 2)
        #expect(properties.first?.element(XMLName("", "UserPresenceInfo"))?.text == "<p/>")
        #expect(properties.last?.element(XMLName("", "Watcher")) != nil)
    }
}
