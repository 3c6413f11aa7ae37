import Foundation
import Glibc
import PeerTestSupport
import Testing

/// SIPE (pidgin-sipe 1.25, a libpurple plugin, run headless in bitlbee-libpurple 3.6) as a real
/// [MS-PRES] client: dave@contoso.com logs in through a minimal OCS 2007 R2 front
/// (`Peers/sipe/kamailio-ocs-front.cfg`, Kamailio over TCP), which answers his REGISTER and
/// roaming subscriptions (a contact list naming bob@oma.example) and relays his batched category
/// SUBSCRIBE ([MS-PRES] §3.4.5.1 and §4.5, adhocList) to the gateway's enterprise listener, record-routed,
/// so the gateway's piggybacked first notification and its BENOTIFYs reach SIPE. bob publishes
/// PIDF at Kamailio (the OMA domain, RFC 3903) through the bands of
/// `Mappings/pidf-availability.tsv`; the test reads what bitlbee's buddy list shows for bob.
///
/// `Peers/sipe/sipe_driver.py` runs bitlbee and is its IRC client; SIPE's own XML parsing needs
/// `Peers/sipe/sax1-shim.c` preloaded on Debian 12's libxml2 (the driver builds it with cc).
/// `Peers/sipe/run-sipe.py` runs the same thing by hand against the built gateway binary.
///
/// What SIPE showed (bitlbee `blist`: libpurple's status name, and the status message in
/// parentheses): the gateway's availability ([MS-PRES] §3.7.5.4 classes) with SIPE's own names;
/// for 6500 with no activity SIPE adds its message "Busy", for the activity tokens on-the-phone
/// and in-a-meeting "In a call" and "In a meeting", for 12500 "Be right back"; an RPID note
/// becomes the message. With the user's own state set, SIPE publishes it with SERVICE
/// (`application/msrtc-category-publish+xml`, [MS-PRES] §2.2.2.2): userState (instance 536870912,
/// static) and machineState (endpoint) in containers 2 and 3, availability 6500 Busy, 9500 Do not
/// disturb, 12500 Be right back, 15500 Away, 3500 back; a status message as note categories in
/// containers 200, 300 and 400 (for a test of the enterprise → OMA direction).
extension GatewayPeerTests {
    @Suite struct SIPEClientTests {
        /// bob's PIDF for each step (basic, RPID activity, note) and what SIPE shows for it.
        struct Step: CustomStringConvertible {
            let band: String
            let basic: String
            let activity: String?
            let note: String?
            let status: String
            let message: String
            var description: String { band }
        }

        static let steps = [
            Step(band: "open (3500)", basic: "open", activity: nil, note: nil, status: "Online", message: ""),
            Step(band: "busy (6500)", basic: "open", activity: "busy", note: nil, status: "Busy", message: "Busy"),
            Step(band: "on-the-phone (6500 + on-the-phone)", basic: "open", activity: "on-the-phone", note: nil,
                 status: "Busy", message: "In a call"),
            Step(band: "meeting (6500 + in-a-meeting)", basic: "open", activity: "meeting", note: nil,
                 status: "Busy", message: "In a meeting"),
            Step(band: "away (15500)", basic: "open", activity: "away", note: nil, status: "Away", message: ""),
            Step(band: "other:do-not-disturb (9500)", basic: "open", activity: "other:do-not-disturb", note: nil,
                 status: "Do not disturb", message: ""),
            Step(band: "other:be-right-back (12500)", basic: "open", activity: "other:be-right-back", note: nil,
                 status: "Be right back", message: "Be right back"),
            Step(band: "open with an RPID note", basic: "open", activity: nil, note: "Back at three",
                 status: "Online", message: "Back at three"),
            Step(band: "closed (18500)", basic: "closed", activity: nil, note: nil, status: "Offline", message: ""),
        ]

        static let sipe = PeerAssets.root.appendingPathComponent("sipe")

        /// SIPE, bitlbee and a C compiler (for the SAX1 shim) are installed by scripts/setup.sh:
        /// missing, the test fails rather than skips.
        static func requireTools() throws {
            let needed = [
                ("/usr/sbin/bitlbee", "bitlbee-libpurple"), ("/usr/lib/purple-2/libsipe.so", "pidgin-sipe"),
                ("/usr/bin/cc", "gcc"), ("/usr/bin/python3", "python3"),
            ]
            for (path, package) in needed where !FileManager.default.fileExists(atPath: path) {
                throw PeerError("\(path) is missing: bash scripts/setup.sh installs \(package)")
            }
        }

        /// Ends `sipe_driver.py`: on SIGTERM it ends bitlbee (a process group of its own, named
        /// on its `BITLBEE <port> <pid>` line); whatever is left of that group goes with SIGKILL.
        static func stopDriver(_ driver: ChildProcess) async {
            let group = driver.output.split(whereSeparator: \.isNewline)
                .first { $0.hasPrefix("BITLBEE ") }
                .flatMap { $0.split(separator: " ").last.flatMap { pid_t($0) } }
            await driver.terminate()
            if let group, group > 1 { Glibc.kill(-group, SIGKILL) }
        }

        /// bob's PUBLISH at Kamailio (`Peers/sipe/bob_publish.py`): a new publication, or with
        /// `etag` a modification of it (RFC 3903 §4.4). Returns the new entity tag.
        static func publish(_ step: Step, kamailio: String, etag: String?) async throws -> String {
            var arguments = [sipe.appendingPathComponent("bob_publish.py").path, "--server", kamailio, "--basic", step.basic]
            if let activity = step.activity { arguments += ["--activity", activity] }
            if let note = step.note { arguments += ["--note", note] }
            if let etag { arguments += ["--etag", etag] }
            let (status, output) = try await runProgram("/usr/bin/python3", arguments, timeout: 15)
            let tag = output.trimmingCharacters(in: .whitespacesAndNewlines)
            guard status == 0, !tag.isEmpty, !tag.contains(" ") else {
                throw PeerError("bob's PUBLISH (\(step)) failed: \(output)")
            }
            return tag
        }

        /// The driver's `STATUS bob@oma.example <status> | <message>` lines, in order, as (status, message).
        static func statuses(_ output: String) -> [(status: String, message: String)] {
            output.split(whereSeparator: \.isNewline).compactMap { line in
                guard line.hasPrefix("STATUS bob@oma.example ") else { return nil }
                let rest = line.dropFirst("STATUS bob@oma.example ".count)
                let parts = rest.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
                return (parts[0].trimmingCharacters(in: .whitespaces),
                        parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "")
            }
        }

        @Test func sipeShowsEachBandTheNoteAndTheFirstState() async throws {
            try Self.requireTools()
            let frontPort = try LoopbackPorts.free()
            var options = GatewayPeers.Options()
            // SIPE talks TCP; the gateway's enterprise listener and next hop (the front) are TCP.
            options.enterpriseTCP = true
            try await GatewayPeers.with(edgePort: frontPort, options: options) { peers in
                let work = NSTemporaryDirectory() + "sipe-\(UInt32.random(in: 0...UInt32.max))"
                try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(atPath: work) }
                let frontScript = Self.sipe.appendingPathComponent("run-front.sh").path
                let frontEnvironment = ["FRONT_RUNDIR": work + "/front"]
                let (started, frontOutput) = try await runProgram("/bin/bash", [frontScript, "start"], environment: [
                    "FRONT_RUNDIR": work + "/front", "FRONT_PORT": String(frontPort),
                    "FRONT_GATEWAY": "sip:127.0.0.1:\(peers.enterprisePort);transport=tcp",
                ], timeout: 30)
                guard started == 0 else {
                    _ = try? await runProgram("/bin/bash", [frontScript, "stop"], environment: frontEnvironment, timeout: 20)
                    throw PeerError("the OCS front did not start on 127.0.0.1:\(frontPort): \(frontOutput)")
                }
                var driver: ChildProcess?
                try await withCleanup {
                    // bob is online before SIPE logs in: the first state comes with the 200 of
                    // SIPE's SUBSCRIBE (the piggybacked first notification, as in [MS-PRES] §4.5).
                    var etag = try await Self.publish(Self.steps[0], kamailio: peers.omaSide, etag: nil)
                    let debugLog = work + "/purple-debug.log"
                    driver = try ChildProcess("/usr/bin/python3", [
                        Self.sipe.appendingPathComponent("sipe_driver.py").path, "--front", "127.0.0.1:\(frontPort)",
                        "--workdir", work + "/sipe", "--seconds", "150", "--debug-log", debugLog,
                    ])
                    let ua = try #require(driver)
                    func context() -> String {
                        let log = (try? String(contentsOfFile: debugLog, encoding: .utf8)) ?? ""
                        let front = (try? String(contentsOfFile: work + "/front/front.log", encoding: .utf8)) ?? ""
                        return "--- driver:\n\(ua.output)\n--- OCS front:\n\(front.suffix(20000))\n--- SIPE's log:\n\(log.suffix(20000))"
                    }
                    func waitForStatus(count: Int, within seconds: Double) async throws -> [(status: String, message: String)] {
                        let deadline = Date().addingTimeInterval(seconds)
                        var shown = Self.statuses(ua.output)
                        while shown.count < count, Date() < deadline, ua.poll() == nil {
                            try await Task.sleep(for: .milliseconds(100))
                            shown = Self.statuses(ua.output)
                        }
                        // A state shown only for a moment (offline before the first notification)
                        // would come at once after it: a little more time to catch it.
                        try await Task.sleep(for: .milliseconds(1500))
                        return Self.statuses(ua.output)
                    }

                    // Right after login: the first state SIPE shows is bob's, not offline.
                    var shown = try await waitForStatus(count: 1, within: 60)
                    #expect(ua.output.contains("LOGGED-IN"), "SIPE did not log in\n\(context())")
                    #expect(shown.first.map { $0 == (Self.steps[0].status, Self.steps[0].message) } == true,
                            "the first state SIPE showed: \(shown.first.map { "\($0)" } ?? "nothing")\n\(context())")
                    guard shown.count == 1 else {
                        Issue.record("SIPE showed \(shown.map { "\($0)" }) for the first state\n\(context())")
                        return
                    }
                    for (i, step) in Self.steps.enumerated().dropFirst() {
                        etag = try await Self.publish(step, kamailio: peers.omaSide, etag: etag)
                        shown = try await waitForStatus(count: i + 1, within: 20)
                        let seen = i < shown.count ? "\(shown[i].status) | \(shown[i].message)" : "nothing new"
                        #expect(i < shown.count && shown[i] == (step.status, step.message),
                                "step \(i + 1), \(step): SIPE showed \(seen), not \(step.status) | \(step.message)\n\(context())")
                        guard shown.count == i + 1 else {
                            Issue.record("after step \(i + 1), \(step), SIPE showed \(shown.map { "\($0)" })\n\(context())")
                            return
                        }
                    }
                    // SIPE's log: every multipart part and category document parsed.
                    let log = (try? String(contentsOfFile: debugLog, encoding: .utf8)) ?? ""
                    #expect(log.contains("sipe"), "SIPE's log is empty\n\(context())")
                    let errors = log.split(whereSeparator: \.isNewline).filter { $0.contains("error parsing xml string") }
                    #expect(errors.isEmpty, "SIPE's log: \(errors.joined(separator: "\n"))\n\(context())")
                } cleanup: {
                    if let driver { await Self.stopDriver(driver) }
                    _ = try? await runProgram("/bin/bash", [frontScript, "stop"], environment: frontEnvironment, timeout: 20)
                }
            }
        }
    }
}
