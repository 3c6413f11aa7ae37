import Foundation
import MSPresenceEvents
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing

/// Content indirection (RFC 4483; PacketCable Presence §6.1.8, §6.3.6.4) with a real content
/// server: Apache httpd with WebDAV (``ContentServer``), writes behind HTTP Digest. The gateway
/// runs on UDP listeners only (``AdminAPITests/Gateway``), so a NOTIFY over 1300 bytes cannot
/// move to TCP (RFC 3261 §18.1.1): that is where it offers a reference.
@Suite(.serialized) struct ContentIndirectionPeerTests {
    typealias Gateway = AdminAPITests.Gateway
    static let erin = PresRulesPeerTests.erin
    static let user = "gw@contoso.com"
    static let password = "Circle of Life"

    static func extra(_ server: ContentServer, directory: String, offer: Bool = true) -> String {
        """
        content-server: { url: "\(server.url)", max-bytes: 65536, timeout: 2, offer: \(offer) }
        xcap-auth:
          "\(server.url)": { username: "\(user)", password-file: \(directory)/xcap-ap }
        """
    }

    static func reference(_ url: String, type: String = "application/pidf+xml", extra: String = "") -> (String, [UInt8]) {
        ("message/external-body;access-type=URL;URL=\"\(url)\"\(extra)",
         Array("Content-Type: \(type)\r\nContent-ID: <\(UInt32.random(in: 0...UInt32.max))@oma.example>\r\n\r\n".utf8))
    }

    /// The OMA presence server's NOTIFY with `contentType` and `body` in the dialog of the
    /// gateway's `subscribe`; the gateway's answer.
    static func notify(_ gw: Gateway, in subscribe: SIPRequest, cseq: Int, contentType: String, body: [UInt8]) async
        -> SIPResponse?
    {
        let from = try? subscribe.headers.from
        gw.kamailio.send("""
            NOTIFY sip:gw@127.0.0.1:\(gw.oma) SIP/2.0
            Via: SIP/2.0/UDP \(gw.kamailio.hostPort);branch=z9hG4bKci\(cseq);rport
            Max-Forwards: 70
            From: <\(erin)>;tag=ps-ci
            To: <\(from?.uri.description ?? "")>;tag=\(from?.tag ?? "")
            Call-ID: \(subscribe.headers.callID ?? "")
            CSeq: \(cseq) NOTIFY
            Contact: <sip:\(gw.kamailio.hostPort)>
            Event: presence
            Subscription-State: active;expires=600
            Content-Type: \(contentType)

            """, body: body, to: gw.oma)
        let end = Date().addingTimeInterval(5)
        while end.timeIntervalSinceNow > 0 {
            let answers = await gw.kamailio.receive(for: 0.2).compactMap(\.response)
            if let answer = answers.first(where: { (try? $0.headers.cseq)?.sequence == UInt32(cseq) }) { return answer }
        }
        return nil
    }

    /// Carol watches Erin through the gateway; the OMA presence server's NOTIFYs are references
    /// to its content server. One there is followed: Erin busy reaches Carol, and the content
    /// server saw one GET. One elsewhere is refused 415 with Accept naming message/external-body
    /// (RFC 4483 §5.3) and nothing fetched; one to a missing object is 502; with the content
    /// server stopped, 504. Each counted in `gateway_content_indirection_total`.
    @Test func aReferenceInANotifyIsFollowedOnlyToTheContentServer() async throws {
        let server = try await ContentServer.start(users: [Self.user: Self.password])
        defer { server.stop() }
        try server.store("erin.xml", PresRulesPeerTests.pidf)
        try await XCAPAuthPeerTests.withPasswordFile(Self.password) { directory in
            let gw = try await Gateway(extra: Self.extra(server, directory: directory))
            try await withCleanup {
                gw.carolSubscribes(to: Self.erin, callID: "carol-ci")
                let subscribe = try #require(await gw.kamailio.request(.subscribe, within: 5))
                gw.kamailio.answer(subscribe, to: gw.oma, toTag: "ps-ci", extra: "Expires: 600\n")
                _ = await PresRulesPeerTests.edge(gw, for: 0.5)

                let (type, body) = Self.reference(server.url + "/erin.xml")
                let followed = await Self.notify(gw, in: subscribe, cseq: 2, contentType: type, body: body)
                #expect(followed?.statusCode == 200, "\(String(describing: followed))")
                let told = await PresRulesPeerTests.edge(gw, for: 1)
                #expect(told.compactMap { aggregateState(categoriesDocuments($0), of: Self.erin)?.availability }.last == 6500,
                        "Carol did not see Erin busy: \(told)")
                #expect(server.requests.filter { $0.method == "GET" } == [.init(method: "GET", path: "/presence/erin.xml", status: 200, user: nil)])

                let elsewhere = Self.reference("http://127.0.0.2:\(server.port)/presence/erin.xml")
                let refused = await Self.notify(gw, in: subscribe, cseq: 3, contentType: elsewhere.0, body: elsewhere.1)
                #expect(refused?.statusCode == 415)
                #expect(refused?.headers[.accept]?.contains("message/external-body") == true)
                #expect(server.requests.count == 1, "fetched a reference elsewhere: \(server.requests)")

                let missing = Self.reference(server.url + "/nobody.xml")
                #expect(await Self.notify(gw, in: subscribe, cseq: 4, contentType: missing.0, body: missing.1)?.statusCode == 502)
                server.stop()
                #expect(await Self.notify(gw, in: subscribe, cseq: 5, contentType: type, body: body)?.statusCode == 504)

                let series = "gateway_content_indirection_total{direction=\"followed\",result="
                #expect(gw.metric(series + "\"ok\"}") == 1)
                #expect(gw.metric(series + "\"refused\"}") == 1)
                #expect(gw.metric(series + "\"failed\"}") == 2)
            } cleanup: {
                await gw.stop()
            }
        }
    }

    /// A linked OMA identity's PUBLISH (RFC 3903) whose body is a reference: the content is
    /// fetched and composed as Frank's state, which his enterprise watcher Carol sees busy.
    /// Without `content-server:` the same PUBLISH is refused 415, its Accept without
    /// message/external-body.
    @Test func aReferenceInAPublishIsFollowed() async throws {
        let server = try await ContentServer.start(users: [Self.user: Self.password])
        defer { server.stop() }
        try server.store("frank.xml", """
            <?xml version="1.0" encoding="UTF-8"?>
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" \
            xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" entity="sip:frank@oma.example">
            <tuple id="t1"><status><basic>open</basic></status></tuple>
            <dm:person id="p1"><rpid:activities><rpid:busy/></rpid:activities><dm:note>Fetched from the content server</dm:note></dm:person>
            </presence>
            """)
        let linked = """
            linked-identities:
              - { oma: "sip:frank@oma.example", enterprise: "sip:frank@contoso.com", publish-to-enterprise: true, publish-to-oma: false }
            """
        func publish(_ gw: Gateway, _ n: Int) async -> SIPResponse? {
            let (type, body) = Self.reference(server.url + "/frank.xml")
            gw.kamailio.send("""
                PUBLISH sip:frank@oma.example SIP/2.0
                Via: SIP/2.0/UDP \(gw.kamailio.hostPort);branch=z9hG4bKcip\(n);rport
                Max-Forwards: 70
                From: <sip:frank@oma.example>;tag=fp\(n)
                To: <sip:frank@oma.example>
                Call-ID: frank-publish-\(n)@oma
                CSeq: 1 PUBLISH
                Event: presence
                Expires: 600
                Content-Type: \(type)

                """, body: body, to: gw.oma)
            let end = Date().addingTimeInterval(5)
            while end.timeIntervalSinceNow > 0 {
                if let answer = await gw.kamailio.receive(for: 0.2).compactMap(\.response).first { return answer }
            }
            return nil
        }
        try await XCAPAuthPeerTests.withPasswordFile(Self.password) { directory in
            let gw = try await Gateway(extra: linked + "\n" + Self.extra(server, directory: directory))
            try await withCleanup {
                // Carol watches Frank, whom the gateway serves from his publications (flow 1).
                gw.carolSubscribes(to: "sip:frank@oma.example", callID: "carol-frank")
                _ = await PresRulesPeerTests.edge(gw, for: 1)
                let answer = await publish(gw, 1)
                #expect(answer?.statusCode == 200, "\(String(describing: answer))")
                let told = await PresRulesPeerTests.edge(gw, for: 1)
                #expect(told.compactMap { aggregateState(categoriesDocuments($0), of: "sip:frank@oma.example")?.availability }.last == 6500,
                        "Carol did not see Frank busy: \(told)")
                #expect(server.requests.map(\.path) == ["/presence/frank.xml"])
            } cleanup: {
                await gw.stop()
            }
        }
        let plain = try await Gateway(extra: linked)
        try await withCleanup {
            let answer = await publish(plain, 2)
            #expect(answer?.statusCode == 415)
            #expect(answer?.headers[.accept].map { !$0.contains("external-body") && $0.contains("application/pidf+xml") } == true,
                    "\(String(describing: answer))")
        } cleanup: {
            await plain.stop()
        }
    }

    /// A categories BENOTIFY for bob whose note makes the PIDF for Dave over 1300 bytes.
    static func longNote(_ gw: Gateway, in leg: SIPRequest, cseq: Int, note: String) throws -> (String, [UInt8]) {
        let document = CategoriesDocument(uri: "sip:bob@contoso.com", categories: [
            Category(name: .state, instance: 1, publishTime: "2026-11-25T10:05:00.000",
                     payload: .state(MSState(type: .aggregateState, availability: 6500))),
            Category(name: .note, instance: 0, publishTime: "2026-11-25T10:05:00.000",
                     payload: .note(MSNote(bodies: [.init(text: note)]))),
        ])
        return try AdminAPITests.benotify(gw, in: leg, cseq: cseq, body: document.serialized())
    }

    /// Dave (OMA, over UDP, Accept listing message/external-body) watches Bob; Bob's note grows
    /// past what UDP takes. The gateway PUTs the PIDF on the content server with its Digest
    /// credentials and sends Dave a reference (RFC 4483 §4): the object it names is the PIDF with
    /// the note. The next change is a new object, and the one it replaces is deleted.
    @Test func aNotifyTooLargeForUDPIsOfferedAsAReference() async throws {
        let server = try await ContentServer.start(users: [Self.user: Self.password])
        defer { server.stop() }
        try await XCAPAuthPeerTests.withPasswordFile(Self.password) { directory in
            let gw = try await Gateway(extra: Self.extra(server, directory: directory))
            try await withCleanup {
                let (_, leg) = try await gw.bridgeOMAWatcher(accept: "application/pidf+xml, message/external-body")
                let enterprise = UInt16(gw.server.bound[.enterprise]?.first?.port ?? 0)
                var urls: [String] = []
                for (cseq, word) in [(2, "first"), (3, "second")] {
                    let note = "The \(word) long note " + String(repeating: "lorem ipsum ", count: 150)
                    let (head, body) = try Self.longNote(gw, in: leg, cseq: cseq, note: note)
                    gw.edge.send(head, body: body, to: enterprise)
                    let notify = try #require(await gw.kamailio.request(.notify, within: 5), "no NOTIFY for the \(word) note")
                    gw.kamailio.answer(notify, to: gw.oma)
                    let type = try #require(try notify.headers.contentType)
                    #expect(type.mediaType == "message/external-body", "\(notify)")
                    #expect(type.parameters.value("access-type")?.lowercased() == "url")
                    let url = try #require(type.parameters.value("url"))
                    #expect(url.hasPrefix(server.url + "/"))
                    #expect(String(decoding: notify.body, as: UTF8.self).contains("Content-Type: application/pidf+xml"))
                    let size = try #require(type.parameters.value("size").flatMap { Int($0) })
                    let path = String(url.dropFirst("http://127.0.0.1:\(server.port)".count))
                    let fetched = try await loopbackHTTP(port: Int(server.port), "GET", path)
                    #expect(fetched.status == 200)
                    #expect(fetched.body.utf8.count == size)
                    #expect(fetched.body.contains("The \(word) long note"), "\(fetched.body.prefix(300))")
                    #expect(try PIDFDocument(bytes: Array(fetched.body.utf8)).entity == "sip:bob@contoso.com")
                    urls.append(path)
                }
                let puts = server.requests.filter { $0.method == "PUT" && $0.status == 201 }
                #expect(puts.map(\.path) == urls && puts.allSatisfy { $0.user == Self.user }, "\(server.requests)")
                // The first object is deleted once the second replaced it.
                let end = Date().addingTimeInterval(5)
                while server.objects.count > 1, end.timeIntervalSinceNow > 0 { try await Task.sleep(nanoseconds: 100_000_000) }
                #expect(server.objects.keys.map { "/presence/" + $0 } == [urls[1]], "\(server.requests)")
                #expect(gw.metric("gateway_content_indirection_total{direction=\"offered\",result=\"ok\"}") == 2)
            } cleanup: {
                await gw.stop()
            }
        }
    }
}
