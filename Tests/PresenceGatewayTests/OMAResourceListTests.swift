import Foundation
import GatewayState
import MSPresenceEvents
import NIOCore
import PresenceDocuments
import PresenceGateway
import PresenceMapping
import SIPMessages
import SIPStack
import Testing
import XMLBridge

/// Flow 1 through an OMA resource list server (RFC 4662; docs/flows.md, "Lists toward the OMA
/// side"): with `oma: rls`, the OMA resources of a batched category subscription are one list,
/// written as a `service` of the watcher's RFC 4826 rls-services document, and one list
/// subscription; its RLMI notifications become the watcher's batch notifications. The core is
/// driven here as the runtime drives it; the XCAP server's and the RLS's answers are written
/// after RFC 4825, RFC 4826 and RFC 4662 §5.
@Suite struct OMAResourceListTests {
    typealias T = GatewayCoreTests

    static let john = "sip:john@oma.example"
    static let mary = "sip:mary@oma.example"
    static let dave = "sip:dave@oma.example"
    static let root = "http://127.0.0.1:8080/xcap-root"
    /// Carol's rls-services document (RFC 4826 §4.4.7; her XUI is her SIP URI, RFC 4825 §4).
    static let document = "\(root)/rls-services/users/sip:carol@contoso.com/index"

    static let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(
        of: "  next-hop: \"sip:127.0.0.1:5070;transport=udp\"\n",
        with: "  next-hop: \"sip:127.0.0.1:5070;transport=udp\"\n  rls: { oma.example: \"\(root)\" }\n")

    static func writes(_ actions: [GatewayCore.Action]) -> [(uri: String, body: [UInt8]?)] {
        actions.compactMap { if case .writeListDocument(let uri, let body) = $0 { (uri, body) } else { nil } }
    }

    /// The services of an rls-services document: each service's URI and its entries.
    static func services(_ body: [UInt8]) throws -> [(uri: String, entries: [String])] {
        let root = try XMLParser.parse(body)
        let ns = "urn:ietf:params:xml:ns:rls-services"
        #expect(root.name == XMLName(ns, "rls-services"))
        return root.elements(XMLName(ns, "service")).map { service in
            let entries = service.elements(XMLName(ns, "list")).flatMap {
                $0.elements(XMLName("urn:ietf:params:xml:ns:resource-lists", "entry"))
            }
            return (service.attribute(XMLName("", "uri")) ?? "", entries.compactMap { $0.attribute(XMLName("", "uri")) })
        }
    }

    /// The rls-services schema of RFC 4826 §4.2 (with RFC 4826 §3.2's resource-lists).
    static let schema = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("../shared/spec/ietf-schemas/rlsservices.xsd")
        .standardizedFileURL.path

    /// Carol subscribes to `resources` in one batch; the document the gateway writes is answered
    /// `status`. Returns the request id, the list SUBSCRIBE (if one was sent) and the actions.
    static func subscribe(_ h: inout T.Harness, _ resources: [String], written status: Int? = 201) throws
        -> (id: GatewayCore.ServerRequestID, list: (SIPRequest, GatewayCore.Context)?, actions: [GatewayCore.Action])
    {
        let (id, actions) = h.receive(try T.enterpriseSubscribe(resources: resources), from: .enterprise, network: .sameEnterprise)
        let write = try #require(writes(actions).first)
        #expect(write.uri == document)
        let after = h.core.listDocumentWritten(write.uri, status: status, now: h.now)
        return (id, T.sent(after, to: .oma).first { $0.0.uri.user?.hasPrefix("gw-list-") == true }, actions + after)
    }

    /// The RLS accepts the list subscription (RFC 4662 §4.4: 200 with `Require: eventlist`).
    static func accept(_ h: inout T.Harness, _ list: (SIPRequest, GatewayCore.Context)) -> [GatewayCore.Action] {
        h.core.receive(
            SIPResponse(replyingTo: list.0, statusCode: 200, toTag: "rls1",
                        headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>"), (.require, "eventlist")]),
            to: list.0, context: list.1, now: h.now)
    }

    /// A member's instance in an RLMI document (RFC 4662 §5.5): its state and, when `pidf` is
    /// given, the part with the member's PIDF.
    struct Member {
        var uri: String
        var state = "active"
        var reason: String?
        var pidf: [UInt8]?
    }

    /// A list NOTIFY (RFC 4662 §5): `multipart/related;type="application/rlmi+xml"` with the
    /// RLMI root part, then one `application/pidf+xml` part per instance with state, each named
    /// by its `cid`.
    static func listNotify(
        _ subscribe: SIPRequest, cseq: Int, version: Int, full: Bool, members: [Member],
        state: String = "active;expires=3500", listURI: String? = nil
    ) throws -> SIPRequest {
        let boundary = "b7xQ2Lr"
        var rlmi = """
            <?xml version="1.0" encoding="UTF-8"?>
            <list xmlns="urn:ietf:params:xml:ns:rlmi" uri="\(listURI ?? subscribe.uri.description)" \
            version="\(version)" fullState="\(full)">
            """
        var parts = ""
        for (index, member) in members.enumerated() {
            let cid = member.pidf == nil ? "" : " cid=\"m\(index)@rls.oma.example\""
            let reason = member.reason.map { " reason=\"\($0)\"" } ?? ""
            rlmi += "<resource uri=\"\(member.uri)\"><instance id=\"i\(index)\" state=\"\(member.state)\"\(reason)\(cid)/></resource>"
            if let pidf = member.pidf {
                parts += "--\(boundary)\r\nContent-Transfer-Encoding: binary\r\nContent-ID: <m\(index)@rls.oma.example>\r\n"
                    + "Content-Type: application/pidf+xml\r\n\r\n\(String(decoding: pidf, as: UTF8.self))\r\n"
            }
        }
        rlmi += "</list>"
        let body = "--\(boundary)\r\nContent-Transfer-Encoding: binary\r\nContent-ID: <list@rls.oma.example>\r\n"
            + "Content-Type: application/rlmi+xml;charset=\"UTF-8\"\r\n\r\n\(rlmi)\r\n\(parts)--\(boundary)--\r\n"
        var notify = try T.omaNotify(subscribe, cseq: cseq, state: state, body: Array(body.utf8))
        notify.headers.set(.contentType,
            "multipart/related;type=\"application/rlmi+xml\";start=\"<list@rls.oma.example>\";boundary=\"\(boundary)\"")
        notify.headers.set(.require, "eventlist")
        return notify
    }

    static func rlmi(_ request: SIPRequest) throws -> BatchSubscribeResponse {
        guard let multipart = try SIPMessage.request(request).multipartBody() else { throw T.Unexpected(what: "not multipart") }
        return try BatchSubscribeResponse(multipart: multipart)
    }

    static func warning(_ response: SIPResponse?) -> String? { response?.headers[.warning] }

    // MARK: - The list

    /// Two resources of a domain with an RLS are one `service` of Carol's rls-services document
    /// (RFC 4826 §4: a `list` of `rl:entry`, package `presence`), valid against the RFC's
    /// schema; nothing is sent before the XCAP server took it. Then one SUBSCRIBE to the list's
    /// URI with `Supported: eventlist` and an Accept of `multipart/related`,
    /// `application/rlmi+xml` and PIDF (RFC 4662 §4.1), From Carol. No per-resource SUBSCRIBE.
    @Test func twoResourcesOfTheDomainAreOneListWrittenThenSubscribed() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, actions) = h.receive(try T.enterpriseSubscribe(resources: [Self.john, Self.mary]), from: .enterprise,
                                     network: .sameEnterprise)
        #expect(T.sent(actions, to: .oma).isEmpty)
        let write = try #require(Self.writes(actions).first)
        #expect(write.uri == Self.document)
        let body = try #require(write.body)
        #expect(try XMLSchema(path: Self.schema).validate(body) == [])
        let services = try Self.services(body)
        #expect(services.count == 1)
        #expect(services.first?.entries == [Self.john, Self.mary])
        let listURI = try #require(services.first?.uri)
        #expect(listURI.hasPrefix("sip:gw-list-") && listURI.hasSuffix("@oma.example"))

        let after = h.core.listDocumentWritten(write.uri, status: 201, now: h.now)
        let subscribes = T.sent(after, to: .oma)
        #expect(subscribes.count == 1)
        let (subscribe, _) = try #require(subscribes.first)
        #expect(subscribe.uri.description == listURI)
        #expect(try (subscribe.headers.to)?.uri.description == listURI)
        #expect(try (subscribe.headers.from)?.uri.description == "sip:carol@contoso.com")
        #expect(subscribe.headers[.supported]?.contains("eventlist") == true)
        let accept = try #require(subscribe.headers[.accept])
        for type in ["multipart/related", "application/rlmi+xml", "application/pidf+xml"] { #expect(accept.contains(type)) }
    }

    /// Two batch dialogs of Carol's (two endpoints) make two lists in her one document, written
    /// one at a time: the second list, made while the first write is under way, is written with
    /// the first once that write is answered, and both are subscribed after it.
    @Test func listsOfOneWatcherShareADocumentWrittenOneAtATime() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, first) = h.receive(try T.enterpriseSubscribe(resources: [Self.john, Self.mary]), from: .enterprise,
                                   network: .sameEnterprise)
        let write = try #require(Self.writes(first).first)
        var second = try T.enterpriseSubscribe(resources: [Self.mary, Self.dave])
        second.headers.set(.callID, "enterprise-endpoint-2")
        second.headers.set(.from, "<sip:carol@contoso.com>;tag=second")
        let (_, meanwhile) = h.receive(second, from: .enterprise, network: .sameEnterprise)
        #expect(Self.writes(meanwhile).isEmpty && T.sent(meanwhile, to: .oma).isEmpty)

        let again = h.core.listDocumentWritten(write.uri, status: 200, now: h.now)
        #expect(T.sent(again, to: .oma).isEmpty, "nothing subscribed before the document holds both lists")
        let both = try #require(Self.writes(again).first)
        #expect(both.uri == Self.document)
        let services = try Self.services(try #require(both.body))
        #expect(services.map(\.entries) == [[Self.john, Self.mary], [Self.mary, Self.dave]])
        let subscribed = T.sent(h.core.listDocumentWritten(both.uri, status: 200, now: h.now), to: .oma)
        #expect(Set(subscribed.map(\.0.uri.description)) == Set(services.map(\.uri)))
    }

    /// A single resource of the domain, a single subscription, or a domain without `rls` keep
    /// one PIDF subscription per resource, as without lists.
    @Test func oneResourceKeepsALegOfItsOwn() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, actions) = h.receive(try T.enterpriseSubscribe(resources: [Self.john]), from: .enterprise,
                                     network: .sameEnterprise)
        #expect(Self.writes(actions).isEmpty)
        #expect(T.sent(actions, to: .oma).map(\.0.uri.description) == [Self.john])
    }

    /// A poll (Expires 0, [MS-PRES] §3.4.5.1.2) is a one-shot fetch: no list is written for it.
    @Test func aPollFetchesWithoutAList() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, actions) = h.receive(try T.enterpriseSubscribe(resources: [Self.john, Self.mary], expires: 0),
                                     from: .enterprise, network: .sameEnterprise)
        #expect(Self.writes(actions).isEmpty)
        #expect(Set(T.sent(actions, to: .oma).map(\.0.uri.description)) == [Self.john, Self.mary])
    }

    /// The first list notification carries full state: John active with his PIDF, Mary pending
    /// (RFC 4662 §5.5). Carol's 200 OK (sent once both reported) lists Mary pending and carries
    /// John's categories, as per-resource subscriptions would give.
    @Test func fullStateAnswersTheWatcher() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (id, list, _) = try Self.subscribe(&h, [Self.john, Self.mary])
        let (subscribe, context) = try #require(list)
        _ = Self.accept(&h, (subscribe, context))
        let notify = try Self.listNotify(subscribe, cseq: 1, version: 0, full: true, members: [
            Member(uri: Self.john, pidf: T.pidf(Self.john, activity: "away")),
            Member(uri: Self.mary, state: "pending"),
        ])
        let (notifyID, actions) = h.receive(notify, from: .oma)
        #expect(T.responses(actions, notifyID).first?.statusCode == 200)
        let ok = try #require(T.responses(actions, id).first)
        let first = try T.firstCategories(ok)
        #expect(first.list.resources.map(\.uri) == [Self.mary])
        #expect(first.list.resources.first?.instances.first?.state == .pending)
        #expect(first.categories.map(\.uri) == [Self.john])
        #expect(T.availability(first.categories.first).0 == 15500)
    }

    /// The same list, answered: a partial notification one version higher with John busy and
    /// Mary active becomes one notification of Carol's batch dialog: its RLMI part lists Mary
    /// active, and it carries both resources' categories ([MS-PRES] §2.2.2.4.2). A partial one
    /// naming only John becomes the categories document alone, as a leg's notification would.
    @Test func partialStateOfSeveralMembersIsOneBatchNotification() throws {
        var (h, subscribe, _) = try Self.answeredList()
        let (_, both) = h.receive(try Self.listNotify(subscribe, cseq: 2, version: 1, full: false, members: [
            Member(uri: Self.john, pidf: T.pidf(Self.john, activity: "busy")),
            Member(uri: Self.mary, pidf: T.pidf(Self.mary, activity: nil)),
        ]), from: .oma)
        let notifies = T.sent(both, to: .enterprise)
        #expect(notifies.count == 1)
        let update = try Self.rlmi(try #require(notifies.first?.0))
        #expect(update.list.resources.map(\.uri) == [Self.mary])
        #expect(update.list.resources.first?.instances.first?.state == .active)
        #expect(Set(update.categories.map(\.uri)) == [Self.john, Self.mary])

        let (_, johnOnly) = h.receive(try Self.listNotify(subscribe, cseq: 3, version: 2, full: false, members: [
            Member(uri: Self.john, pidf: T.pidf(Self.john, activity: "away")),
        ]), from: .oma)
        let (notify, _) = try #require(T.sent(johnOnly, to: .enterprise).first)
        #expect(notify.headers[.contentType]?.hasPrefix("application/msrtc-event-categories+xml") == true)
        let document = try CategoriesDocument(bytes: notify.body)
        #expect(document.uri == Self.john)
        #expect(T.availability(document).0 == 15500)
    }

    /// The list subscribed, answered and given full state (John away, Mary pending, version 0),
    /// Carol answered: the harness and the list SUBSCRIBE.
    static func answeredList(_ harness: T.Harness? = nil) throws -> (T.Harness, SIPRequest, String) {
        var h = try harness ?? T.Harness(yaml: Self.yaml)
        let (id, list, _) = try Self.subscribe(&h, [Self.john, Self.mary])
        let (subscribe, context) = try #require(list)
        _ = Self.accept(&h, (subscribe, context))
        let (_, answered) = h.receive(try Self.listNotify(subscribe, cseq: 1, version: 0, full: true, members: [
            Member(uri: Self.john, pidf: T.pidf(Self.john, activity: "away")),
            Member(uri: Self.mary, state: "pending"),
        ]), from: .oma)
        let ok = try #require(T.responses(answered, id).first)
        return (h, subscribe, try #require(try ok.headers.to?.tag))
    }

    /// A SUBSCRIBE in Carol's dialog (the gateway's `tag`) naming `resources` (RFC 6665
    /// §4.1.2.2; [MS-PRES] §3.4.5.1.3).
    static func inDialog(_ resources: [String], tag: String, cseq: Int, expires: Int = 3600) throws -> SIPRequest {
        var request = try T.enterpriseSubscribe(resources: resources, expires: expires)
        request.headers.set(.to, "<sip:carol@contoso.com>;tag=\(tag)")
        request.headers.set(.cseq, "\(cseq) SUBSCRIBE")
        return request
    }

    /// A list subscription that is itself pending (RFC 6665 §4.1.3: a NOTIFY without body,
    /// `Subscription-State: pending`) shows its members without state pending, as their own
    /// subscriptions' pending would be ([MS-PRES] §2.2.2.4.2).
    @Test func aPendingListShowsItsMembersPending() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (id, list, _) = try Self.subscribe(&h, [Self.john, Self.mary])
        let (subscribe, context) = try #require(list)
        _ = Self.accept(&h, (subscribe, context))
        var pending = try T.omaNotify(subscribe, cseq: 1, state: "pending;expires=3500", body: [])
        pending.headers.set(.require, "eventlist")
        let (_, actions) = h.receive(pending, from: .oma)
        let ok = try #require(T.responses(actions, id).first)
        let first = try T.firstCategories(ok)
        #expect(Set(first.list.resources.map(\.uri)) == [Self.john, Self.mary])
        #expect(first.list.resources.allSatisfy { $0.instances.first?.state == .pending })
    }

    /// RFC 6665 §4.1.2.2: a refresh answered 481 found the list subscription gone; it is made
    /// again in a new dialog, and Carol's dialog goes on.
    @Test func aListWhoseRefreshFindsItGoneIsMadeAgain() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, list, _) = try Self.subscribe(&h, [Self.john, Self.mary])
        let (subscribe, context) = try #require(list)
        let accepted = Self.accept(&h, (subscribe, context))
        let timer = try #require(accepted.compactMap { if case .schedule(let t, _) = $0 { t } else { nil } }.first)
        #expect(timer == .refresh(context))
        let refresh = try #require(T.sent(h.core.fire(timer, now: h.now + .seconds(3000)), to: .oma).first)
        let gone = h.core.receive(SIPResponse(replyingTo: refresh.0, statusCode: 481), to: refresh.0, context: refresh.1,
                                  now: h.now + .seconds(3000))
        let renewed = try #require(T.sent(gone, to: .oma).first?.0)
        #expect(try renewed.uri == subscribe.uri && (renewed.headers.to)?.tag == nil)
        #expect(renewed.headers.callID != subscribe.headers.callID)
        #expect(T.sent(gone, to: .enterprise).isEmpty)
    }

    /// An RLS that challenges the list SUBSCRIBE (RFC 3261 §22.2): the runtime sends it again
    /// with credentials and CSeq one higher, and the list takes that request as its outstanding
    /// one. The 200 to it makes the dialog, and the refresh in that dialog numbers on from the
    /// resent CSeq (§12.2.1.1). A request for a list that is not there is not taken.
    @Test func aChallengedListSubscribeIsResentAndItsDialogNumbersOn() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, list, _) = try Self.subscribe(&h, [Self.john, Self.mary])
        let (subscribe, context) = try #require(list)
        let first = try #require(try subscribe.headers.cseq).sequence
        var again = subscribe
        again.headers.set(.cseq, "\(first + 1) SUBSCRIBE")
        again.headers.append("Authorization", "Digest username=\"gw\"")
        let taken = h.core.resent(again, for: context)
        #expect(taken)
        let takenForNone = h.core.resent(again, for: .omaList(-1))
        #expect(!takenForNone)

        let accepted = Self.accept(&h, (again, context))
        let timer = try #require(accepted.compactMap { if case .schedule(let t, _) = $0 { t } else { nil } }.first)
        #expect(timer == .refresh(context))
        let refresh = try #require(T.sent(h.core.fire(timer, now: h.now + .seconds(3000)), to: .oma).first?.0)
        #expect(try refresh.headers.cseq?.sequence == first + 2)
        #expect(try refresh.headers.to?.tag == "rls1")
    }

    // MARK: - Versions and bad bodies

    /// RFC 4662 §5.6: a version not above the last one taken is discarded (refused here with 400
    /// and a Warning) and changes nothing; a partial one past the next version is taken, and
    /// the list refreshed for full state (§5.6.2), which is then taken too.
    @Test func versionsGoingBackAreRefusedAndGapsAskForFullState() throws {
        var (h, subscribe, _) = try Self.answeredList()
        let (backID, back) = h.receive(try Self.listNotify(subscribe, cseq: 2, version: 0, full: false, members: [
            Member(uri: Self.john, pidf: T.pidf(Self.john, activity: "busy")),
        ]), from: .oma)
        let refused = try #require(T.responses(back, backID).first)
        #expect(refused.statusCode == 400)
        #expect(Self.warning(refused)?.contains("version 0") == true)
        #expect(T.sent(back, to: .enterprise).isEmpty)

        let (gapID, gap) = h.receive(try Self.listNotify(subscribe, cseq: 3, version: 5, full: false, members: [
            Member(uri: Self.john, pidf: T.pidf(Self.john, activity: "busy")),
        ]), from: .oma)
        #expect(T.responses(gap, gapID).first?.statusCode == 200)
        let (busy, _) = try #require(T.sent(gap, to: .enterprise).first)
        #expect(try T.availability(CategoriesDocument(bytes: busy.body)).0 == 6500)
        let refresh = try #require(T.sent(gap, to: .oma).first?.0)
        #expect(try refresh.method == .subscribe && (refresh.headers.to)?.tag == "rls1")

        // Version 5 is now the last taken: 5 again is discarded, the full state 6 taken.
        let (againID, again) = h.receive(try Self.listNotify(subscribe, cseq: 4, version: 5, full: true, members: [
            Member(uri: Self.john, pidf: T.pidf(Self.john, activity: "away")),
        ]), from: .oma)
        #expect(T.responses(again, againID).first?.statusCode == 400)
        let (_, full) = h.receive(try Self.listNotify(subscribe, cseq: 5, version: 6, full: true, members: [
            Member(uri: Self.john, pidf: T.pidf(Self.john, activity: "away")),
            Member(uri: Self.mary, state: "pending"),
        ]), from: .oma)
        let (notify, _) = try #require(T.sent(full, to: .enterprise).first)
        #expect(try T.availability(CategoriesDocument(bytes: notify.body)).0 == 15500)
    }

    /// Bodies that are not a readable list notification of this list are refused with 400 and a
    /// Warning saying why (RFC 3261 §21.4.1, §20.43), and the watcher hears nothing: not
    /// multipart, an RLMI part that does not parse, a PIDF part that does not parse, another
    /// list's URI. A resource the list does not hold is left out, named in the 200's Warning.
    @Test func badListNotificationsAreRefusedWithAWarning() throws {
        var (h, subscribe, _) = try Self.answeredList()
        let good = try Self.listNotify(subscribe, cseq: 2, version: 1, full: false, members: [
            Member(uri: Self.john, pidf: T.pidf(Self.john, activity: "busy")),
        ])
        var plain = try T.omaNotify(subscribe, cseq: 2, body: T.pidf(Self.john, activity: "busy"))
        plain.headers.set(.require, "eventlist")
        var brokenRLMI = good
        brokenRLMI.body = Array(String(decoding: good.body, as: UTF8.self)
            .replacingOccurrences(of: "</list>", with: "</lst>").utf8)
        var brokenPIDF = good
        brokenPIDF.body = Array(String(decoding: good.body, as: UTF8.self)
            .replacingOccurrences(of: "</presence>", with: "</presense>").utf8)
        let otherList = try Self.listNotify(subscribe, cseq: 2, version: 1, full: false, members: [
            Member(uri: Self.john, pidf: T.pidf(Self.john, activity: "busy")),
        ], listURI: "sip:someone-else@oma.example")
        for (bad, says) in [(plain, "multipart/related"), (brokenRLMI, "RLMI"), (brokenPIDF, "part"), (otherList, "is not")] {
            let (id, actions) = h.receive(bad, from: .oma)
            let response = try #require(T.responses(actions, id).first)
            #expect(response.statusCode == 400)
            #expect(Self.warning(response)?.hasPrefix("399 ") == true)
            #expect(Self.warning(response)?.contains(says) == true)
            #expect(T.sent(actions, to: .enterprise).isEmpty)
        }
        // The good one still applies (version 1 follows 0): nothing bad was taken.
        let (unknownID, unknown) = h.receive(try Self.listNotify(subscribe, cseq: 3, version: 1, full: false, members: [
            Member(uri: Self.john, pidf: T.pidf(Self.john, activity: "busy")),
            Member(uri: Self.dave, pidf: T.pidf(Self.dave, activity: "busy")),
        ]), from: .oma)
        let ok = try #require(T.responses(unknown, unknownID).first)
        #expect(ok.statusCode == 200)
        #expect(Self.warning(ok)?.contains(Self.dave) == true)
        let notifies = T.sent(unknown, to: .enterprise)
        #expect(notifies.count == 1)
        #expect(try CategoriesDocument(bytes: try #require(notifies.first?.0).body).uri == Self.john)
    }

    // MARK: - Members joining and leaving

    /// RFC 4662 §5.5: an instance `terminated` takes the resource out of Carol's batch with its
    /// reason ([MS-PRES] §2.2.2.4.2), and out of the document; Carol unsubscribing John takes
    /// him out of the document too, and the list is refreshed once the document is written;
    /// the last member gone ends the list (Expires 0) and deletes the document.
    @Test func membersLeaveTheDocumentAndTheLastOneEndsTheList() throws {
        var (h, subscribe, tag) = try Self.answeredList()
        let (_, ended) = h.receive(try Self.listNotify(subscribe, cseq: 2, version: 1, full: false, members: [
            Member(uri: Self.mary, state: "terminated", reason: "rejected"),
        ]), from: .oma)
        let (notify, _) = try #require(T.sent(ended, to: .enterprise).first)
        let instance = try #require(try Self.rlmi(notify).list.resources.first { $0.uri == Self.mary }?.instances.first)
        #expect(instance.state == .terminated && instance.reason == "rejected")
        let rewrite = try #require(Self.writes(ended).first)
        #expect(try Self.services(try #require(rewrite.body)).first?.entries == [Self.john])
        let refreshed = h.core.listDocumentWritten(rewrite.uri, status: 200, now: h.now)
        let refresh = try #require(T.sent(refreshed, to: .oma).first?.0)
        #expect(try refresh.method == .subscribe && (refresh.headers.to)?.tag == "rls1")
        #expect(refresh.headers[.expires] != "0")

        // Carol ends her subscription: the list is unsubscribed and the document deleted.
        let (_, gone) = h.receive(try Self.inDialog([Self.john], tag: tag, cseq: 2, expires: 0), from: .enterprise,
                                  network: .sameEnterprise)
        let unsubscribe = try #require(T.sent(gone, to: .oma).first?.0)
        #expect(try unsubscribe.uri.user?.hasPrefix("gw-list-") == true || (unsubscribe.headers.to)?.tag == "rls1")
        #expect(unsubscribe.headers[.expires] == "0")
        let delete = try #require(Self.writes(gone).first)
        #expect(delete.uri == Self.document && delete.body == nil)
    }

    /// A resource added to the batch later joins the list: the document is written with it, then
    /// the list refreshed (the RLS reads the list again), not a SUBSCRIBE of its own.
    @Test func aResourceAddedLaterJoinsTheList() throws {
        var (h, _, tag) = try Self.answeredList()
        let (_, actions) = h.receive(try Self.inDialog([Self.dave], tag: tag, cseq: 2), from: .enterprise, network: .sameEnterprise)
        #expect(T.sent(actions, to: .oma).isEmpty)
        let write = try #require(Self.writes(actions).first)
        #expect(try Self.services(try #require(write.body)).first?.entries == [Self.john, Self.mary, Self.dave])
        let after = h.core.listDocumentWritten(write.uri, status: 200, now: h.now)
        let refresh = try #require(T.sent(after, to: .oma).first?.0)
        #expect(try (refresh.headers.to)?.tag == "rls1")
    }

    // MARK: - Falling back

    /// The XCAP server refuses the document: each resource gets its own PIDF subscription, as
    /// without `rls`, and the next batch in the domain goes per resource at once (the domain is
    /// not asked for lists for five minutes).
    @Test func aRefusedDocumentFallsBackToLegsOfTheirOwn() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, list, actions) = try Self.subscribe(&h, [Self.john, Self.mary], written: 403)
        #expect(list == nil)
        #expect(Set(T.sent(actions, to: .oma).map(\.0.uri.description)) == [Self.john, Self.mary])

        var other = try T.enterpriseSubscribe(resources: [Self.dave, Self.john], from: "sip:erin@contoso.com")
        other.headers.set(.callID, "enterprise-call-2")
        let (_, next) = h.receive(other, from: .enterprise, network: .sameEnterprise)
        #expect(Self.writes(next).isEmpty)
        #expect(Set(T.sent(next, to: .oma).map(\.0.uri.description)) == [Self.dave, Self.john])
    }

    /// The RLS refuses the list SUBSCRIBE (here 404: RFC 4662 leaves what a server without the
    /// list answers to it): each member gets its own subscription, and the document is written
    /// without the list.
    @Test func aRefusedListSubscribeFallsBackToLegsOfTheirOwn() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, list, _) = try Self.subscribe(&h, [Self.john, Self.mary])
        let (subscribe, context) = try #require(list)
        let refused = h.core.receive(SIPResponse(replyingTo: subscribe, statusCode: 404, toTag: "rls1"),
                                     to: subscribe, context: context, now: h.now)
        #expect(Set(T.sent(refused, to: .oma).map(\.0.uri.description)) == [Self.john, Self.mary])
        let write = try #require(Self.writes(refused).first)
        #expect(write.body == nil)
    }

    /// RFC 4662 §4.1: a 200 without `Require: eventlist` comes from a server that took the list's
    /// URI for a single resource (Kamailio's presence server does so for a list its RLS does
    /// not know): the list is given up, unsubscribed, and each member subscribed on its own.
    @Test func aSubscriptionAnsweredWithoutEventlistIsNoList() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, list, _) = try Self.subscribe(&h, [Self.john, Self.mary])
        let (subscribe, context) = try #require(list)
        let answered = h.core.receive(
            SIPResponse(replyingTo: subscribe, statusCode: 200, toTag: "pres1",
                        headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
            to: subscribe, context: context, now: h.now)
        let sent = T.sent(answered, to: .oma).map(\.0)
        #expect(Set(sent.filter { $0.headers[.expires] != "0" }.map(\.uri.description)) == [Self.john, Self.mary])
        let unsubscribe = try #require(sent.first { $0.headers[.expires] == "0" })
        #expect(unsubscribe.uri.description.hasPrefix("sip:127.0.0.1:5070") || unsubscribe.uri == subscribe.uri)
        #expect(try Self.writes(answered).first?.body == nil)
    }

    /// RFC 6665 §4.1.3: a list subscription ended with `deactivated` is made again at once, in a
    /// new dialog; one ended with `noresource` is given up for subscriptions of the members' own,
    /// and their state so far stays what Carol was shown.
    @Test func anEndedListIsMadeAgainOrGivenUp() throws {
        var (h, subscribe, _) = try Self.answeredList()
        let (_, again) = h.receive(try Self.listNotify(subscribe, cseq: 2, version: 1, full: true, members: [],
                                                       state: "terminated;reason=deactivated"), from: .oma)
        let renewed = try #require(T.sent(again, to: .oma).first)
        #expect(try renewed.0.uri == subscribe.uri && (renewed.0.headers.to)?.tag == nil)
        #expect(renewed.0.headers.callID != subscribe.headers.callID)
        _ = Self.accept(&h, renewed)
        let (_, given) = h.receive(try Self.listNotify(renewed.0, cseq: 1, version: 0, full: true, members: [],
                                                       state: "terminated;reason=noresource"), from: .oma)
        #expect(Set(T.sent(given, to: .oma).map(\.0.uri.description)) == [Self.john, Self.mary])
        #expect(T.sent(given, to: .enterprise).isEmpty)
    }

    /// A reload that drops the domain's `rls` gives its lists up: each member gets its own
    /// subscription, the list is unsubscribed and its document deleted (written with the root
    /// it was made with).
    @Test func aReloadWithoutTheDomainsRLSGivesItsListsUp() throws {
        var (h, subscribe, _) = try Self.answeredList()
        let without = try GatewayConfiguration(yaml: GatewayConfiguration.defaultYAML)
        let actions = h.core.reconfigure(without, mapper: h.core.mapper, now: h.now)
        let sent = T.sent(actions, to: .oma).map(\.0)
        #expect(Set(sent.filter { $0.headers[.expires] != "0" }.map(\.uri.description)) == [Self.john, Self.mary])
        #expect(try sent.contains { $0.headers[.expires] == "0" && $0.headers.callID == subscribe.headers.callID })
        let delete = try #require(Self.writes(actions).first)
        #expect(delete.uri == Self.document && delete.body == nil)
        // What Carol was shown stays: nothing is sent to her.
        #expect(T.sent(actions, to: .enterprise).isEmpty)
    }

    // MARK: - Durable state

    /// A list being ended when the gateway stopped is unsubscribed again after the restart, in
    /// its dialog, and forgotten 64·T1 later (Kamailio's RLS sends no final NOTIFY).
    @Test func aRestoredListBeingEndedIsUnsubscribedAgain() throws {
        typealias S = StateRestoreTests
        var (h, subscribe, tag) = try Self.answeredList(try S.journaled(yaml: Self.yaml))
        _ = h.receive(try Self.inDialog([Self.john], tag: tag, cseq: 2, expires: 0), from: .enterprise,
                      network: .sameEnterprise)
        var records = S.Records()
        S.take(&h, into: &records)
        #expect(records.kinds()["oma-list"] == 1)

        var again = try S.journaled(yaml: Self.yaml, prefix: "r")
        let restored = try again.core.restore(records.all, clock: S.clock, now: h.now)
        let unsubscribe = try #require(T.sent(restored, to: .oma).first?.0)
        #expect(try unsubscribe.headers.callID == subscribe.headers.callID && unsubscribe.headers[.expires] == "0"
                && (unsubscribe.headers.to)?.tag == "rls1")
        #expect(restored.contains { if case .schedule(.cleanup(.omaList), _) = $0 { true } else { false } })
    }

    /// The list and its members are kept by the durable store (docs/state.md): a core restored
    /// from the records refreshes the list in its dialog, and the next notification with full
    /// state is taken whatever its version (the version is not kept).
    @Test func aRestoredListIsRefreshedInItsDialog() throws {
        typealias S = StateRestoreTests
        var (h, subscribe, _) = try Self.answeredList(try S.journaled(yaml: Self.yaml))
        var records = S.Records()
        S.take(&h, into: &records)
        #expect(records.kinds()["oma-list"] == 1)
        #expect(records.kinds()["oma-leg"] == 2)

        var again = try S.journaled(yaml: Self.yaml, prefix: "r")
        let restored = try again.core.restore(records.all, clock: S.clock, now: h.now)
        let refresh = restored.compactMap { if case .schedule(.refresh(.omaList(let key)), _) = $0 { key } else { nil } }
        #expect(refresh.count == 1)
        let key = try #require(refresh.first)
        let sent = again.core.fire(.refresh(.omaList(key)), now: h.now + .seconds(1))
        let (renew, _) = try #require(T.sent(sent, to: .oma).first)
        #expect(try renew.headers.callID == subscribe.headers.callID && (renew.headers.to)?.tag == "rls1")
        let (_, taken) = again.receive(try Self.listNotify(subscribe, cseq: 9, version: 40, full: true, members: [
            Member(uri: Self.john, pidf: T.pidf(Self.john, activity: "busy")),
            Member(uri: Self.mary, state: "pending"),
        ]), from: .oma)
        #expect(!T.sent(taken, to: .enterprise).isEmpty)
    }
}
