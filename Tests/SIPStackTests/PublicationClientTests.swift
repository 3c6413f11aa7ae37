import NIOCore
import SIPMessages
import SIPStack
import Testing

@Suite struct PublicationClientTests {
    let t0 = NIODeadline.uptimeNanoseconds(2_000_000_000_000)
    let pidf = Array("<presence entity='sip:alice@contoso.com'/>".utf8)

    private func configuration(expires: UInt32 = 3600) throws -> PublicationClient.Configuration {
        PublicationClient.Configuration(
            target: try SIPURI("sip:alice@oma.example"), from: try SIPAddress("<sip:alice@oma.example>"),
            to: try SIPAddress("<sip:alice@oma.example>"), expires: expires)
    }

    private func sent(_ actions: [PublicationClient.Action]) -> [SIPRequest] {
        actions.compactMap { if case .send(let r) = $0 { r } else { nil } }
    }

    private func ok(_ request: SIPRequest, etag: String?, expires: Int) -> SIPResponse {
        var r = SIPResponse(replyingTo: request, statusCode: 200, toTag: "esc1")
        if let etag { r.headers.append(.sipETag, etag) }
        r.headers.append(.expires, String(expires))
        return r
    }

    private func start(expires: UInt32 = 3600) throws -> (PublicationClient, SIPRequest) {
        let (client, actions) = PublicationClient.start(try configuration(expires: expires), body: pidf,
                                                        contentType: "application/pidf+xml", callID: "p1@gw", localTag: "t1")
        return (client, try #require(sent(actions).first))
    }

    /// Starts and gets the first 200 with tag `e1`.
    private func published() throws -> PublicationClient {
        var (client, initial) = try start()
        _ = client.receive(ok(initial, etag: "e1", expires: 3600), now: t0, jitter: 0)
        return client
    }

    @Test func initialPublishCarriesBodyEventExpiresAndNoIfMatch() throws {
        let (_, publish) = try start()
        #expect(publish.method == .publish)
        #expect(publish.body == pidf)
        #expect(try publish.headers.event?.package == "presence")
        #expect(try publish.headers.expires == 3600)
        #expect(try publish.headers.contentType?.mediaType == "application/pidf+xml")
        #expect(try publish.headers.sipIfMatch == nil)
        #expect(try publish.headers.from?.tag == "t1")
    }

    @Test func okKeepsTheEntityTagAndSchedulesARefreshBeforeExpiryWithJitter() throws {
        var (client, initial) = try start()
        let actions = client.receive(ok(initial, etag: "e1", expires: 600), now: t0, jitter: 0.5)
        #expect(client.status == .published)
        #expect(client.entityTag == "e1")
        #expect(actions.contains(.published(entityTag: "e1", expiresAt: t0 + .seconds(600))))
        // 600 × (0.9 − 0.05) = 510 s, before the 600 s expiry.
        #expect(actions.contains(.scheduleRefresh(t0 + .seconds(510))))
        var other = try start()
        let noJitter = other.0.receive(ok(other.1, etag: "e1", expires: 600), now: t0, jitter: 0)
        #expect(noJitter.contains(.scheduleRefresh(t0 + .seconds(540))))
    }

    @Test func refreshSendsIfMatchWithoutBodyAndAdoptsTheNewTag() throws {
        var client = try published()
        let refresh = try #require(sent(client.refresh(now: t0 + .seconds(3000))).first)
        #expect(try refresh.headers.sipIfMatch == "e1")
        #expect(refresh.body.isEmpty)
        #expect(!refresh.headers.contains(.contentType))
        #expect(try refresh.headers.cseq?.sequence == 2)
        _ = client.receive(ok(refresh, etag: "e2", expires: 3600), now: t0 + .seconds(3000), jitter: 0)
        #expect(client.entityTag == "e2")
    }

    @Test func modifySendsIfMatchWithTheNewBody() throws {
        var client = try published()
        let newBody = Array("<presence entity='sip:alice@contoso.com'><tuple id='t'/></presence>".utf8)
        let modify = try #require(sent(client.modify(body: newBody, contentType: "application/pidf+xml")).first)
        #expect(try modify.headers.sipIfMatch == "e1")
        #expect(modify.body == newBody)
        #expect(try modify.headers.expires == 3600)
    }

    @Test func removeSendsIfMatchWithExpiresZeroAndEndsOnOk() throws {
        var client = try published()
        let remove = try #require(sent(client.remove()).first)
        #expect(try remove.headers.sipIfMatch == "e1")
        #expect(try remove.headers.expires == 0)
        #expect(remove.body.isEmpty)
        #expect(client.status == .removing)
        let actions = client.receive(ok(remove, etag: "e9", expires: 0), now: t0, jitter: 0)
        #expect(actions == [.removed])
        #expect(client.status == .removed)
        #expect(client.entityTag == nil)
    }

    @Test func conditionalRequestFailedPublishesAfreshWithTheCurrentBody() throws {
        var client = try published()
        let refresh = try #require(sent(client.refresh(now: t0)).first)
        let failed = SIPResponse(replyingTo: refresh, statusCode: 412, toTag: "esc1")
        let again = try #require(sent(client.receive(failed, now: t0, jitter: 0)).first)
        #expect(try again.headers.sipIfMatch == nil)
        #expect(again.body == pidf)
        #expect(client.status == .publishing)
        _ = client.receive(ok(again, etag: "fresh", expires: 3600), now: t0, jitter: 0)
        #expect(client.entityTag == "fresh")
    }

    @Test func intervalTooBriefRetriesWithMinExpires() throws {
        var (client, initial) = try start(expires: 30)
        var tooBrief = SIPResponse(replyingTo: initial, statusCode: 423, toTag: "esc1")
        tooBrief.headers.append(.minExpires, "60")
        let retry = try #require(sent(client.receive(tooBrief, now: t0, jitter: 0)).first)
        #expect(try retry.headers.expires == 60)
        #expect(retry.body == pidf)
        #expect(client.configuration.expires == 60)
    }

    @Test func otherFailuresAreReportedAndStop() throws {
        var (client, initial) = try start()
        let forbidden = SIPResponse(replyingTo: initial, statusCode: 403, toTag: "esc1")
        let actions = client.receive(forbidden, now: t0, jitter: 0)
        #expect(actions == [.failed(statusCode: 403, reason: "Forbidden")])
        #expect(client.status == .failed(statusCode: 403))
        #expect(client.refresh(now: t0).isEmpty)
    }

    @Test func transactionTimeoutIsRetriedWithBackoffThenGivesUp() throws {
        var configuration = try configuration()
        configuration.maxRetries = 2
        var (client, actions) = PublicationClient.start(configuration, body: pidf, contentType: "application/pidf+xml",
                                                        callID: "p1@gw", localTag: "t1")
        #expect(sent(actions).count == 1)
        actions = client.transactionFailed(now: t0)
        #expect(actions == [.scheduleRetry(t0 + .seconds(30))])
        let second = try #require(sent(client.retry(now: t0 + .seconds(30))).first)
        #expect(try second.headers.sipIfMatch == nil)
        #expect(try second.headers.cseq?.sequence == 2)
        actions = client.transactionFailed(now: t0 + .seconds(62))
        #expect(actions == [.scheduleRetry(t0 + .seconds(122))])
        _ = client.retry(now: t0 + .seconds(122))
        actions = client.transactionFailed(now: t0 + .seconds(154))
        #expect(actions == [.failed(statusCode: 408, reason: "Request Timeout")])
        #expect(client.status == .failed(statusCode: 408))
    }

    @Test func timedOutRefreshIsRetriedWithTheSameEntityTag() throws {
        var client = try published()
        _ = client.refresh(now: t0)
        #expect(client.transactionFailed(now: t0 + .seconds(32)) == [.scheduleRetry(t0 + .seconds(62))])
        let retry = try #require(sent(client.retry(now: t0 + .seconds(62))).first)
        #expect(try retry.headers.sipIfMatch == "e1")
        #expect(retry.body.isEmpty)
    }

    @Test func modifyDuringAnOutstandingPublishWaitsForItsResponse() throws {
        var (client, initial) = try start()
        let newBody = Array("<presence entity='x'/>".utf8)
        #expect(client.modify(body: newBody, contentType: "application/pidf+xml").isEmpty)
        let actions = client.receive(ok(initial, etag: "e1", expires: 3600), now: t0, jitter: 0)
        let modify = try #require(sent(actions).first)
        #expect(try modify.headers.sipIfMatch == "e1")
        #expect(modify.body == newBody)
    }

    @Test func removeDuringTheInitialPublishIsSentOnceTheTagIsKnown() throws {
        var (client, initial) = try start()
        #expect(client.remove().isEmpty)
        let actions = client.receive(ok(initial, etag: "e1", expires: 3600), now: t0, jitter: 0)
        let remove = try #require(sent(actions).first)
        #expect(try remove.headers.expires == 0)
        #expect(try remove.headers.sipIfMatch == "e1")
        #expect(client.status == .removing)
    }

    @Test func okWithoutEntityTagIsAFailure() throws {
        var (client, initial) = try start()
        let actions = client.receive(ok(initial, etag: nil, expires: 3600), now: t0, jitter: 0)
        #expect(actions == [.failed(statusCode: 200, reason: "2xx without SIP-ETag")])
    }

    @Test func clientAndCompositorAgreeOverAFullLifecycle() throws {
        var esc = EventStateCompositor()
        var (client, initial) = try start()
        func deliver(_ request: SIPRequest, at now: NIODeadline, entropy: UInt64) -> [PublicationClient.Action] {
            let answer = esc.receive(request, resource: "sip:alice@oma.example", now: now, entropy: entropy)
            guard case .respond(let response)? = answer.first else { return [] }
            return client.receive(response, now: now, jitter: 0)
        }
        _ = deliver(initial, at: t0, entropy: 11)
        #expect(client.status == .published)
        #expect(esc.publications(of: "sip:alice@oma.example").count == 1)
        let refresh = try #require(sent(client.refresh(now: t0 + .seconds(3000))).first)
        _ = deliver(refresh, at: t0 + .seconds(3000), entropy: 12)
        #expect(esc.publications[client.entityTag ?? ""] != nil)
        // The compositor loses the state (restart): the next refresh gets 412 and publishes afresh.
        esc = EventStateCompositor()
        let second = try #require(sent(client.refresh(now: t0 + .seconds(6000))).first)
        let again = try #require(sent(deliver(second, at: t0 + .seconds(6000), entropy: 13)).first)
        _ = deliver(again, at: t0 + .seconds(6000), entropy: 14)
        #expect(esc.publications(of: "sip:alice@oma.example").map(\.body) == [pidf])
        let remove = try #require(sent(client.remove()).first)
        _ = deliver(remove, at: t0 + .seconds(6001), entropy: 15)
        #expect(client.status == .removed)
        #expect(esc.publications.isEmpty)
        _ = initial
    }
    @Test func serviceUnavailableWithRetryAfterIsRetriedAfterThatDelay() throws {
        var (client, initial) = try start()
        var busy = SIPResponse(replyingTo: initial, statusCode: 503, toTag: "esc1")
        busy.headers.append(.retryAfter, "120")
        #expect(client.receive(busy, now: t0, jitter: 0) == [.scheduleRetry(t0 + .seconds(120))])
        let again = try #require(sent(client.retry(now: t0 + .seconds(120))).first)
        #expect(again.body == pidf)
    }

    @Test func serviceUnavailableWithoutRetryAfterFails() throws {
        var (client, initial) = try start()
        let busy = SIPResponse(replyingTo: initial, statusCode: 503, toTag: "esc1")
        #expect(client.receive(busy, now: t0, jitter: 0) == [.failed(statusCode: 503, reason: "Service Unavailable")])
    }

    @Test func conditionalRequestFailedToARemovalEndsIt() throws {
        var client = try published()
        let remove = try #require(sent(client.remove()).first)
        let failed = SIPResponse(replyingTo: remove, statusCode: 412, toTag: "esc1")
        #expect(client.receive(failed, now: t0, jitter: 0) == [.removed])
        #expect(client.status == .removed)
    }

    @Test func intervalTooBriefWithoutALargerMinimumFails() throws {
        var (client, initial) = try start(expires: 3600)
        var tooBrief = SIPResponse(replyingTo: initial, statusCode: 423, toTag: "esc1")
        tooBrief.headers.append(.minExpires, "60")
        #expect(client.receive(tooBrief, now: t0, jitter: 0) == [.failed(statusCode: 423, reason: "Interval Too Brief")])
    }

    @Test func provisionalAndUnexpectedResponsesAreIgnored() throws {
        var (client, initial) = try start()
        let trying = SIPResponse(replyingTo: initial, statusCode: 100)
        #expect(client.receive(trying, now: t0, jitter: 0).isEmpty)
        _ = client.receive(ok(initial, etag: "e1", expires: 3600), now: t0, jitter: 0)
        // A retransmitted 200 after the transaction completed.
        #expect(client.receive(ok(initial, etag: "e1", expires: 3600), now: t0, jitter: 0).isEmpty)
    }
}
