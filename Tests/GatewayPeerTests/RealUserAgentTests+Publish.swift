import Foundation
import Glibc
import PeerTestSupport
import Testing

/// The other direction: real OMA user agents publish their own presence into Kamailio (RFC 3903)
/// and an enterprise watcher, subscribed through the gateway with a batched category SUBSCRIBE
/// (``EnterpriseWatcher``), must see for each step the availability that
/// `Mappings/pidf-availability.tsv` gives the PIDF the user agent sent.
///
/// What each user agent can publish, captured from Kamailio's body log (WITH_BODYLOG):
///
/// - linphone 5.1 (linphonec) with `publish=1` sends, once registered, one tuple
///   `<status><basic>open</basic><pidfonline:online/></status>` (namespace
///   `http://www.linphone.org/xsds/pidfonline.xsd`), a contact and a timestamp: no person, no RPID
///   activity. linphonec 5.1 has no command to change it (its `status` command only prints
///   registration, auto-answer and hook status; linphone-daemon has no presence command either),
///   so busy, away and the rest cannot be published from it. When it quits it removes the
///   publication (a PUBLISH with Expires 0); over UDP that request has no
///   Content-Length and Kamailio refuses it ("no Content-Length header found", 400), so the
///   publication would stay until it expires. Over TCP it carries Content-Length 0 and is
///   accepted: the test registers it over TCP.
/// - baresip 1.0 (presence module, `pubint` set in the account) sends, once registered,
///   `<basic>open</basic>` in a tuple with an empty `<dm:person><rpid:activities/></dm:person>`;
///   its console commands `/presence_offline` and `/presence_online` publish `<basic>closed</basic>`
///   and `<basic>open</basic>` (same empty activities). It has no command for busy or away
///   (it reads rpid away, busy and on-the-phone in what it receives, but never publishes them).
///   At `/quit` it removes the publication (Expires 0, Content-Length 0); it does so on SIGTERM
///   too when started from a shell, but a SIGTERM from the test process was not acted on.
///
/// Kamailio relays each PIDF as published (re-serialized). When a publication is removed it
/// notifies a body of its own: the same tuple with `<basic>closed</basic>` (linphone's
/// `pidfonline:online` kept beside it), so the watcher then sees the table's row for closed.
/// Before the user agent publishes, Kamailio's NOTIFY has no body and the watcher gets an empty
/// state category: no availability.
extension GatewayPeerTests.RealUserAgentTests {
    /// A step a user agent takes and the PIDF status Kamailio notifies the gateway for it.
    struct PublishStep: CustomStringConvertible {
        let action: String
        let basic: String
        let activities: [String]
        var description: String { "\(action) (\(basic)\(activities.isEmpty ? "" : " + " + activities.joined(separator: ", ")))" }
    }

    static let linphoneSteps = [
        PublishStep(action: "linphonec registers with publish=1", basic: "open", activities: []),
        PublishStep(action: "linphonec quits (its Expires 0 PUBLISH over TCP)", basic: "closed", activities: []),
    ]

    static let baresipSteps = [
        PublishStep(action: "baresip registers with pubint", basic: "open", activities: []),
        PublishStep(action: "/presence_offline", basic: "closed", activities: []),
        PublishStep(action: "/presence_online", basic: "open", activities: []),
        PublishStep(action: "/quit (its Expires 0 PUBLISH)", basic: "closed", activities: []),
    ]

    /// The availability `pidf-availability.tsv` gives a PIDF with `basic`, `activities` and no
    /// user-input: its rows are tried top to bottom and the first whose conditions all hold wins
    /// (the table's header comment), read here independently of the gateway's loader.
    static func tableAvailability(basic: String, activities: [String]) throws -> UInt32 {
        let table = try MappingTable("pidf-availability.tsv")
        for row in table.rows {
            guard let rowBasic = row["basic"], let activity = row["activity"], let input = row["user_input"] else { continue }
            guard rowBasic == "*" || rowBasic == basic else { continue }
            switch activity {
            case "*": break
            case "none": guard activities.isEmpty else { continue }
            default: guard activities.contains(activity) else { continue }
            }
            guard input == "*" else { continue }
            if let value = row["availability"].flatMap({ UInt32($0) }) { return value }
        }
        throw PeerError("pidf-availability.tsv has no row for \(basic) \(activities)")
    }

    /// Subscribes `resource` from the enterprise side, waits for the first notification, then runs
    /// `steps`: each `take(i)` makes the user agent take step i, and the watcher must see that
    /// step's availability within `seconds` before the next is taken.
    static func watchSteps(_ steps: [PublishStep], of resource: String, peers: GatewayPeers, within seconds: Double = 20,
                           context: () -> String, take: (Int) async throws -> Void) async throws {
        let watcher = try await EnterpriseWatcher(watcher: "sip:alice@contoso.com", resource: resource, gatewayPort: peers.enterprisePort)
        #expect(watcher.subscribeStatus.map { (200..<300).contains($0) } == true,
                "the enterprise SUBSCRIBE got \(watcher.subscribeStatus.map(String.init) ?? "no answer")")
        // What the watcher sees before the user agent exists (nothing published yet).
        await watcher.settle()
        for (i, step) in steps.enumerated() {
            let expected = try tableAvailability(basic: step.basic, activities: step.activities)
            let mark = watcher.availabilities.count
            try await take(i)
            let seen = await watcher.sees(expected, after: mark, within: seconds)
            #expect(seen, """
                step \(i + 1), \(step): the enterprise watcher saw \(watcher.availabilities.dropFirst(mark)), not \(expected)
                (all: \(watcher.availabilities))
                --- received:
                \(watcher.transcript.joined(separator: "\n"))
                \(context())
                --- Kamailio:
                \(peers.kamailio.log)
                """)
            guard seen else { return }
        }
        // Nothing after the last step: the last state seen is still the last step's.
        await watcher.settle()
        let last = try tableAvailability(basic: steps[steps.count - 1].basic, activities: steps[steps.count - 1].activities)
        #expect(watcher.availabilities.last == last, "after the last step: \(watcher.availabilities)")
    }

    @Test func linphonePublicationsReachAnEnterpriseWatcherAsTheTablesAvailability() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/linphonec") else {
            throw PeerError("linphone-cli is not installed: bash scripts/setup.sh installs it")
        }
        try await GatewayPeers.with { peers in
            let home = NSTemporaryDirectory() + "linphone-pub-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: home + "/.local/share/linphone", withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: home) }
            let tcpPort = try LoopbackPorts.free()
            // erin@oma.example registers with Kamailio over TCP and publishes (publish=1); no UDP
            // listener (sip_port=0).
            try """
                [sip]
                sip_port=0
                sip_tcp_port=\(tcpPort)
                default_proxy=0
                [proxy_0]
                reg_proxy=<sip:\(peers.omaSide);transport=tcp>
                reg_route=<sip:\(peers.omaSide);transport=tcp;lr>
                reg_identity=sip:erin@oma.example
                reg_expires=600
                reg_sendregister=1
                publish=1
                """.write(toFile: home + "/linphonerc", atomically: true, encoding: .utf8)
            // linphonec quits at "quit" on its standard input: written once the test creates the
            // file `quit` (timeout(1) bounds it all and leads a process group of its own).
            let quit = home + "/quit"
            var ua: ChildProcess?
            defer {
                if let ua {
                    Glibc.kill(-ua.pid, SIGTERM)
                    ua.kill()
                    Glibc.kill(-ua.pid, SIGKILL)
                }
            }
            try await Self.watchSteps(Self.linphoneSteps, of: "sip:erin@oma.example", peers: peers,
                                      context: { "--- linphonec:\n" + (ua?.output ?? "") }) { step in
                switch step {
                case 0:
                    ua = try ChildProcess("/usr/bin/timeout", [
                        "90", "/bin/sh", "-c", #"(while [ ! -e "$1" ]; do sleep 0.1; done; echo quit) | linphonec -c "$0" -d 0"#,
                        home + "/linphonerc", quit,
                    ], environment: ["HOME": home])
                default:
                    _ = FileManager.default.createFile(atPath: quit, contents: nil)
                }
            }
        }
    }

    @Test func baresipPublicationsReachAnEnterpriseWatcherAsTheTablesAvailability() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/baresip") else {
            throw PeerError("baresip-core is not installed: bash scripts/setup.sh installs it")
        }
        try await GatewayPeers.with { peers in
            let directory = NSTemporaryDirectory() + "baresip-pub-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            // baresip binds UDP and TCP on its SIP port and TLS on the next one; the console
            // (cons.so) UDP and TCP on its own port: all free, all distinct.
            func freePort(besides taken: [UInt16]) throws -> UInt16 {
                for _ in 0..<20 {
                    let port = try LoopbackPorts.free()
                    if port < 65535, !taken.contains(where: { abs(Int($0) - Int(port)) <= 1 }),
                       !LoopbackPorts.isBound(port, udp: false), !LoopbackPorts.isBound(port + 1, udp: false) {
                        return port
                    }
                }
                throw PeerError("no free port pair on 127.0.0.1")
            }
            let sipPort = try freePort(besides: [])
            let consolePort = try freePort(besides: [sipPort])
            // frank@oma.example registers with Kamailio and publishes (pubint, seconds); the console
            // takes the presence commands.
            try """
                sip_listen 127.0.0.1:\(sipPort)
                net_interface 127.0.0.1
                module_path /usr/lib/baresip/modules
                module g711.so
                module cons.so
                module_app account.so
                module_app presence.so
                cons_listen 127.0.0.1:\(consolePort)
                """.write(toFile: directory + "/config", atomically: true, encoding: .utf8)
            try #"<sip:frank@oma.example>;outbound="sip:\#(peers.omaSide);lr";regint=600;pubint=600"#
                .write(toFile: directory + "/accounts", atomically: true, encoding: .utf8)
            let console = try RawSIPSocket.udp()
            defer { console.close() }
            var ua: ChildProcess?
            defer { ua?.kill() }
            try await Self.watchSteps(Self.baresipSteps, of: "sip:frank@oma.example", peers: peers,
                                      context: { "--- baresip:\n" + (ua?.output ?? "") }) { step in
                switch step {
                case 0:
                    ua = try ChildProcess("/usr/bin/baresip", ["-f", directory, "-t", "80"])
                default:
                    // The console reads each datagram as typed keys: "/" starts a long command.
                    let command = ["presence_offline", "presence_online", "quit"][step - 1]
                    console.send(Array("/\(command)\n".utf8), to: consolePort)
                }
            }
            let output = ua?.output ?? ""
            #expect(!output.contains("module cons.so:"), "baresip's console did not start:\n\(output)")
        }
    }
}
