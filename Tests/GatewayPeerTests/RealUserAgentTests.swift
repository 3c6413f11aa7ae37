import Foundation
import Glibc
import PeerTestSupport
import Testing

/// Real OMA user agents watch an enterprise presentity through Kamailio and the gateway while
/// its state steps through every [MS-PRES] §3.7.5.4 band (the edge is sipp,
/// `Peers/sipp/enterprise-edge-steps.xml`). The gateway writes each band's row, basic and
/// activity only; the test checks the status the user agent shows for it.
extension GatewayPeerTests {
    /// Nested in ``GatewayPeerTests`` so that it runs serialized with the other gateway peer tests:
    /// each step is a NOTIFY the user agent must see before the next one replaces it.
    @Suite struct RealUserAgentTests {
        /// The states stepped through, in order (consecutive ones differ in PIDF, so each is
        /// notified): the state element's content, its §3.7.5.4 row, and what each user agent shows
        /// for that row's PIDF. linphone 5.1: closed → Offline, open with no activity → Online,
        /// away, busy and on-the-phone as themselves. baresip 1.0 has its own rule: closed and
        /// away → Offline, busy and on-the-phone → Busy, open otherwise → Online.
        static let steps: [(state: String, row: String, linphone: String, baresip: String)] = [
            ("<availability>3500</availability>", "3000-to-4499: open", "Online", "Online"),
            ("<availability>5000</availability>", "4500-to-5999: open + away", "Away", "Offline"),
            ("<availability>6500</availability>", "6000-to-7499: open + busy", "Busy", "Busy"),
            (#"<availability>6500</availability><activity token="on-the-phone"/>"#, "6000-to-7499, On the Phone: open + on-the-phone",
             "On the phone", "Busy"),
            ("<availability>8400</availability>", "7500-to-8999: open + away", "Away", "Offline"),
            ("<availability>9500</availability>", "9000-to-11999: open + busy", "Busy", "Busy"),
            ("<availability>12500</availability>", "12000-to-14999: open + away", "Away", "Offline"),
            ("<availability>1000</availability>", "0-to-2999: closed", "Offline", "Offline"),
            ("<availability>15500</availability>", "15000-to-17999: open + away", "Away", "Offline"),
            ("<availability>18500</availability>", ">= 18000: closed", "Offline", "Offline"),
        ]

        static var edgeKeys: [String: String] {
            var keys = ["expires": "600"]
            for (i, step) in steps.enumerated() { keys["s\(i + 1)"] = step.state }
            return keys
        }

        /// The statuses linphonec printed for bob, in order ("Friend "bob" <sip:bob@contoso.com> is Busy").
        static func linphoneStatuses(_ output: String) -> [String] {
            output.split(whereSeparator: \.isNewline).compactMap { line in
                guard let marker = line.range(of: "<sip:bob@contoso.com> is ") else { return nil }
                return String(line[marker.upperBound...]).trimmingCharacters(in: .whitespaces)
            }
        }

        @Test func linphoneShowsEachBandAsItsRow() async throws {
            let shown = try await Self.linphoneStatuses(options: GatewayPeers.Options())
            for (i, step) in Self.steps.enumerated() {
                #expect(i < shown.count && shown[i] == step.linphone,
                        "step \(i + 1), \(step.row): linphone showed \(i < shown.count ? shown[i] : "nothing")")
            }
            #expect(shown.count == Self.steps.count, "\(shown)")
        }

        /// With the RPID extensions, Do Not Disturb (9500: busy + other do-not-disturb) and Be Right
        /// Back (12500: away + other be-right-back) are what linphone shows as "Moved": why the
        /// extensions are opt-in (Mappings/README.md).
        @Test func linphoneShowsTheExtensionsMarkersAsMoved() async throws {
            var options = GatewayPeers.Options()
            options.rpidExtensions = true
            let shown = try await Self.linphoneStatuses(options: options)
            #expect(shown.count == Self.steps.count, "\(shown)")
            #expect(shown.count > 6 && shown[5] == "Moved" && shown[6] == "Moved", "\(shown)")
        }

        /// What linphonec, watching bob through Kamailio and the gateway, showed for each step.
        static func linphoneStatuses(options: GatewayPeers.Options) async throws -> [String] {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/linphonec") else {
                throw PeerError("linphone-cli is not installed: bash scripts/setup.sh installs it")
            }
            var shown: [String] = [], output = ""
            try await GatewayPeers.with(edge: ("enterprise-edge-steps.xml", Self.edgeKeys, 1, 0), options: options) { peers in
                // linphone keeps its database under $HOME: a home of its own for the run.
                let home = NSTemporaryDirectory() + "linphone-\(UInt32.random(in: 0...UInt32.max))"
                try FileManager.default.createDirectory(atPath: home + "/.local/share/linphone", withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: home) }
                // dave@oma.example registers with Kamailio (the OMA domain) and subscribes to
                // bob@contoso.com through it; Kamailio relays the subscription to the gateway.
                let configuration = """
                    [sip]
                    sip_port=\(try LoopbackPorts.free())
                    sip_tcp_port=0
                    default_proxy=0
                    [proxy_0]
                    reg_proxy=<sip:\(peers.omaSide)>
                    reg_route=<sip:\(peers.omaSide);lr>
                    reg_identity=sip:dave@oma.example
                    reg_expires=600
                    reg_sendregister=1
                    publish=0
                    [friend_0]
                    url="bob" <sip:bob@contoso.com>
                    pol=accept
                    subscribe=1
                    """
                try configuration.write(toFile: home + "/linphonerc", atomically: true, encoding: .utf8)
                // linphonec quits at the end of its standard input: a pipe held open, then "quit".
                // timeout(1) leads a process group of its own (it, the shell, sleep and linphonec),
                // which the test ends as a whole when it is done.
                let ua = try ChildProcess("/usr/bin/timeout", [
                    "90", "/bin/sh", "-c", #"(sleep 80; echo quit) | linphonec -c "$0" -d 0"#, home + "/linphonerc",
                ], environment: ["HOME": home])
                defer {
                    Glibc.kill(-ua.pid, SIGTERM)
                    ua.kill()
                    // linphonec leaves its loop on SIGTERM only once its input ends: what is left goes now.
                    Glibc.kill(-ua.pid, SIGKILL)
                }
                for _ in 0..<600 where shown.count < Self.steps.count {
                    try await Task.sleep(for: .milliseconds(100))
                    shown = Self.linphoneStatuses(ua.output)
                }
                // Anything after the last step would be a status no step asked for.
                try await Task.sleep(for: .seconds(2))
                shown = Self.linphoneStatuses(ua.output)
                if shown.count != Self.steps.count { output = ua.output + "\n--- Kamailio:\n" + peers.kamailio.log }
            }
            if shown.count != Self.steps.count { Issue.record("linphone showed \(shown):\n\(output)") }
            return shown
        }

        /// baresip's status changes for bob, in order, as (from, to) ("<sip:bob@contoso.com> changed
        /// status from Online to Offline", colours removed).
        static func baresipChanges(_ output: String) -> [String] {
            let plain = output.replacingOccurrences(of: "\u{1B}\\[[0-9;]*m", with: "", options: .regularExpression)
            return plain.split(whereSeparator: \.isNewline).compactMap { line in
                guard let marker = line.range(of: "<sip:bob@contoso.com> changed status from ") else { return nil }
                return String(line[marker.upperBound...]).replacingOccurrences(of: " to ", with: " -> ")
                    .trimmingCharacters(in: .whitespaces)
            }
        }

        /// baresip prints a contact's status only when it changes: the expected changes are those of
        /// the per-step statuses, and their sequence fixes what it showed at every step.
        @Test func baresipShowsEachBandByItsOwnRule() async throws {
            guard FileManager.default.isExecutableFile(atPath: "/usr/bin/baresip") else {
                Issue.record("baresip-core is not installed: bash scripts/setup.sh installs it")
                return
            }
            var expected: [String] = []
            var last = Self.steps[0].baresip
            for step in Self.steps.dropFirst() where step.baresip != last {
                expected.append("\(last) -> \(step.baresip)")
                last = step.baresip
            }
            try await GatewayPeers.with(edge: ("enterprise-edge-steps.xml", Self.edgeKeys, 1, 0)) { peers in
                let directory = NSTemporaryDirectory() + "baresip-\(UInt32.random(in: 0...UInt32.max))"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: directory) }
                // baresip needs its interface named to use loopback; dave@oma.example registers with
                // Kamailio and subscribes (presence=p2p) to bob@contoso.com through it.
                try """
                    sip_listen 127.0.0.1:\(try LoopbackPorts.free())
                    net_interface 127.0.0.1
                    module_path /usr/lib/baresip/modules
                    module g711.so
                    module_app account.so
                    module_app contact.so
                    module_app presence.so
                    """.write(toFile: directory + "/config", atomically: true, encoding: .utf8)
                try #"<sip:dave@oma.example>;outbound="sip:\#(peers.omaSide);lr";regint=600;pubint=0"#
                    .write(toFile: directory + "/accounts", atomically: true, encoding: .utf8)
                try #""bob" <sip:bob@contoso.com>;presence=p2p"#.write(toFile: directory + "/contacts", atomically: true, encoding: .utf8)
                let ua = try ChildProcess("/usr/bin/baresip", ["-f", directory, "-t", "80"])
                defer { ua.kill() }
                var changes: [String] = []
                // The steps take about 25 s; a change left out would only show as a shorter list.
                for _ in 0..<600 where changes.count < expected.count {
                    try await Task.sleep(for: .milliseconds(100))
                    changes = Self.baresipChanges(ua.output)
                }
                try await Task.sleep(for: .seconds(3))
                changes = Self.baresipChanges(ua.output)
                #expect(changes == expected, "baresip's output:\n\(ua.output)\n--- Kamailio:\n\(peers.kamailio.log)")
            }
        }
    }
}
