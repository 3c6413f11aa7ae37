import Foundation
import MSPresenceEvents
import NIOCore
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import Prometheus
import SIPMessages
import SIPEventAgents
import SIPStack
import SIPTransport
import Testing

/// SIPE (pidgin-sipe 1.25 in bitlbee-libpurple, as in ``SIPEClientTests``) publishing its own
/// state, and an OMA watcher seeing it: flow 4 of docs/flows.md, enterprise → OMA.
///
/// dave@contoso.com logs in through the OCS front (`Peers/sipe/kamailio-ocs-front.cfg`), started
/// with `FRONT_SERVER`: the front relays SIPE's category publications (SERVICE,
/// `application/msrtc-category-publish+xml`, [MS-PRES] §3.2.5.1.2 and §2.2.2.2) to the project's
/// stand-in enhanced presence server (``PresenceServer``, in process on loopback TCP), and the
/// gateway's category SUBSCRIBE for dave@contoso.com (From the OMA identity, `Require: adhoclist,
/// categoryList`, §3.4.5.1.1) to it too, record-routed, so its piggybacked 200 and BENOTIFYs reach
/// the gateway through the front. The gateway's linked identity
/// (`sip:dave@oma.example` ← `sip:dave@contoso.com`, `publish-to-oma`) PUBLISHes what it gets as
/// PIDF (RFC 3903) to Kamailio, the OMA presence server. For each state SIPE is set to, the test
/// asks Kamailio as an OMA watcher would: a SUBSCRIBE with Expires 0 (a fetch, RFC 6665 §4.4.3)
/// and the NOTIFY it brings.
///
/// SIPE publishes its state as a userState (instance 536870912, static) and a machineState
/// (endpoint) in containers 2 and 3; with the server showing container 2, the gateway gets those
/// inputs and aggregates them as [MS-PRES] §3.8.5.1.2 does (docs/flows.md, "State aggregation"):
/// the availability SIPE set. What the watcher gets for it is the §3.7.5.4 row
/// (`Mappings/availability-pidf.tsv`), with `oma.rpid-extensions` plus its class's signals
/// (`Mappings/availability-pidf-detail.tsv`). A status message SIPE publishes as note categories
/// in containers 200, 300 and 400 only, so the note is checked with the server showing container
/// 200 (where no state is).
///
/// Everything is started in an order that has each peer up before the one that sends to it:
/// Kamailio, the stand-in server, the front, the gateway (which subscribes for its linked
/// identity as it starts, and would otherwise try again only a minute later), then SIPE.
/// `Peers/sipe/run-sipe-publish.py` runs the same by hand against the built gateway binary.
extension GatewayPeerTests {
    @Suite struct SIPEPublishTests {
        /// A state SIPE is set to (a line for `sipe_driver.py --control`: a raw IRC `AWAY` sets
        /// the user's own state, matched by bitlbee against SIPE's status names) and the
        /// availability SIPE publishes for it.
        struct Step: CustomStringConvertible {
            let label: String
            let command: String
            let availability: UInt32
            var description: String { "\(label) (\(availability))" }
        }

        /// In an order where each step changes what the watcher gets (busy and away alternate),
        /// so that none passes on what the one before left.
        static let states = [
            Step(label: "Busy", command: "/AWAY :Busy", availability: 6500),
            Step(label: "Be right back", command: "/AWAY :Be right back", availability: 12500),
            Step(label: "Do not disturb", command: "/AWAY :Do not disturb", availability: 9500),
            Step(label: "Away", command: "/AWAY :Away", availability: 15500),
            Step(label: "Available", command: "/AWAY", availability: 3500),
        ]

        static let notes = ["Back at three", "Gone fishing"]

        /// What the watcher got: `<basic>` of the tuples, the RPID activities (tokens, and
        /// `other:TEXT` for `<rpid:other>`) and the notes, of persons and tuples.
        struct Seen: Equatable, CustomStringConvertible {
            var basic: [String]
            var activities: [String]
            var notes: [String]
            var description: String { "basic \(basic) activities \(activities) notes \(notes)" }

            init(_ pidf: PIDFDocument) {
                basic = pidf.tuples.compactMap { $0.status.basic?.rawValue }
                let all = pidf.persons.flatMap(\.rpid.activities) + pidf.tuples.flatMap(\.rpid.activities)
                activities = all.flatMap(\.values).compactMap { value in
                    value.rpidToken ?? value.otherText.map { "other:\($0)" }
                }
                notes = pidf.notes.map(\.text) + pidf.persons.flatMap(\.notes).map(\.text)
                    + pidf.tuples.flatMap(\.notes).map(\.text)
            }
        }

        /// The basic status and activities the watcher is owed for `availability` (no token):
        /// the §3.7.5.4 row, and with `rpidExtensions` the class's activities and other text.
        static func expected(_ availability: UInt32, rpidExtensions: Bool) throws -> (basic: String, activities: [String]) {
            let row = try #require(try MappingTable("availability-pidf.tsv").rows(availability: availability, token: nil).first,
                                   "no availability-pidf.tsv row for \(availability)")
            var activities = [row["rpid_activity"] ?? "-"].filter { $0 != "-" }
            if rpidExtensions {
                let detail = try MappingTable("availability-pidf-detail.tsv").rows.first { row in
                    guard let min = row["min"].flatMap({ UInt32($0) }), let max = row["max"].flatMap({ UInt32($0) }) else { return false }
                    return (min...max).contains(availability)
                }
                let extra = try #require(detail, "no availability-pidf-detail.tsv row for \(availability)")
                activities += (extra["activities"] ?? "-").split(separator: ",").map(String.init).filter { $0 != "-" }
                activities += [extra["other"] ?? "-"].filter { $0 != "-" }.map { "other:\($0)" }
            }
            return (try #require(row["basic"]), activities)
        }

        /// The peers of one run, and what they logged, for failure messages.
        struct Harness {
            let kamailio: OMADomainKamailio
            let work: String
            let driver: ChildProcess
            let control: String

            func context() -> String {
                let front = (try? String(contentsOfFile: work + "/front/front.log", encoding: .utf8)) ?? ""
                let log = (try? String(contentsOfFile: work + "/purple-debug.log", encoding: .utf8)) ?? ""
                return "--- driver:\n\(driver.output)\n--- OCS front:\n\(front.suffix(20000))\n--- Kamailio:\n\(kamailio.log.suffix(10000))"
                    + "\n--- SIPE's log:\n\(log.suffix(10000))"
            }

            /// Hands `command` to SIPE (a line appended to the driver's control file).
            func send(_ command: String) throws {
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: control))
                defer { try? handle.close() }
                try handle.seekToEnd()
                try handle.write(contentsOf: Data((command + "\n").utf8))
            }

            /// What an OMA watcher gets from Kamailio for sip:dave@oma.example now: a one-shot
            /// SUBSCRIBE (Expires 0, Accept PIDF) over UDP, the NOTIFY it brings answered 200, its
            /// body parsed; nil when no NOTIFY came within 5 s or its body is no PIDF.
            func fetch() async throws -> Seen? {
                let socket = try RawSIPSocket.udp()
                defer { socket.close() }
                let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
                let subscribe = [
                    "SUBSCRIBE sip:dave@oma.example SIP/2.0",
                    "Via: SIP/2.0/UDP 127.0.0.1:\(socket.port);branch=z9hG4bK\(UInt64.random(in: 0...UInt64.max));rport",
                    "Max-Forwards: 70",
                    "From: <sip:watcher@oma.example>;tag=\(tag)",
                    "To: <sip:dave@oma.example>",
                    "Call-ID: \(UInt64.random(in: 0...UInt64.max))@sipe-publish-watcher",
                    "CSeq: 1 SUBSCRIBE",
                    "Contact: <sip:watcher@127.0.0.1:\(socket.port)>",
                    "Event: presence",
                    "Accept: application/pidf+xml",
                    "Expires: 0",
                    "Content-Length: 0",
                    "", "",
                ].joined(separator: "\r\n")
                socket.send(Array(subscribe.utf8), to: kamailio.port)
                guard let message = await socket.receive(within: 5, matching: { $0.request?.method.description == "NOTIFY" }),
                      let notify = message.request else { return nil }
                socket.send(SIPResponse(replyingTo: notify, statusCode: 200, reasonPhrase: "OK").serialized(), to: kamailio.port)
                guard !notify.body.isEmpty, let pidf = try? PIDFDocument(bytes: notify.body) else { return nil }
                return Seen(pidf)
            }

            /// Fetches until `done` holds or `seconds` pass; the last thing seen.
            func poll(within seconds: Double, until done: (Seen) -> Bool) async throws -> Seen? {
                let deadline = Date().addingTimeInterval(seconds)
                var seen: Seen?
                repeat {
                    try await Task.sleep(for: .milliseconds(500))
                    seen = try await fetch()
                    if let seen, done(seen) { return seen }
                } while Date() < deadline && driver.poll() == nil
                return seen
            }
        }

        /// The gateway's configuration: OMA side UDP on `omaPort`, enterprise side TCP on
        /// `enterprisePort` with the front as next hop, and the linked identity.
        static func yaml(omaPort: UInt16, enterprisePort: UInt16, kamailioPort: UInt16, frontPort: UInt16,
                         rpidExtensions: Bool) -> String {
            """
            state: { store: memory }
            listen:
              - { side: oma, transport: udp, address: 127.0.0.1, port: \(omaPort) }
              - { side: enterprise, transport: tcp, address: 127.0.0.1, port: \(enterprisePort) }
            enterprise:
              domains: [contoso.com]
              next-hop: "sip:127.0.0.1:\(frontPort);transport=tcp"
            oma:
              domains: [oma.example]
              next-hop: "sip:127.0.0.1:\(kamailioPort);transport=udp"
              rpid-extensions: \(rpidExtensions)
            peers:
              - { name: ocs-front, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }
              - { name: kamailio, address: 127.0.0.1, port: \(kamailioPort), side: oma, network: federated }
            presentities:
              default:
                defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
                containers: { 100: [federated], 200: [sameEnterprise] }
            linked-identities:
              - { oma: "sip:dave@oma.example", enterprise: "sip:dave@contoso.com", publish-to-enterprise: false, publish-to-oma: true }
            subscriptions:
              piggyback-wait-ms: 500
              default-expires: 600
              minimum-expires: 1
            """
        }

        /// Starts Kamailio, the stand-in server showing `container`, the front, the gateway and
        /// SIPE (logged in), runs `body`, and stops them all, also when it throws.
        static func withHarness(container: UInt32, rpidExtensions: Bool, _ body: (Harness) async throws -> Void) async throws {
            try SIPEClientTests.requireTools()
            let work = NSTemporaryDirectory() + "sipe-publish-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: work) }
            let omaPort = try LoopbackPorts.free()
            let enterprisePort = try LoopbackPorts.free()
            let frontPort = try LoopbackPorts.free()
            let kamailio = try await OMADomainKamailio.start(gateway: "sip:127.0.0.1:\(omaPort)")

            // The stand-in enhanced presence server, TCP on loopback.
            let transport = try SIPNetworkTransport(configuration: .init(listeners: [.init(.tcp, host: "127.0.0.1", port: 0)]))
            var gateway: GatewayServer?
            var driver: ChildProcess?
            let frontScript = SIPEClientTests.sipe.appendingPathComponent("run-front.sh").path
            let frontEnvironment = ["FRONT_RUNDIR": work + "/front"]
            try await withCleanup {
                let bound = try await transport.start()
                let serverPort = try #require(bound.first?.port)
                let contact = SIPAddress(uri: try SIPURI("sip:127.0.0.1:\(serverPort);transport=tcp"))
                let server = try await transport.eventLoop.submit {
                    let layer = SIPTransactionLayer(transport: transport, configuration: .presenceEvents)
                    let server = PresenceServer(layer: layer, configuration: .init(contact: contact, container: container),
                                                utcSeconds: { Int64(Date().timeIntervalSince1970) })
                    layer.start()
                    server.installAsRequestHandler()
                    return server
                }.get()
                _ = server

                let (started, frontOutput) = try await runProgram("/bin/bash", [frontScript, "start"], environment: [
                    "FRONT_RUNDIR": work + "/front", "FRONT_PORT": String(frontPort),
                    "FRONT_GATEWAY": "sip:127.0.0.1:\(enterprisePort);transport=tcp",
                    "FRONT_SERVER": "sip:127.0.0.1:\(serverPort);transport=tcp",
                ], timeout: 30)
                guard started == 0 else { throw PeerError("the OCS front did not start on 127.0.0.1:\(frontPort): \(frontOutput)") }

                let configuration = try GatewayConfiguration(yaml: yaml(
                    omaPort: omaPort, enterprisePort: enterprisePort, kamailioPort: kamailio.port, frontPort: frontPort,
                    rpidExtensions: rpidExtensions))
                let running = try GatewayServer(configuration: configuration, registry: PrometheusCollectorRegistry())
                gateway = running
                try await running.start()

                let control = work + "/control"
                _ = FileManager.default.createFile(atPath: control, contents: nil)
                driver = try ChildProcess("/usr/bin/python3", [
                    SIPEClientTests.sipe.appendingPathComponent("sipe_driver.py").path, "--front", "127.0.0.1:\(frontPort)",
                    "--workdir", work + "/sipe", "--seconds", "180", "--debug-log", work + "/purple-debug.log",
                    "--control", control,
                ])
                let harness = Harness(kamailio: kamailio, work: work, driver: try #require(driver), control: control)
                let deadline = Date().addingTimeInterval(60)
                while !harness.driver.output.contains("LOGGED-IN"), Date() < deadline, harness.driver.poll() == nil {
                    try await Task.sleep(for: .milliseconds(100))
                }
                guard harness.driver.output.contains("LOGGED-IN") else {
                    throw PeerError("SIPE did not log in\n\(harness.context())")
                }
                try await body(harness)
            } cleanup: {
                if let driver { await SIPEClientTests.stopDriver(driver) }
                // The gateway before the front and the server: its unsubscribe (and the removal of
                // its PUBLISH at Kamailio) still has somewhere to go.
                if let gateway { await gateway.stop(grace: .milliseconds(500)) }
                _ = try? await runProgram("/bin/bash", [frontScript, "stop"], environment: frontEnvironment, timeout: 20)
                await transport.shutdown()
                await kamailio.stop()
                kamailio.remove()
            }
        }

        /// Each state SIPE is set to reaches an OMA watcher of dave@oma.example as the §3.7.5.4
        /// row for its availability (and with `rpid-extensions` the class's signals).
        @Test(arguments: [false, true])
        func sipeStatesReachAnOMAWatcher(rpidExtensions: Bool) async throws {
            try await Self.withHarness(container: 2, rpidExtensions: rpidExtensions) { harness in
                for step in Self.states {
                    let want = try Self.expected(step.availability, rpidExtensions: rpidExtensions)
                    try harness.send(step.command)
                    let seen = try await harness.poll(within: 20) { $0.basic == [want.basic] && $0.activities == want.activities }
                    #expect(seen?.basic == [want.basic] && seen?.activities == want.activities,
                            "\(step): the OMA watcher got \(seen.map { "\($0)" } ?? "no PIDF"), not basic [\(want.basic)] activities \(want.activities)\n\(harness.context())")
                    guard seen?.basic == [want.basic], seen?.activities == want.activities else { return }
                    #expect(seen?.notes.isEmpty == true, "\(step): notes \(seen?.notes ?? [])")
                }
            }
        }

        /// SIPE's status message (note categories in containers 200, 300 and 400) reaches an OMA
        /// watcher as the PIDF note; a changed one replaces it.
        @Test func sipeNoteReachesAnOMAWatcher() async throws {
            try await Self.withHarness(container: 200, rpidExtensions: false) { harness in
                for note in Self.notes {
                    try harness.send("account sipe set status \"\(note)\"")
                    let seen = try await harness.poll(within: 20) { $0.notes == [note] }
                    #expect(seen?.notes == [note],
                            "note \(note): the OMA watcher got \(seen.map { "\($0)" } ?? "no PIDF")\n\(harness.context())")
                    guard seen?.notes == [note] else { return }
                }
            }
        }
    }
}
