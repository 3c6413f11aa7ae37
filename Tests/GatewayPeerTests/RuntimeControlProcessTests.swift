import Foundation
import NIOCore
import NIOPosix
import PeerTestSupport
import PresenceDocuments
import SIPMessages
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The runtime control endpoints of the admin API (README, "Runtime control") on the built
/// `presence-gateway` process: its configuration in a file, every port free and on 127.0.0.1,
/// the OMA server and the enterprise edge as bare UDP sockets, HTTP on the admin port.
@Suite(.serialized) struct RuntimeControlProcessTests {
    final class Gateway: @unchecked Sendable {
        static let token = "control-admin-token-0123456789"
        let process: ChildProcess
        let kamailio: LoopbackDatagramPeer
        let edge: LoopbackDatagramPeer
        let oma: UInt16
        let enterprise: UInt16
        let admin: Int
        let directory: String
        var file: String { directory + "/gateway.yaml" }

        static func yaml(kamailio: UInt16, edge: UInt16, ports: (oma: UInt16, enterprise: UInt16, admin: UInt16),
                         listen: String, state: String = "{ store: memory }", enterpriseHop: String? = nil,
                         extra: String) -> String {
            """
            state: \(state)
            listen:
              - { side: oma, transport: udp, address: 127.0.0.1, port: \(ports.oma) }
              - { side: enterprise, transport: udp, address: 127.0.0.1, port: \(ports.enterprise) }
            \(listen)
            enterprise: { domains: [contoso.com], next-hop: \(enterpriseHop ?? "\"sip:127.0.0.1:\(edge);transport=udp\"") }
            oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:\(kamailio);transport=udp" }
            peers:
              - { name: edge, address: 127.0.0.1, port: \(edge), side: enterprise, network: sameEnterprise, trusted: true }
              - { name: kamailio, address: 127.0.0.1, port: \(kamailio), side: oma }
            presentities:
              default:
                defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
            subscriptions: { piggyback-wait-ms: 300 }
            admin: { address: 127.0.0.1, port: \(ports.admin), token: \(token) }
            \(extra)
            """
        }

        /// Starts the binary with `extra` configuration lines and `listen` lines more (written in
        /// `directory` beside anything `prepare` puts there) and `arguments`, and waits for its
        /// admin endpoint.
        /// With `resolvConf` the binary runs in a mount namespace of its own where that file is
        /// /etc/resolv.conf (its DNS client reads only that file), and the enterprise next hop is
        /// `enterpriseHop` (else the edge's address).
        init(extra: String = "", listen: String = "", state: String = "{ store: memory }", enterpriseHop: String? = nil,
             resolvConf: String? = nil, arguments: [String] = [],
             prepare: (String) throws -> Void = { _ in }) async throws {
            let binary = try #require(GatewayBinary.path, "presence-gateway was not built next to the tests")
            directory = NSTemporaryDirectory() + "control-\(UInt64.random(in: 0...UInt64.max))"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try prepare(directory)
            kamailio = try LoopbackDatagramPeer()
            edge = try LoopbackDatagramPeer()
            (oma, enterprise) = (try LoopbackPorts.free(), try LoopbackPorts.free())
            let adminPort = try LoopbackPorts.free()
            admin = Int(adminPort)
            try Self.yaml(kamailio: kamailio.port, edge: edge.port, ports: (oma, enterprise, adminPort), listen: listen, state: state,
                          enterpriseHop: enterpriseHop, extra: extra)
                .write(toFile: directory + "/gateway.yaml", atomically: true, encoding: .utf8)
            if let resolvConf {
                let command = #"mount --bind "$0" /etc/resolv.conf && cd "$1" && shift && exec "$@""#
                process = try ChildProcess("/usr/bin/unshare", ["-m", "/bin/sh", "-c", command, resolvConf, directory, binary,
                                                                "--config", directory + "/gateway.yaml"] + arguments)
            } else {
                process = try ChildProcess(binary, ["--config", directory + "/gateway.yaml"] + arguments, workingDirectory: directory)
            }
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline, process.poll() == nil, !process.output.contains("admin endpoint on") {
                try await Task.sleep(nanoseconds: 50_000_000)
            }
            guard process.output.contains("admin endpoint on") else {
                throw PeerError("the gateway did not start:\n\(process.output.suffix(3000))")
            }
        }

        func stop() async {
            _ = await process.terminate()
            try? FileManager.default.removeItem(atPath: directory)
        }

        /// One request to the admin endpoint with the token (unless `authorized` is false).
        func http(_ method: String, _ path: String, body: String = "", authorized: Bool = true) async throws -> (Int, String) {
            let answer = try await loopbackHTTP(port: admin, method, path, body: body,
                                                headers: authorized ? ["Authorization: Bearer \(Self.token)"] : [])
            return (answer.status, answer.body)
        }

        func json(_ method: String, _ path: String, body: String = "") async throws -> (Int, [String: Any]) {
            let (status, text) = try await http(method, path, body: body)
            let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            return (status, try #require(object, "not a JSON object: \(text)"))
        }

        /// `watcher`@oma.example subscribes through kamailio to bob@contoso.com in dialog
        /// `callID` (a refresh when `toTag` is given); the first final answer within 5 s.
        func omaSubscribe(_ watcher: String, callID: String, toTag: String? = nil, cseq: Int = 1) async -> SIPResponse? {
            kamailio.send("""
                SUBSCRIBE sip:bob@contoso.com SIP/2.0
                Via: SIP/2.0/UDP \(kamailio.hostPort);branch=z9hG4bK\(callID)\(cseq);rport
                Max-Forwards: 70
                From: <sip:\(watcher)@oma.example>;tag=\(callID)
                To: <sip:bob@contoso.com>\(toTag.map { ";tag=\($0)" } ?? "")
                Call-ID: \(callID)@oma
                CSeq: \(cseq) SUBSCRIBE
                Contact: <sip:\(watcher)@\(kamailio.hostPort)>
                Event: presence
                Accept: application/pidf+xml
                Expires: 600

                """, to: oma)
            let end = Date().addingTimeInterval(5)
            while end.timeIntervalSinceNow > 0 {
                for message in await kamailio.receive(for: 0.2) {
                    if let notify = message.request, notify.method == .notify { kamailio.answer(notify, to: oma) }
                    if let response = message.response, response.headers.callID == "\(callID)@oma",
                       response.statusCode >= 200 {
                        return response
                    }
                }
            }
            return nil
        }

        /// The edge answers the gateway's SUBSCRIBE `leg` with bob online ([MS-PRES] §3.4.5.1.1's
        /// batch response).
        func edgeAccepts(_ leg: SIPRequest, toTag: String) {
            let state = CategoriesDocument(uri: "sip:bob@contoso.com", categories: [
                Category(name: .state, instance: 1, publishTime: "2026-11-25T10:00:00.000",
                         payload: .state(MSState(type: .aggregateState, availability: 3500))),
            ])
            let body = BatchSubscribeResponse(list: RLMIList(uri: "sip:dave@oma.example"), categories: [state]).multipart(boundary: "b7").bytes
            edge.answer(leg, to: enterprise, toTag: toTag, extra: """
                Expires: 600
                Event: presence
                Subscription-State: active;expires=600
                ms-piggyback-cseq: 1
                Content-Type: multipart/related; type="application/rlmi+xml"; start=\(BatchSubscribeResponse.rlmiContentID); boundary=b7

                """, body: body)
        }

        /// `watcher` subscribes and the edge accepts the gateway's leg: the watcher's 200.
        func bridge(_ watcher: String, callID: String) async throws -> SIPResponse {
            async let answer = omaSubscribe(watcher, callID: callID)
            let leg = try #require(await newSubscribe(within: 5), "no SUBSCRIBE toward the edge")
            edgeAccepts(leg, toTag: "e-\(callID)")
            return try #require(await answer, "no answer to \(watcher)")
        }

        /// Call-IDs of the legs the edge has already seen: a retransmission of one (its answer
        /// was late on a loaded machine, RFC 3261 §17.1.2.2) is not a new leg.
        private var legs: Set<String> = []

        /// The first dialog-creating SUBSCRIBE of a leg not seen before that the edge gets
        /// within `seconds`.
        func newSubscribe(within seconds: Double) async -> SIPRequest? {
            let end = Date().addingTimeInterval(seconds)
            while end.timeIntervalSinceNow > 0 {
                let requests = await edge.receive(for: 0.2).compactMap(\.request)
                if let found = requests.first(where: {
                    $0.method == .subscribe && (try? $0.headers.to?.tag) == nil && !legs.contains($0.headers.callID ?? "")
                }) {
                    legs.insert(found.headers.callID ?? "")
                    return found
                }
            }
            return nil
        }

        /// The peer `name` as `GET /peers` shows it.
        func peer(_ name: String) async throws -> [String: Any]? {
            let (_, peers) = try await json("GET", "/peers")
            return (peers["peers"] as? [[String: Any]])?.first { $0["name"] as? String == name }
        }
    }

    /// RFC 3261 §21.5.4: a drained peer's new SUBSCRIBE gets 503 with Retry-After, while its
    /// existing dialog is refreshed (200); a reload keeps it drained; once undrained a new
    /// SUBSCRIBE is taken. A drained peer is not sent new dialogs either.
    @Test func aDrainedPeerGetsNoNewDialogButKeepsItsOwn() async throws {
        let gw = try await Gateway()
        let first = try await gw.bridge("dave", callID: "d1")
        #expect(first.statusCode == 200)
        let toTag = try #require(try first.headers.to?.tag)

        let (drained, peer) = try await gw.json("PUT", "/peers/kamailio", body: #"{"drained": true}"#)
        #expect(drained == 200 && peer["drained"] as? Bool == true && peer["name"] as? String == "kamailio")
        #expect(try await gw.peer("kamailio")?["drained"] as? Bool == true)
        #expect(try await gw.peer("edge")?["drained"] as? Bool == false)
        // A reload keeps the drained set.
        #expect(try await gw.http("POST", "/reload").0 == 200)
        #expect(try await gw.peer("kamailio")?["drained"] as? Bool == true)

        let refused = try #require(await gw.omaSubscribe("erin", callID: "d2"))
        #expect(refused.statusCode == 503)
        #expect(refused.headers[.retryAfter].flatMap { Int($0) }.map { $0 > 0 } == true, "\(refused)")
        #expect(await gw.newSubscribe(within: 0.5) == nil, "a leg was made for a refused watcher")
        let refreshed = try #require(await gw.omaSubscribe("dave", callID: "d1", toTag: toTag, cseq: 2))
        #expect(refreshed.statusCode == 200)

        let (undrained, back) = try await gw.json("PUT", "/peers/kamailio", body: #"{"drained": false}"#)
        #expect(undrained == 200 && back["drained"] as? Bool == false)
        #expect(try await gw.bridge("erin", callID: "d3").statusCode == 200)

        // Toward a drained peer: no new SUBSCRIBE reaches the edge, the watcher is not accepted.
        #expect(try await gw.json("PUT", "/peers/edge", body: #"{"drained": true}"#).0 == 200)
        _ = await gw.omaSubscribe("frank", callID: "d4")
        #expect(await gw.newSubscribe(within: 0.5) == nil)
        #expect(gw.process.output.contains("not sent to a drained peer"))

        // Unknown peers, bad bodies and missing tokens get a JSON error.
        for (path, body, expected) in [("/peers/nobody", #"{"drained": true}"#, 404), ("/peers/kamailio", "{", 400),
                                       ("/peers/kamailio", #"{"drained": "yes"}"#, 400)] {
            let (status, text) = try await gw.http("PUT", path, body: body)
            #expect(status == expected && text.contains("\"error\""), "\(path) \(body): \(status) \(text)")
        }
        #expect(try await gw.http("PUT", "/peers/kamailio", body: #"{"drained": true}"#, authorized: false).0 == 401)
        #expect(try await gw.http("POST", "/peers/kamailio", body: #"{"drained": true}"#).0 == 405)
        await gw.stop()
    }

    /// `PUT /log-level` changes every logger's level in the running process: the transport's
    /// debug line for a datagram that is not SIP appears once the level is debug, and not before
    /// nor after it is set back.
    @Test func theLogLevelChangesWithoutARestart() async throws {
        let gw = try await Gateway()
        let line = "dropping a malformed message"
        func garbage() async throws {
            gw.edge.send("THIS IS NOT SIP\n", to: gw.enterprise)
            try await Task.sleep(nanoseconds: 500_000_000)
        }
        func count() -> Int { gw.process.output.components(separatedBy: line).count - 1 }
        let (status, level) = try await gw.json("GET", "/log-level")
        #expect(status == 200 && level["level"] as? String == "info")
        try await garbage()
        #expect(count() == 0)

        let (set, answer) = try await gw.json("PUT", "/log-level", body: #"{"level": "debug"}"#)
        #expect(set == 200 && answer["level"] as? String == "debug" && answer["previous"] as? String == "info")
        #expect(try await gw.json("GET", "/log-level").1["level"] as? String == "debug")
        let deadline = Date().addingTimeInterval(5)
        while count() == 0, Date() < deadline { try await garbage() }
        #expect(count() >= 1, "\(gw.process.output.suffix(2000))")

        #expect(try await gw.json("PUT", "/log-level", body: #"{"level": "info"}"#).0 == 200)
        let before = count()
        try await garbage()
        #expect(count() == before)
        #expect(gw.process.output.contains("log level debug → info"))

        for body in [#"{"level": "loud"}"#, #"{"level": 5}"#, "debug"] {
            let (status, text) = try await gw.http("PUT", "/log-level", body: body)
            #expect(status == 400 && text.contains("\"error\""), "\(body): \(status) \(text)")
        }
        #expect(try await gw.http("PUT", "/log-level", body: #"{"level": "loud"}"#).1.contains("trace, debug, info"))
        #expect(try await gw.http("PUT", "/log-level", body: #"{"level": "debug"}"#, authorized: false).0 == 401)
        #expect(try await gw.json("GET", "/log-level").1["level"] as? String == "info")
        await gw.stop()
    }

    /// HEP copies counted at a bare UDP socket standing for the collector.
    static func hepPackets(at collector: LoopbackDatagramPeer, for seconds: Double) async -> Int {
        var count = 0
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let end = Date().addingTimeInterval(seconds)
        while end.timeIntervalSinceNow > 0 {
            let n = recv(collector.fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n >= 4, Array(buffer[0..<4]) == Array("HEP3".utf8) {
                count += 1
            } else if n <= 0 {
                try? await Task.sleep(nanoseconds: 10_000_000)
            }
        }
        return count
    }

    /// An OPTIONS from kamailio, which the gateway receives and answers: two messages to copy.
    static func options(_ gw: Gateway, _ n: Int) {
        gw.kamailio.send("""
            OPTIONS sip:127.0.0.1:\(gw.oma) SIP/2.0
            Via: SIP/2.0/UDP \(gw.kamailio.hostPort);branch=z9hG4bKopt\(n);rport
            Max-Forwards: 70
            From: <sip:probe@oma.example>;tag=opt\(n)
            To: <sip:127.0.0.1:\(gw.oma)>
            Call-ID: opt\(n)@oma
            CSeq: 1 OPTIONS

            """, to: gw.oma)
    }

    /// `PUT /capture` turns HEP capture off and on in the running process: while off nothing
    /// reaches the collector, once on again the copies resume.
    @Test func captureTurnsOffAndOnWhileTheGatewayRuns() async throws {
        let collector = try LoopbackDatagramPeer()
        let gw = try await Gateway(extra: "capture: { hep: \"udp:127.0.0.1:\(collector.port)\", id: 7 }")
        let (status, state) = try await gw.json("GET", "/capture")
        #expect(status == 200 && state["enabled"] as? Bool == true && state["id"] as? Int == 7)
        #expect(state["collector"] as? String == "udp:127.0.0.1:\(collector.port)")
        Self.options(gw, 1)
        #expect(await Self.hepPackets(at: collector, for: 1.5) >= 2)

        let (off, offState) = try await gw.json("PUT", "/capture", body: #"{"enabled": false}"#)
        #expect(off == 200 && offState["enabled"] as? Bool == false)
        Self.options(gw, 2)
        #expect(await Self.hepPackets(at: collector, for: 1.5) == 0)
        #expect(try await gw.json("GET", "/capture").1["enabled"] as? Bool == false)

        #expect(try await gw.json("PUT", "/capture", body: #"{"enabled": true}"#).0 == 200)
        Self.options(gw, 3)
        #expect(await Self.hepPackets(at: collector, for: 1.5) >= 2)

        for body in ["{", #"{"enabled": "no"}"#, "{}"] {
            let (status, text) = try await gw.http("PUT", "/capture", body: body)
            #expect(status == 400 && text.contains("\"error\""), "\(body): \(status) \(text)")
        }
        #expect(try await gw.http("PUT", "/capture", body: #"{"enabled": false}"#, authorized: false).0 == 401)
        await gw.stop()
    }

    /// Without `capture:` there is nothing to turn on: 409 with a message saying so.
    @Test func captureWithoutACollectorIsAConflict() async throws {
        let gw = try await Gateway()
        for (method, body) in [("GET", ""), ("PUT", #"{"enabled": true}"#)] {
            let (status, text) = try await gw.http(method, "/capture", body: body)
            #expect(status == 409 && text.contains("no HEP capture is configured"), "\(method): \(status) \(text)")
        }
        await gw.stop()
    }

    /// The certificate a new TLS handshake with 127.0.0.1:`port` shows (openssl's `Peer
    /// certificate:` line), presenting the test client certificate from `directory`.
    static func peerCertificate(port: UInt16, directory: String) async throws -> String {
        let (_, output) = try await runProgram("/usr/bin/openssl", [
            "s_client", "-connect", "127.0.0.1:\(port)", "-brief", "-cert", directory + "/client.pem",
            "-key", directory + "/client.key"], timeout: 15)
        return output.split(separator: "\n").first { $0.hasPrefix("Peer certificate:") }.map(String.init) ?? output
    }

    /// A reload (POST /reload, SIGHUP) reads the TLS certificate and key again: new handshakes
    /// show the new certificate, a connection made before stays open, and a file that does not
    /// load is refused with its name while the certificate in use stays.
    @Test func aReloadReadsTheTLSCertificateAgain() async throws {
        let tlsPort = try LoopbackPorts.free()
        func write(_ pem: String, _ name: String, in directory: String) throws {
            try pem.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        let gw = try await Gateway(
            extra: """
                tls:
                  certificate-chain: chain.pem
                  private-key: key.pem
                  trust-roots: roots.pem
                """,
            listen: "  - { side: enterprise, transport: tls, address: 127.0.0.1, port: \(tlsPort) }"
        ) { directory in
            for (pem, name) in [(TestCertificates.serverCertificate, "chain.pem"), (TestCertificates.serverKey, "key.pem"),
                                (TestCertificates.bothCAs, "roots.pem"), (TestCertificates.clientCertificate, "client.pem"),
                                (TestCertificates.clientKey, "client.key")] {
                try write(pem, name, in: directory)
            }
        }
        #expect(try await Self.peerCertificate(port: tlsPort, directory: gw.directory) == "Peer certificate: CN = gateway.test")
        // A connection that stays open across the reloads.
        let open = try ChildProcess("/usr/bin/openssl", [
            "s_client", "-connect", "127.0.0.1:\(tlsPort)", "-brief", "-ign_eof", "-cert", gw.directory + "/client.pem",
            "-key", gw.directory + "/client.key"])
        defer { open.kill() }
        let deadline = Date().addingTimeInterval(10)
        while !open.output.contains("Peer certificate:"), Date() < deadline { try await Task.sleep(nanoseconds: 50_000_000) }
        #expect(open.output.contains("Peer certificate: CN = gateway.test"))

        try write(TestCertificates.edgeCertificate, "chain.pem", in: gw.directory)
        try write(TestCertificates.edgeKey, "key.pem", in: gw.directory)
        let (status, answer) = try await gw.json("POST", "/reload")
        #expect(status == 200 && (answer["reloaded"] as? String)?.contains("TLS material") == true, "\(answer)")
        #expect(try await Self.peerCertificate(port: tlsPort, directory: gw.directory) == "Peer certificate: CN = edge.contoso.com")

        // A file that does not load: refused with its name, the certificate in use stays.
        try write("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", "chain.pem", in: gw.directory)
        let (refused, error) = try await gw.json("POST", "/reload")
        #expect(refused == 400 && (error["error"] as? String)?.contains("chain.pem") == true, "\(error)")
        #expect(try await Self.peerCertificate(port: tlsPort, directory: gw.directory) == "Peer certificate: CN = edge.contoso.com")

        // SIGHUP, as `systemctl reload` sends, does the same.
        try write(TestCertificates.serverCertificate, "chain.pem", in: gw.directory)
        try write(TestCertificates.serverKey, "key.pem", in: gw.directory)
        let reloads = gw.process.output.components(separatedBy: "configuration reloaded").count
        gw.process.send(SIGHUP)
        let reloaded = Date().addingTimeInterval(10)
        while gw.process.output.components(separatedBy: "configuration reloaded").count == reloads, Date() < reloaded {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        #expect(try await Self.peerCertificate(port: tlsPort, directory: gw.directory) == "Peer certificate: CN = gateway.test")
        // The connection made with the first certificate was not closed by any of it.
        #expect(open.poll() == nil, "the open connection ended: \(open.output)")
        await gw.stop()
    }

    /// An OPTIONS over the TCP connection `socket`, answered by the gateway on it.
    static func options(over socket: RawSIPSocket, _ n: Int) async -> SIPMessage? {
        let text = """
            OPTIONS sip:gateway@oma.example SIP/2.0\r
            Via: SIP/2.0/TCP 127.0.0.1:\(socket.port);branch=z9hG4bKtcp\(n)\r
            Max-Forwards: 70\r
            From: <sip:probe@oma.example>;tag=tcp\(n)\r
            To: <sip:gateway@oma.example>\r
            Call-ID: tcp\(n)@oma\r
            CSeq: 1 OPTIONS\r
            Content-Length: 0\r
            \r

            """
        _ = socket.write(Array(text.utf8))
        return await socket.receive(within: 5)
    }

    /// `GET /connections` lists each side's open TCP connections a page at a time, with their
    /// remote address, direction, age and messages each way; a closed one leaves the list.
    @Test func openConnectionsAreListedPerSideAndPaged() async throws {
        let tcpPort = try LoopbackPorts.free()
        let gw = try await Gateway(listen: "  - { side: oma, transport: tcp, address: 127.0.0.1, port: \(tcpPort) }")
        let first = try RawSIPSocket.tcp(to: tcpPort)
        let second = try RawSIPSocket.tcp(to: tcpPort)
        #expect(await Self.options(over: first, 1) != nil)
        #expect(await Self.options(over: second, 2) != nil)
        #expect(await Self.options(over: second, 3) != nil)

        let (status, listed) = try await gw.json("GET", "/connections?side=oma")
        #expect(status == 200)
        let oma = try #require(listed["oma"] as? [String: Any])
        #expect(oma["total"] as? Int == 2 && listed["enterprise"] == nil)
        let rows = try #require(oma["connections"] as? [[String: Any]])
        let byPort = Dictionary(uniqueKeysWithValues: rows.compactMap { row in (row["remote"] as? String).map { ($0, row) } })
        let one = try #require(byPort["127.0.0.1:\(first.port)"], "\(rows)")
        let two = try #require(byPort["127.0.0.1:\(second.port)"], "\(rows)")
        #expect(one["transport"] as? String == "tcp" && one["direction"] as? String == "inbound")
        #expect(one["local"] as? String == "127.0.0.1:\(tcpPort)")
        #expect(one["received"] as? Int == 1 && one["sent"] as? Int == 1 && two["received"] as? Int == 2 && two["sent"] as? Int == 2)
        #expect((one["ageSeconds"] as? Int).map { $0 >= 0 && $0 < 60 } == true)

        // Both sides without a filter; a page of one, then the next.
        let (_, both) = try await gw.json("GET", "/connections")
        #expect((both["enterprise"] as? [String: Any])?["total"] as? Int == 0)
        let page1 = try #require(try await gw.json("GET", "/connections?side=oma&limit=1").1["oma"] as? [String: Any])
        let page2 = try #require(try await gw.json("GET", "/connections?side=oma&offset=1&limit=1").1["oma"] as? [String: Any])
        let ids = [page1, page2].compactMap { ($0["connections"] as? [[String: Any]])?.first?["id"] as? Int }
        #expect(ids.count == 2 && ids[0] < ids[1] && page1["total"] as? Int == 2)

        first.close()
        // The close is seen when the gateway's loop next reads the socket: seconds on a busy machine.
        let deadline = Date().addingTimeInterval(15)
        var total = 2
        while total != 1, Date() < deadline {
            total = ((try await gw.json("GET", "/connections?side=oma").1["oma"] as? [String: Any])?["total"] as? Int) ?? -1
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        #expect(total == 1)
        for query in ["side=moon", "limit=0", "limit=1001", "offset=-1"] {
            let (status, text) = try await gw.http("GET", "/connections?\(query)")
            #expect(status == 400 && text.contains("\"error\""), "\(query): \(status) \(text)")
        }
        second.close()
        await gw.stop()
    }

    /// `GET /leases` shows the PostgreSQL shared state's nodes: this node's lease running and the
    /// dialogs it holds as the database counts them, another node's lease run out, a page at a time.
    @Test(.enabled(if: PostgresCluster.installed, "needs PostgreSQL (scripts/setup.sh)"))
    func leasesShowTheSharedStoresNodes() async throws {
        try await PostgresCluster.with { cluster in
            let database = try await cluster.createDatabase()
            let gw = try await Gateway(state: #"{ store: postgres, url: "\#(cluster.url(database))", node: gw-a, lease: 10 }"#)
            #expect(try await gw.bridge("dave", callID: "l1").statusCode == 200)
            let held = "SELECT count(*) FROM gateway_state WHERE node = 'gw-a' AND call_id IS NOT NULL"
            var dialogs = "0"
            let deadline = Date().addingTimeInterval(10)
            while dialogs == "0", Date() < deadline {
                dialogs = try await cluster.sql(held, database: database)
                try await Task.sleep(nanoseconds: 100_000_000)
            }
            try await cluster.sql(
                "INSERT INTO gateway_nodes (name, ordinal, instance, lease_until) VALUES ('gw-gone', 7, 'x', now() - interval '1 minute')",
                database: database)

            let (status, page) = try await gw.json("GET", "/leases")
            #expect(status == 200 && page["total"] as? Int == 2, "\(page)")
            let nodes = try #require(page["nodes"] as? [[String: Any]])
            let a = try #require(nodes.first { $0["node"] as? String == "gw-a" }, "\(nodes)")
            #expect((a["leaseRemaining"] as? Double).map { $0 > 0 && $0 <= 10 } == true, "\(a)")
            #expect(a["dialogs"] as? Int == Int(dialogs) && (a["dialogs"] as? Int ?? 0) > 0, "\(a) vs \(dialogs)")
            #expect((a["records"] as? Int ?? 0) >= (a["dialogs"] as? Int ?? 0) && a["leaseUntil"] is String)
            let gone = try #require(nodes.first { $0["node"] as? String == "gw-gone" })
            #expect(gone["leaseRemaining"] as? Double == 0 && gone["dialogs"] as? Int == 0)

            let one = try await gw.json("GET", "/leases?limit=1&offset=1").1
            #expect(one["total"] as? Int == 2 && (one["nodes"] as? [[String: Any]])?.first?["node"] as? String == "gw-gone")
            #expect(try await gw.http("GET", "/leases?limit=0").0 == 400)
            await gw.stop()
        }
    }

    /// With another store there are no leases: 409 with a message saying which store it is.
    @Test func leasesWithoutASharedStoreAreAConflict() async throws {
        let gw = try await Gateway()
        let (status, text) = try await gw.http("GET", "/leases")
        #expect(status == 409 && text.contains("store: postgres"), "\(status) \(text)")
        await gw.stop()
    }

    /// `GET /dns` lists the resolver's cache: with the enterprise next hop resolved by DNS
    /// (RFC 3263) from a dnsmasq on a loopback address of its own, an OMA watcher's leg toward
    /// bob@contoso.com fills it with contoso.com's NAPTR, SRV and the target's A record, each
    /// with its TTL running down.
    @Test func theDNSCacheIsListed() async throws {
        let address = "127.53.\(UInt8.random(in: 1...254)).\(UInt8.random(in: 1...254))"
        let directory = NSTemporaryDirectory() + "dns-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try "nameserver \(address)\n".write(toFile: directory + "/resolv.conf", atomically: true, encoding: .utf8)
        let edge = try LoopbackDatagramPeer()
        let dnsmasq = try ChildProcess("/usr/sbin/dnsmasq", [
            "-k", "-C", "/dev/null", "--log-facility=-", "--no-resolv", "--no-hosts", "--pid-file=", "-u", "root", "--bind-interfaces",
            "--listen-address=\(address)", "--port=53", "--local=/contoso.com/", "--local-ttl=300",
            "--naptr-record=contoso.com,10,10,S,SIP+D2U,,_sip._udp.contoso.com",
            "--srv-host=_sip._udp.contoso.com,edge.contoso.com,\(edge.port),0,5",
            "--host-record=edge.contoso.com,127.0.0.1"])
        defer { dnsmasq.kill() }
        let started = Date().addingTimeInterval(10)
        while !dnsmasq.output.contains("started"), dnsmasq.poll() == nil, Date() < started {
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        #expect(dnsmasq.output.contains("started"), "\(dnsmasq.output)")

        let gw = try await Gateway(enterpriseHop: "dns", resolvConf: directory + "/resolv.conf")
        let (empty, before) = try await gw.json("GET", "/dns")
        #expect(empty == 200 && before["total"] as? Int == 0, "\(before)")
        // The leg goes to the port the SRV record gives (whether it fits a datagram or not: the
        // transport says so in the log).
        _ = await gw.omaSubscribe("dave", callID: "n1")
        let sent = Date().addingTimeInterval(10)
        var reached = false
        while !reached, Date() < sent {
            let arrived = await edge.request(.subscribe, within: 0.2) != nil
            reached = arrived || gw.process.output.contains("SUBSCRIBE sip:bob@contoso.com to udp:127.0.0.1:\(edge.port)")
        }
        #expect(reached, "the leg did not go where DNS said:\n\(gw.process.output.suffix(2000))")

        let (status, page) = try await gw.json("GET", "/dns")
        #expect(status == 200)
        let entries = try #require(page["entries"] as? [[String: Any]])
        func entry(_ name: String, _ type: String) -> [String: Any]? {
            entries.first { ($0["name"] as? String)?.lowercased().hasPrefix(name) == true && $0["type"] as? String == type }
        }
        let srv = try #require(entry("_sip._udp.contoso.com", "SRV"), "\(entries)")
        #expect((srv["targets"] as? [String])?.contains { $0.contains("\(edge.port)") && $0.contains("edge.contoso.com") } == true, "\(srv)")
        #expect((srv["ttlRemaining"] as? Int).map { $0 > 200 && $0 <= 300 } == true, "\(srv)")
        let a = try #require(entry("edge.contoso.com", "A"), "\(entries)")
        #expect(a["targets"] as? [String] == ["A 127.0.0.1"], "\(a)")
        #expect(page["total"] as? Int == entries.count && entries.count >= 2)
        let one = try await gw.json("GET", "/dns?limit=1").1
        #expect((one["entries"] as? [Any])?.count == 1 && one["total"] as? Int == entries.count)
        #expect(try await gw.http("GET", "/dns?offset=-2").0 == 400)
        await gw.stop()
    }

    /// Without a next hop resolved by DNS there is no cache to list: 409.
    @Test func theDNSCacheWithoutDNSIsAConflict() async throws {
        let gw = try await Gateway()
        let (status, text) = try await gw.http("GET", "/dns")
        #expect(status == 409 && text.contains("no next hop is resolved by DNS"), "\(status) \(text)")
        await gw.stop()
    }
}
