import NIOCore
import PresenceDocuments
import MSPresenceEvents
import SIPMessages
import Testing
import XMLBridge

@Suite struct CategoryPublisherTests {
    let t0 = NIODeadline.uptimeNanoseconds(4_000_000_000_000)
    let clock: Int64 = 1_200_072_553
    let bob = "sip:bob@contoso.com"

    private func publisher(rounds: Int = 3, tag: String = "b5410171e2") throws -> CategoryPublisher {
        CategoryPublisher(.init(publisher: try SIPAddress("<sip:bob@contoso.com>"), maxConflictRounds: rounds),
                          callID: "c-\(tag)", localTag: tag)
    }

    private func sent(_ actions: [CategoryPublisher.Action]) -> [SIPRequest] {
        actions.compactMap { if case .send(let r) = $0 { r } else { nil } }
    }

    private func key(_ container: UInt32) -> CategoryPublisher.ItemKey {
        .init(container: container, categoryName: .note, instance: 0)
    }

    /// The store answers the request (parsed as from the wire).
    private func answer(_ store: inout CategoryPublicationStore, _ request: SIPRequest, endpoint: String = "ep1") throws -> SIPResponse {
        // The transaction layer adds the Via (RFC 3261 §8.1.1.7).
        var request = request
        let sequence = (try? request.headers.cseq)?.sequence ?? 0
        request.headers.prepend(.via, "SIP/2.0/TCP 172.24.32.124:53925;branch=z9hG4bKsvc\(sequence)")
        let wire = try #require(try SIPMessage(parsing: request.serialized()).request)
        let actions = store.receive(wire, endpointID: endpoint, now: t0, utcSeconds: clock, toTag: "srv")
        guard case .respond(let r)? = actions.first else { throw MSPresenceEventsError(.invalidResponseBody, "no response") }
        return r
    }

    @Test func firstPublishSendsVersionZeroWithTheRightHeaders() throws {
        var client = try publisher()
        let request = try #require(sent(client.publish([.publish(key(300), try note("Working until 5pm today"))])).first)
        #expect(request.method == .service)
        #expect(try request.headers.contentType?.mediaType == "application/msrtc-category-publish+xml")
        #expect(try request.headers.from?.uri.description == bob)
        #expect(try request.headers.to?.uri.description == bob)
        #expect(try request.headers.to?.tag == nil)
        let body = try CategoryPublish(bytes: request.body)
        #expect(body.uri == bob)
        #expect(body.publications.map(\.version) == [0])
        #expect(body.publications.first?.payload == (try note("Working until 5pm today")))
    }

    @Test func builtRequestMatchesTheSeedPublishBody() throws {
        let seed = try CategoryPublish(bytes: try example("4.2.1-publish-request.xml"))
        var client = try publisher()
        let items = try [300, 400, 200].map { CategoryPublisher.Item.publish(key(UInt32($0)), try note("Working until 5pm today")) }
        let request = try #require(sent(client.publish(items)).first)
        #expect(try CategoryPublish(bytes: request.body) == seed)
    }

    @Test func okTeachesTheNewVersionsFromTheRoamingData() throws {
        var client = try publisher()
        var store = CategoryPublicationStore()
        let request = try #require(sent(client.publish([.publish(key(200), try note("a"))])).first)
        let actions = client.receive(try answer(&store, request))
        guard case .published(let document)? = actions.first else { Issue.record("not published"); return }
        #expect(document?.categories.first?.version == 1)
        #expect(client.versions[key(200)] == 1)
        // The next update carries version 1 and succeeds.
        let update = try #require(sent(client.publish([.publish(key(200), try note("b"))])).first)
        #expect(try CategoryPublish(bytes: update.body).publications.first?.version == 1)
        let ok = try answer(&store, update)
        #expect(ok.statusCode == 200)
        _ = client.receive(ok)
        #expect(client.versions[key(200)] == 2)
    }

    @Test func seedConflictBodyGivesTheVersionsForTheRetry() throws {
        var client = try publisher()
        let items = try [300, 400, 200].map { CategoryPublisher.Item.publish(key(UInt32($0)), try note("Working until 5pm today")) }
        let first = try #require(sent(client.publish(items)).first)
        var conflict = SIPResponse(replyingTo: first, statusCode: 409, toTag: "srv")
        conflict.headers.append(.contentType, "application/msrtc-fault+xml")
        conflict.body = try example("4.2.1-publish-409-conflict.xml")
        let retry = try #require(sent(client.receive(conflict)).first)
        // curVersion="2" for operations 1-3 (§4.2.1).
        #expect(try CategoryPublish(bytes: retry.body).publications.map(\.version) == [2, 2, 2])
        #expect(try retry.headers.cseq?.sequence == 2)
    }

    @Test func twoEndpointsRaceAndTheLoserRetriesWithTheCurrentVersion() throws {
        var store = CategoryPublicationStore()
        var desk = try publisher(tag: "desk")
        var phone = try publisher(tag: "phone")
        _ = desk.receive(try answer(&store, try #require(sent(desk.publish([.publish(key(200), try note("desk"))])).first)))
        // The phone does not know the instance exists: version 0 conflicts, then it retries with 1.
        let attempt = try #require(sent(phone.publish([.publish(key(200), try note("phone"))])).first)
        let conflict = try answer(&store, attempt, endpoint: "ep2")
        #expect(conflict.statusCode == 409)
        let retry = try #require(sent(phone.receive(conflict)).first)
        let ok = try answer(&store, retry, endpoint: "ep2")
        #expect(ok.statusCode == 200)
        _ = phone.receive(ok)
        #expect(phone.versions[key(200)] == 2)
        #expect(store.entries(of: bob).first?.payload == (try note("phone")))
    }

    @Test func conflictRoundsAreBounded() throws {
        var client = try publisher(rounds: 2)
        var request = try #require(sent(client.publish([.publish(key(200), try note("x"))])).first)
        func conflict(_ r: SIPRequest, current: UInt32) -> SIPResponse {
            var c = SIPResponse(replyingTo: r, statusCode: 409, toTag: "srv")
            c.body = PublishFault(operations: [.init(index: 1, version: 0, currentVersion: current)]).serialized()
            return c
        }
        request = try #require(sent(client.receive(conflict(request, current: 4))).first)
        request = try #require(sent(client.receive(conflict(request, current: 5))).first)
        let actions = client.receive(conflict(request, current: 6))
        #expect(sent(actions).isEmpty)
        #expect(actions == [.failed(statusCode: 409, reason: "version conflict after 2 rounds")])
    }

    @Test func deleteSendsExpiresZeroWithTheKnownVersionAndForgetsIt() throws {
        var client = try publisher()
        var store = CategoryPublicationStore()
        _ = client.receive(try answer(&store, try #require(sent(client.publish([.publish(key(200), try note("a"))])).first)))
        let delete = try #require(sent(client.publish([.delete(key(200))])).first)
        let p = try #require(try CategoryPublish(bytes: delete.body).publications.first)
        #expect(p.expires == 0)
        #expect(p.version == 1)
        #expect(p.payload == nil)
        _ = client.receive(try answer(&store, delete))
        #expect(client.versions[key(200)] == nil)
        #expect(store.entries(of: bob).isEmpty)
    }

    @Test func publishDuringAnOutstandingServiceWaitsAndMerges() throws {
        var client = try publisher()
        var store = CategoryPublicationStore()
        let first = try #require(sent(client.publish([.publish(key(200), try note("a"))])).first)
        #expect(client.publish([.publish(key(300), try note("b"))]).isEmpty)
        #expect(client.publish([.publish(key(300), try note("c"))]).isEmpty)
        let actions = client.receive(try answer(&store, first))
        let next = try #require(sent(actions).first)
        let body = try CategoryPublish(bytes: next.body)
        #expect(body.publications.map(\.container) == [300])
        #expect(body.publications.first?.payload == (try note("c")))
    }

    @Test func otherFailuresAndTimeoutsAreReported() throws {
        var client = try publisher()
        let request = try #require(sent(client.publish([.publish(key(200), try note("a"))])).first)
        let forbidden = SIPResponse(replyingTo: request, statusCode: 403, toTag: "srv")
        #expect(client.receive(forbidden) == [.failed(statusCode: 403, reason: "Forbidden")])
        _ = client.publish([.publish(key(200), try note("a"))])
        #expect(client.transactionFailed() == [.failed(statusCode: 408, reason: "Request Timeout")])
        #expect(client.outstanding == nil)
    }

    @Test func learnTakesVersionsFromASelfNotification() throws {
        var client = try publisher()
        client.learn(try roamingCategories(try example("4.2.1-self-benotify.xml")))
        #expect(client.versions[key(200)] == 1 && client.versions[key(300)] == 1 && client.versions[key(400)] == 1)
        let request = try #require(sent(client.publish([.publish(key(300), try note("z"))])).first)
        #expect(try CategoryPublish(bytes: request.body).publications.first?.version == 1)
    }
    @Test func okWithoutBodyStillAdvancesTheKnownVersions() throws {
        var client = try publisher()
        let request = try #require(sent(client.publish([.publish(key(200), try note("a"))])).first)
        let ok = SIPResponse(replyingTo: request, statusCode: 200, toTag: "srv")
        #expect(client.receive(ok) == [.published(nil)])
        #expect(client.versions[key(200)] == 1)
    }

    @Test func responseToAnotherCSeqIsIgnored() throws {
        var client = try publisher()
        let request = try #require(sent(client.publish([.publish(key(200), try note("a"))])).first)
        var stray = SIPResponse(replyingTo: request, statusCode: 200, toTag: "srv")
        stray.headers.set(.cseq, "99 SERVICE")
        #expect(client.receive(stray).isEmpty)
        #expect(client.outstanding != nil)
    }

    @Test func unreadableConflictBodyFails() throws {
        var client = try publisher()
        let request = try #require(sent(client.publish([.publish(key(200), try note("a"))])).first)
        let conflict = SIPResponse(replyingTo: request, statusCode: 409, toTag: "srv", body: Array("<Fault".utf8))
        #expect(client.receive(conflict) == [.failed(statusCode: 409, reason: "409 without a readable msrtc-fault body")])
    }
}
