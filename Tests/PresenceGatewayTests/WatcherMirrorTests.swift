import NIOCore
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing

/// Watchers at the OMA presence server (docs/flows.md, "Watchers at the OMA presence server"):
/// with `mirror-watchers`, the core subscribes to a linked identity's `presence.winfo` (RFC
/// 3857) and subscribes into the enterprise on behalf of each OMA watcher listed (RFC 3858), with
/// the subscriber-list context ([MS-PRES] §2.2.2.4.1), so that the enterprise identity's
/// subscriber list shows them.
@Suite struct WatcherMirrorTests {
    typealias T = GatewayCoreTests

    static let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(
        of: "publish-to-oma: true }", with: "publish-to-oma: true, mirror-watchers: true }")

    /// A watcherinfo document (RFC 3858 §4) for alice's OMA identity.
    static func winfo(version: Int, state: String = "full", _ watchers: [(id: String, uri: String, status: String)])
        -> [UInt8]
    {
        let rows = watchers.map {
            "<watcher id=\"\($0.id)\" status=\"\($0.status)\" event=\"subscribe\">\($0.uri)</watcher>"
        }
        return Array("""
            <?xml version="1.0"?>
            <watcherinfo xmlns="urn:ietf:params:xml:ns:watcherinfo" version="\(version)" state="\(state)">
              <watcher-list resource="sip:alice@oma.example" package="presence">\(rows.joined())</watcher-list>
            </watcherinfo>
            """.utf8)
    }

    static func notify(_ subscribe: SIPRequest, cseq: Int, body: [UInt8], state: String = "active;expires=3500") throws
        -> SIPRequest
    {
        try T.omaNotify(
            subscribe, cseq: cseq, state: state, body: body, event: "presence.winfo",
            contentType: "application/watcherinfo+xml")
    }

    /// The URI in a request's From.
    static func from(_ request: SIPRequest) -> String? {
        ((try? request.headers.from) ?? nil)?.uri.description
    }

    /// The URI in a request's To.
    static func to(_ request: SIPRequest) -> String? {
        ((try? request.headers.to) ?? nil)?.uri.description
    }

    /// The category SUBSCRIBEs toward the enterprise, by the watcher in From.
    static func enterpriseSubscribes(_ actions: [GatewayCore.Action]) -> [String: SIPRequest] {
        var out: [String: SIPRequest] = [:]
        for (request, _) in T.sent(actions, to: .enterprise) where request.method == .subscribe {
            if let from = from(request) { out[from] = request }
        }
        return out
    }

    /// The enterprise answers each category SUBSCRIBE in `actions` with 200.
    static func answerEnterprise(_ actions: [GatewayCore.Action], _ h: inout T.Harness) {
        for (request, context) in T.sent(actions, to: .enterprise) where request.method == .subscribe {
            _ = h.core.receive(
                SIPResponse(
                    replyingTo: request, statusCode: 200, toTag: "edge1",
                    headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5062;transport=tcp>")]),
                to: request, context: context, now: h.now)
        }
    }

    /// Alice's winfo watch, subscribed at start and answered: the SUBSCRIBE.
    static func watching(_ h: inout T.Harness) throws -> SIPRequest {
        let started = h.core.start(now: h.now)
        let (subscribe, context) = try #require(
            T.sent(started, to: .oma).first { $0.0.headers[.event] == "presence.winfo" })
        _ = h.core.receive(
            SIPResponse(
                replyingTo: subscribe, statusCode: 200, toTag: "kam1",
                headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
            to: subscribe, context: context, now: h.now)
        return subscribe
    }

    /// RFC 3857 §3: the identity subscribes to its own watcher information, at its OMA address,
    /// accepting RFC 3858 documents; without `mirror-watchers` it does not.
    @Test func theLinkedIdentitysWatchersAreAskedFor() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let subscribe = try Self.watching(&h)
        #expect(subscribe.uri.description == "sip:alice@oma.example")
        #expect(Self.from(subscribe) == "sip:alice@oma.example")
        #expect(Self.to(subscribe) == "sip:alice@oma.example")
        #expect(subscribe.headers[.accept] == "application/watcherinfo+xml")
        var plain = try T.Harness()
        #expect(!T.sent(plain.core.start(now: plain.now), to: .oma).contains { $0.0.headers[.event] == "presence.winfo" })
    }

    /// A full list: each OMA watcher `active` or `pending` gets a category SUBSCRIBE into the
    /// enterprise, From the watcher, for alice's enterprise identity, carrying the subscriber-list
    /// context; a watcher of the enterprise's own domain, a terminated one and alice herself do not.
    /// A partial list that ends a watcher unsubscribes its stand-in; one that adds a watcher subscribes.
    @Test func listedWatchersJoinTheSubscriberList() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let subscribe = try Self.watching(&h)
        let full = Self.winfo(
            version: 0,
            [
                ("w1", "sip:dave@oma.example", "active"), ("w2", "sip:erin@oma.example", "pending"),
                ("w3", "sip:carol@contoso.com", "active"), ("w4", "sip:frank@oma.example", "terminated"),
                ("w5", "sip:alice@oma.example", "active"),
            ])
        let (id, actions) = h.receive(try Self.notify(subscribe, cseq: 1, body: full), from: .oma)
        #expect(T.responses(actions, id).first?.statusCode == 200)
        Self.answerEnterprise(actions, &h)
        let subscribes = Self.enterpriseSubscribes(actions)
        #expect(Set(subscribes.keys) == ["sip:dave@oma.example", "sip:erin@oma.example"])
        for (watcher, request) in subscribes {
            let body = String(decoding: request.body, as: UTF8.self)
            #expect(body.contains("sip:alice@contoso.com"), "\(watcher): \(body)")
            #expect(body.contains("<subscriptionContext"), "\(watcher): \(body)")
        }

        // Dave leaves, grace arrives (RFC 3858 §4.4: rows updated by id).
        let partial = Self.winfo(
            version: 1, state: "partial",
            [("w1", "sip:dave@oma.example", "terminated"), ("w6", "sip:grace@oma.example", "active")])
        let (_, changed) = h.receive(try Self.notify(subscribe, cseq: 2, body: partial), from: .oma)
        let sent = T.sent(changed, to: .enterprise).map(\.0)
        let unsubscribe = try #require(sent.first { Self.from($0) == "sip:dave@oma.example" })
        #expect(unsubscribe.headers[SIPHeaderName.expires] == "0")
        #expect(Set(Self.enterpriseSubscribes(changed).keys).contains("sip:grace@oma.example"))
        #expect(!sent.contains { Self.from($0) == "sip:erin@oma.example" })
    }

    /// An identity is never guessed: a listed watcher whose URI does not parse is left out and
    /// counted, and no request into the enterprise is made from anyone else in its place.
    @Test func aWatcherURIThatDoesNotParseSpeaksForNobody() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let subscribe = try Self.watching(&h)
        let full = Self.winfo(
            version: 0, [("x1", "sip:a b@evil.example", "active"), ("w1", "sip:dave@fabrikam.com", "active")])
        let (id, actions) = h.receive(try Self.notify(subscribe, cseq: 1, body: full), from: .oma)
        #expect(T.responses(actions, id).first?.statusCode == 200)
        #expect(Set(Self.enterpriseSubscribes(actions).keys) == ["sip:dave@fabrikam.com"])
        #expect(h.core.refusals.watcherURI == 1)
    }

    /// RFC 3858 §4.4: a document older than the table is discarded (a partial one with a refresh
    /// for full state); one that skips a version is applied and full state is asked for with a
    /// refresh.
    @Test func versionsAreFollowed() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let subscribe = try Self.watching(&h)
        _ = h.receive(
            try Self.notify(subscribe, cseq: 1, body: Self.winfo(version: 4, [("w1", "sip:dave@oma.example", "active")])),
            from: .oma)
        let old = Self.winfo(version: 3, state: "partial", [("w1", "sip:dave@oma.example", "terminated")])
        let (oldID, ignored) = h.receive(try Self.notify(subscribe, cseq: 2, body: old), from: .oma)
        #expect(T.responses(ignored, oldID).first?.statusCode == 200)
        #expect(T.sent(ignored, to: .enterprise).isEmpty)
        #expect(T.sent(ignored, to: .oma).map(\.0.headers.callID) == [subscribe.headers.callID])
        let oldFull = Self.winfo(version: 2, [])
        let (_, ignoredFull) = h.receive(try Self.notify(subscribe, cseq: 3, body: oldFull), from: .oma)
        #expect(T.sent(ignoredFull, to: .enterprise).isEmpty)
        #expect(T.sent(ignoredFull, to: .oma).isEmpty)

        let skipped = Self.winfo(version: 6, state: "partial", [("w2", "sip:erin@oma.example", "pending")])
        let (_, gap) = h.receive(try Self.notify(subscribe, cseq: 4, body: skipped), from: .oma)
        #expect(Set(Self.enterpriseSubscribes(gap).keys) == ["sip:erin@oma.example"])
        let refresh = try #require(T.sent(gap, to: .oma).first)
        #expect(refresh.0.headers[.event] == "presence.winfo")
        #expect(refresh.0.headers.callID == subscribe.headers.callID)
    }

    /// A body that is not a watcherinfo document is refused with 400 and a Warning, and changes
    /// nothing; a watch that ends for good (rejected) ends the stand-ins.
    @Test func badBodiesAndEndsAreHandled() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let subscribe = try Self.watching(&h)
        let (_, listed) = h.receive(
            try Self.notify(subscribe, cseq: 1, body: Self.winfo(version: 0, [("w1", "sip:dave@oma.example", "active")])),
            from: .oma)
        Self.answerEnterprise(listed, &h)
        let (badID, bad) = h.receive(try Self.notify(subscribe, cseq: 2, body: Array("<watcherinfo".utf8)), from: .oma)
        let refusal = try #require(T.responses(bad, badID).first)
        #expect(refusal.statusCode == 400)
        #expect(refusal.headers[.warning]?.contains("watcherinfo") == true)
        #expect(T.sent(bad, to: .enterprise).isEmpty)

        let (_, ended) = h.receive(
            try Self.notify(subscribe, cseq: 3, body: [], state: "terminated;reason=rejected"), from: .oma)
        let unsubscribe = try #require(T.sent(ended, to: .enterprise).first)
        #expect(Self.from(unsubscribe.0) == "sip:dave@oma.example")
        #expect(unsubscribe.0.headers[SIPHeaderName.expires] == "0")
        // Not made again: no new winfo SUBSCRIBE.
        #expect(T.sent(ended, to: .oma).isEmpty)
    }

    /// A presence server that lists more watchers than the limit does not make the gateway open
    /// more subscriptions into the enterprise.
    @Test func standInsAreLimited() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let subscribe = try Self.watching(&h)
        // Over two documents: one NOTIFY of them all would be past the SIP parser's 64 KiB.
        let half = GatewayCore.mirroredWatchersLimit / 2 + 3
        func rows(_ range: Range<Int>) -> [(id: String, uri: String, status: String)] {
            range.map { ("w\($0)", "sip:u\($0)@oma.example", "active") }
        }
        let (id, first) = h.receive(
            try Self.notify(subscribe, cseq: 1, body: Self.winfo(version: 0, rows(0..<half))), from: .oma)
        #expect(T.responses(first, id).first?.statusCode == 200)
        let (_, second) = h.receive(
            try Self.notify(
                subscribe, cseq: 2, body: Self.winfo(version: 1, state: "partial", rows(half..<(2 * half)))),
            from: .oma)
        #expect(
            Self.enterpriseSubscribes(first).count + Self.enterpriseSubscribes(second).count
                == GatewayCore.mirroredWatchersLimit)
        // Those stood in for first are kept: none is traded for a later one.
        #expect(!T.sent(second, to: .enterprise).contains { $0.0.headers[SIPHeaderName.expires] == "0" })
        #expect(h.core.mirroredWatcherCount == GatewayCore.mirroredWatchersLimit)
        #expect(h.core.counts.omaWatches == 0, "stand-ins are not watchers")
    }

    /// `mirror-watchers` needs `publish-to-oma` (the OMA watchers see what the gateway publishes)
    /// and the subscriber-list context; each is refused with its place in the file.
    @Test func configurationIsChecked() throws {
        let withoutPublish = GatewayConfiguration.defaultYAML.replacingOccurrences(
            of: "publish-to-oma: true }", with: "publish-to-oma: false, mirror-watchers: true }")
        let error = try #require(throws: ConfigurationError.self) { try GatewayConfiguration(yaml: withoutPublish) }
        #expect(error.message.contains("needs publish-to-oma"), "\(error)")
        let line = withoutPublish.split(separator: "\n", omittingEmptySubsequences: false)
            .firstIndex { $0.contains("mirror-watchers") }
        #expect(error.line == line.map { $0 + 1 }, "\(error)")
        let withoutList = Self.yaml.replacingOccurrences(
            of: "next-hop: \"sip:127.0.0.1:5062;transport=tcp\"",
            with: "next-hop: \"sip:127.0.0.1:5062;transport=tcp\"\n  subscriber-list: false")
        let listError = try #require(throws: ConfigurationError.self) { try GatewayConfiguration(yaml: withoutList) }
        #expect(listError.message.contains("mirror-watchers needs enterprise: subscriber-list"), "\(listError)")
    }
}
