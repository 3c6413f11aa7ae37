import MSPresenceEvents
import NIOCore
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing

/// Event notification filters (RFC 4660, RFC 4661) of OMA watchers (docs/flows.md, "Filters"):
/// a filter of the note and the basic status asks the enterprise for `state` and `note` only,
/// in a subscription of its own; the watcher is sent those parts, and only when they change.
@Suite struct FilterTests {
    typealias T = GatewayCoreTests
    static let bob = "sip:bob@contoso.com"

    static let bindings = """
        <ns-bindings><ns-binding prefix="pidf" urn="urn:ietf:params:xml:ns:pidf"/>\
        <ns-binding prefix="dm" urn="urn:ietf:params:xml:ns:pidf:data-model"/></ns-bindings>
        """

    static let noteAndBasic = """
        <filter-set xmlns="urn:ietf:params:xml:ns:simple-filter" package="presence">\(bindings)\
        <filter id="f1" uri="sip:bob@contoso.com"><what>\
        <include>/pidf:presence/pidf:tuple/pidf:status/pidf:basic</include>\
        <include>/pidf:presence/dm:person/dm:note</include></what></filter></filter-set>
        """

    static func subscribe(_ filter: String, cseq: Int = 1, toTag: String? = nil) throws -> SIPRequest {
        var request = try T.omaSubscribe(cseq: cseq, toTag: toTag)
        request.body = Array(filter.utf8)
        request.headers.set(.contentType, "application/simple-filter+xml")
        request.headers.set(.contentLength, String(request.body.count))
        return request
    }

    static func categories(_ availability: UInt32, note: String) throws -> CategoriesDocument {
        var document = T.categories(availability: availability, uri: bob)
        let noteXML = """
            <categories xmlns="http://schemas.microsoft.com/2006/09/sip/categories" uri="sip:bob@contoso.com">\
            <category name="note" instance="0" publishTime="2026-11-25T10:00:00.000">\
            <note xmlns="http://schemas.microsoft.com/2006/09/sip/note"><body type="personal" uri="">\(note)</body></note>\
            </category></categories>
            """
        document.categories += try CategoriesDocument(bytes: Array(noteXML.utf8)).categories
        return document
    }

    @Test func aFilterOfTheNoteAndBasicStatus() throws {
        var h = try T.Harness()
        let (id, actions) = h.receive(try Self.subscribe(Self.noteAndBasic), from: .oma)
        // Its own single category subscription for state and note ([MS-PRES] §4.6).
        let (subscribe, context) = try #require(T.sent(actions, to: .enterprise).first)
        #expect(try subscribe.headers.require == nil || !(try subscribe.headers.require ?? []).contains("adhoclist"))
        let asked = String(decoding: subscribe.body, as: UTF8.self)
        #expect(asked.contains(#"name="state""#) && asked.contains(#"name="note""#))
        #expect(!asked.contains("contactCard") && !asked.contains("calendarData") && !asked.contains("services"))

        let ok = SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "ent1", headers: [
            (.contact, "<sip:pool.contoso.com:5061;transport=tls>"), (.expires, "3600"), (.event, "presence"),
            (.subscriptionState, "active;expires=3600"), (.contentType, "application/msrtc-event-categories+xml"),
            (.msPiggybackCSeq, "1"),
        ], body: try Self.categories(3500, note: "lunch").serialized())
        let answered = h.core.receive(ok, to: subscribe, context: context, now: h.now)
        #expect(T.responses(answered, id).first?.statusCode == 200)
        let (first, _) = try #require(T.sent(answered, to: .oma).first)
        let body = String(decoding: first.body, as: UTF8.self)
        #expect(body.contains("<basic>open</basic>") && body.contains("lunch"), "\(body)")
        #expect(!body.contains("contact>") && !body.contains("activities"))
        #expect(try PIDFDocument(bytes: first.body).tuples.count == 1)

        // Busy (6500): only the activities change, which the filter leaves out: nothing is sent.
        func notify(_ cseq: Int, _ availability: UInt32, _ note: String) throws -> [GatewayCore.Action] {
            var request = try T.enterpriseBENOTIFY(subscribe, cseq: cseq, try Self.categories(availability, note: note))
            request.headers.remove(.require)
            return h.receive(request, from: .enterprise).1
        }
        let busy = T.sent(try notify(2, 6500, "lunch"), to: .oma)
        #expect(busy.isEmpty, "\(busy.map { String(decoding: $0.0.body, as: UTF8.self) })")
        // A new note is sent.
        let (changed, _) = try #require(T.sent(try notify(3, 6500, "back at two"), to: .oma).first)
        #expect(String(decoding: changed.body, as: UTF8.self).contains("back at two"))
    }

    /// Triggers: only a change of the basic status is notified.
    @Test func aTriggerOnTheBasicStatus() throws {
        var h = try T.Harness()
        let filter = """
            <filter-set xmlns="urn:ietf:params:xml:ns:simple-filter">\(Self.bindings)<filter id="t">\
            <trigger><changed>/pidf:presence/pidf:tuple/pidf:status/pidf:basic</changed></trigger></filter></filter-set>
            """
        let (_, actions) = h.receive(try Self.subscribe(filter), from: .oma)
        let (subscribe, context) = try #require(T.sent(actions, to: .enterprise).first)
        // Without `what`, every bridged category is asked for.
        #expect(String(decoding: subscribe.body, as: UTF8.self).contains("contactCard"))
        let answered = h.core.receive(T.enterpriseOK(subscribe, T.categories(availability: 3500, uri: Self.bob)), to: subscribe, context: context, now: h.now)
        #expect(!T.sent(answered, to: .oma).isEmpty)
        func benotify(_ cseq: Int, _ availability: UInt32) throws -> [GatewayCore.Action] {
            h.receive(try T.enterpriseBENOTIFY(subscribe, cseq: cseq, T.categories(availability: availability, uri: Self.bob)), from: .enterprise).1
        }
        #expect(T.sent(try benotify(2, 6500), to: .oma).isEmpty)  // busy: still open
        let (offline, _) = try #require(T.sent(try benotify(3, 18500), to: .oma).first)  // offline: closed
        #expect(String(decoding: offline.body, as: UTF8.self).contains("<basic>closed</basic>"))
    }

    @Test func filtersThatCannotBeHonouredAreRefused() throws {
        var h = try T.Harness()
        func status(_ request: SIPRequest) -> Int? {
            let (id, actions) = h.receive(request, from: .oma)
            return T.responses(actions, id).first?.statusCode
        }
        #expect(status(try Self.subscribe("<filter-set")) == 400)
        let unsupported = Self.noteAndBasic.replacingOccurrences(of: "/pidf:presence/dm:person/dm:note", with: "//dm:note")
        #expect(status(try Self.subscribe(unsupported)) == 488)
        var msrtc = try Self.subscribe(Self.noteAndBasic)
        msrtc.headers.set(.accept, "text/xml+msrtc.pidf")
        #expect(status(msrtc) == 488)
        var other = try Self.subscribe(Self.noteAndBasic)
        other.headers.set(.contentType, "application/xml")
        #expect(status(other) == 415)
        // Each notification runs every trigger: a filter is bounded.
        let trigger = "<changed>/pidf:presence/pidf:tuple/pidf:status/pidf:basic</changed>"
        let many = """
            <filter-set xmlns="urn:ietf:params:xml:ns:simple-filter">\(Self.bindings)<filter id="t">\
            <trigger>\(String(repeating: trigger, count: 17))</trigger></filter></filter-set>
            """
        #expect(status(try Self.subscribe(many)) == 400)
        #expect(h.core.counts.omaWatches == 0)
        // A filter for another resource does not apply: the watcher is bridged as usual.
        let (_, actions) = h.receive(try Self.subscribe(Self.noteAndBasic.replacingOccurrences(of: Self.bob, with: "sip:eve@contoso.com")), from: .oma)
        #expect(String(decoding: try #require(T.sent(actions, to: .enterprise).first).0.body, as: UTF8.self).contains("contactCard"))
    }

    /// The filter is kept with the watch's record and applies after a restart.
    @Test func aRestoredWatchKeepsItsFilter() throws {
        typealias R = StateRestoreTests
        var h = try R.journaled()
        var records = R.Records()
        let (_, actions) = h.receive(try Self.subscribe(Self.noteAndBasic), from: .oma)
        let (subscribe, context) = try #require(T.sent(actions, to: .enterprise).first)
        _ = h.core.receive(T.enterpriseOK(subscribe, try Self.categories(3500, note: "lunch")), to: subscribe, context: context, now: h.now)
        R.take(&h, into: &records)
        var after = try R.journaled(prefix: "r")
        _ = try after.core.restore(records.all, clock: R.clock, now: after.now)
        var request = try T.enterpriseBENOTIFY(subscribe, cseq: 2, try Self.categories(3500, note: "tea"))
        request.headers.remove(.require)
        let (notify, _) = try #require(T.sent(after.receive(request, from: .enterprise).1, to: .oma).first)
        let body = String(decoding: notify.body, as: UTF8.self)
        #expect(body.contains("tea") && !body.contains("contact>"))
    }
}
