import Foundation
import PeerTestSupport
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing
import UPnPDevice

/// A real control point, async-upnp-client 0.49.0 (PyPI, installed by scripts/setup.sh), driving
/// the gateway's UPnP Presence:1 service between real peers (flow 5, docs/flows.md): Kamailio as
/// the OMA presence server and a sipp enterprise edge. The control point sets the user's
/// presence, which a PIDF watcher at Kamailio and an enterprise watcher through the gateway see,
/// and registers for an OMA and an enterprise contact, whose changes reach it as GENA events.
@Suite(.serialized) struct UPnPBridgePeerTests {
    static var python: String {
        let venv =
            ProcessInfo.processInfo.environment["UPNP_PEER_VENV"]
            ?? "/opt/presence-gateway-peers/async-upnp-client-0.49.0"
        return venv + "/bin/python"
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("upnp_control_point.py").path

    static let user = "sip:carol@oma.example"

    /// A PIDF document as a control point writes it: open, with one RPID activity (RFC 4480).
    static func pidf(_ activity: String) -> String {
        """
        <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" \
        entity="\(user)"><tuple id="cp"><status><basic>open</basic></status></tuple>\
        <person xmlns="urn:ietf:params:xml:ns:pidf:data-model" id="p"><rpid:activities><rpid:\(activity)/>\
        </rpid:activities></person></presence>
        """
    }

    static func contact(_ uri: String) -> String { "<contact xmlns=\"\(NS.upnpPresence)\" uri=\"\(uri)\"/>" }

    @Test func aControlPointPublishesWatchesContactsAndIsEvented() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            Issue.record("async-upnp-client is not installed at \(Self.python): run scripts/setup.sh")
            return
        }
        // The enterprise edge answers bob's category SUBSCRIBE online (3500), then busy (6500).
        let edge = (
            scenario: "enterprise-edge.xml", keys: ["avail1": "3500", "avail2": "6500", "expires": "600"], calls: 1,
            pause: 3000
        )
        var options = GatewayPeers.Options()
        options.extra = "upnp: { user: \"\(Self.user)\", address: 127.0.0.1 }\n"
        try await GatewayPeers.with(edge: edge, options: options) { peers in
            try await ControlPoint.with(backend: peers.server.presenceService, python: Self.python, script: Self.script) {
                point in
                try await Self.userPresence(point, peers)
                try await Self.contacts(point, peers)
            }
        }
    }

    /// UpdatePresence busy: Kamailio holds the user's publication, so a PIDF watcher there sees
    /// busy, and so does an enterprise watcher through the gateway ([MS-PRES] §3.7.5.4: 6500).
    static func userPresence(_ point: ControlPoint, _ peers: GatewayPeers) async throws {
        #expect(try await point.call("UpdatePresence", ["UpdatedUserPresence": pidf("busy")]).ok != nil)
        let shown = try #require(try await point.call("GetPresence").ok?["UserPresence"])
        #expect(try PIDFDocument(bytes: Array(shown.utf8)).entity == user)
        #expect(await point.waitForEvent { $0["UserPresenceInfo"]?.contains("busy") == true })

        let watcher = try await Sipp.run(
            scenario: PeerAssets.scenario("watcher.xml"), remote: peers.omaSide,
            keys: ["watcher": "sip:erin@oma.example", "resource": user, "accept": "application/pidf+xml",
                   "event": "presence"],
            timeLimit: 30, extra: ["-d", "1000", "-set", "notifies", "1"])
        #expect(watcher.succeeded, "PIDF watcher at Kamailio: \(watcher)")
        #expect(watcher.receivedRequests("NOTIFY").contains { String(decoding: $0.body, as: UTF8.self).contains("busy") })

        let enterprise = try await EnterpriseWatcher(
            watcher: "sip:dave@contoso.com", resource: user, gatewayPort: peers.enterprisePort)
        #expect(await enterprise.sees(6500, after: 0, within: 10), "\(enterprise.transcript)")
        // The user's watchers as the gateway knows them (RFC 3857 §3.7): dave, active.
        #expect(await point.waitForWatchers { $0 == [UPnPWatcher(uri: "sip:dave@contoso.com", status: .active)] })
    }

    /// The user decides on the enterprise's own watchers (RFC 5025 `confirm`): dave waits for
    /// the user (Watcher: pending, nothing shown to him), AuthorizePresenceReactive allows him
    /// (Watcher: active, allow), and from then on he sees the user's state; a proactive
    /// polite-block for erin lets him in seeing what a user who never published shows.
    @Test func theUserDecidesOnTheirWatchers() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            Issue.record("async-upnp-client is not installed at \(Self.python): run scripts/setup.sh")
            return
        }
        var options = GatewayPeers.Options()
        options.extra = "upnp: { user: \"\(Self.user)\", address: 127.0.0.1 }\n"
        options.presentities = """
              "\(Self.user)":
                defaults: { sameEnterprise: confirm, federated: allow, publicCloud: polite-block }
                containers: { 100: [federated], 200: [sameEnterprise] }
            """
        try await GatewayPeers.with(options: options) { peers in
            try await ControlPoint.with(backend: peers.server.presenceService, python: Self.python, script: Self.script) {
                point in
                #expect(try await point.call("UpdatePresence", ["UpdatedUserPresence": Self.pidf("busy")]).ok != nil)
                let waiting = try await EnterpriseWatcher(
                    watcher: "sip:dave@contoso.com", resource: Self.user, gatewayPort: peers.enterprisePort)
                #expect(await point.waitForWatchers { $0 == [UPnPWatcher(uri: "sip:dave@contoso.com", status: .pending)] })
                // Waiting: nothing of the user shown, nothing asked of Kamailio for him.
                #expect(waiting.availabilities.isEmpty)
                #expect(!peers.kamailioSubscribes(for: Self.user).contains { $0.contains("from=sip:dave@contoso.com") })
                let authorized = try await point.call(
                    "AuthorizePresenceReactive",
                    ["Contact": Self.contact("sip:dave@contoso.com"), "Expire": 3600, "UserPresenceInfo": Self.pidf("busy")])
                #expect(authorized.ok == [:])
                #expect(
                    await point.waitForWatchers {
                        $0.contains(UPnPWatcher(uri: "sip:dave@contoso.com", status: .active, decision: .allow))
                    })
                // Allowed: the gateway subscribes at Kamailio for dave now (what dave is then shown
                // is UPnPPresenceBridgeTests' to check: the edge here is no socket of the test).
                let deadline = Date().addingTimeInterval(5)
                while Date() < deadline,
                    !peers.kamailioSubscribes(for: Self.user).contains(where: { $0.contains("from=sip:dave@contoso.com") })
                {
                    try await Task.sleep(nanoseconds: 100_000_000)
                }
                #expect(peers.kamailioSubscribes(for: Self.user).contains { $0.contains("from=sip:dave@contoso.com") })

                let list = """
                    <watchers xmlns="\(NS.upnpPresence)" version="0.1">\
                    <watcher uri="sip:erin@contoso.com" decision="polite-block"/></watchers>
                    """
                let proactive = try await point.call(
                    "AuthorizePresenceProactive", ["UserPresenceInfo": Self.pidf("busy"), "Expire": 3600, "WatcherList": list])
                #expect(proactive.ok == [:])
                let erin = try await EnterpriseWatcher(
                    watcher: "sip:erin@contoso.com", resource: Self.user, gatewayPort: peers.enterprisePort)
                #expect(
                    await point.waitForWatchers {
                        $0.contains(UPnPWatcher(uri: "sip:erin@contoso.com", status: .active, decision: .politeBlock))
                    })
                // Polite blocking (RFC 5025 §3.2.1): accepted, and shown no state at all.
                await erin.settle()
                #expect(erin.subscribeStatus == 200 && !erin.availabilities.contains(6500), "\(erin.transcript)")
                #expect(
                    try await point.call(
                        "AuthorizePresenceProactive", ["UserPresenceInfo": Self.pidf("busy"), "Expire": 60, "WatcherList": "<x/>"]
                    ).fault == 600)
            }
        }
    }

    /// An enterprise user (dana@contoso.com): UpdatePresence reaches the enterprise edge as a
    /// SERVICE category publish ([MS-PRES] §2.2.2.2), and an OMA contact is shown under its
    /// policy as flow 1 shows an enterprise watcher. john, publishing busy at Kamailio, politely
    /// blocks the enterprise's own watchers; the control point sees him exactly as it sees zoe,
    /// who never published (RFC 5025 §3.2.1).
    @Test func anEnterpriseUserSeesAPolitelyBlockedContactAsOneThatNeverPublished() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            Issue.record("async-upnp-client is not installed at \(Self.python): run scripts/setup.sh")
            return
        }
        // The enterprise edge over TCP: a SERVICE publish exceeds the 1300 bytes RFC 3261
        // §18.1.1 allows over UDP.
        let edge = try RawSIPSocket.listening(on: try LoopbackPorts.free())
        var options = GatewayPeers.Options(enterpriseTCP: true)
        options.extra = "upnp: { user: \"sip:dana@contoso.com\", address: 127.0.0.1 }\n"
        options.presentities = """
              "sip:john@oma.example":
                defaults: { sameEnterprise: polite-block, federated: allow, publicCloud: polite-block }
                containers: { 100: [federated], 200: [sameEnterprise] }
            """
        try await GatewayPeers.with(edgePort: edge.port, options: options) { peers in
            try await ControlPoint.with(backend: peers.server.presenceService, python: Self.python, script: Self.script) {
                point in
                #expect(try await point.call("UpdatePresence", ["UpdatedUserPresence": Self.pidf("busy")]).ok == [:])
                let connection = await edge.accept(within: 10)
                let service = await connection?.receive(within: 10) { $0.request?.method.description == "SERVICE" }
                let body = service.map { String(decoding: $0.request?.body ?? [], as: UTF8.self) } ?? ""
                #expect(body.contains("machineState") && body.contains("6500"), "SERVICE: \(body)")

                try await GatewayPeerTests.publish(peers, user: "john", activity: "busy")
                var shown: [String] = []
                for contact in ["sip:john@oma.example", "sip:zoe@oma.example"] {
                    _ = try await point.call("RegisterForContactPresence", ["Contact": Self.contact(contact), "Expire": 600])
                    #expect(await point.waitForContact(contact) { $0.state == .active })
                    let presence = try #require(
                        try await point.call("GetContactPresence", ["TargetContact": Self.contact(contact)]).ok?[
                            "ContactPresence"])
                    shown.append(presence.replacingOccurrences(of: contact, with: "sip:contact@oma.example"))
                }
                #expect(shown.count == 2 && shown[0] == shown[1], "\(shown)")
                #expect(!shown[0].contains("busy"))
            }
        }
    }

    /// RegisterForContactPresence on alice (OMA, publishing at Kamailio) and on bob (enterprise):
    /// each change is evented in its band; Expire 0 ends alice's subscription at Kamailio.
    static func contacts(_ point: ControlPoint, _ peers: GatewayPeers) async throws {
        try await GatewayPeerTests.publish(peers, user: "alice", activity: "away")
        let alice = try await point.call(
            "RegisterForContactPresence", ["Contact": contact("sip:alice@oma.example"), "Expire": 600])
        let result = try UPnPRegistrationResult(bytes: Array(try #require(alice.ok?["RegistrationResult"]).utf8))
        #expect(result.result == .subscribed && result.uri == "sip:alice@oma.example")
        #expect(await point.waitForContact("sip:alice@oma.example") { $0.band == "away" && $0.state == .active })
        try await GatewayPeerTests.publish(peers, user: "alice", activity: "busy")
        #expect(await point.waitForContact("sip:alice@oma.example") { $0.band == "busy" })

        _ = try await point.call(
            "RegisterForContactPresence", ["Contact": contact("sip:bob@contoso.com"), "Expire": 600])
        #expect(await point.waitForContact("sip:bob@contoso.com") { $0.band == "online" })
        #expect(await point.waitForContact("sip:bob@contoso.com", within: 15) { $0.band == "busy" })

        let bob = try #require(try await point.call("GetContactPresence", ["TargetContact": contact("sip:bob@contoso.com")]).ok)
        let list = try UPnPContactPresenceList(bytes: Array(try #require(bob["ContactPresence"]).utf8))
        #expect(list.contacts.map(\.band) == ["busy"])
        let update = try #require(try await point.call("GetPresenceOfContactsUpdate").ok?["ContactPresenceUpdate"])
        let updated = try UPnPContactPresenceList(bytes: Array(update.utf8)).contacts.map(\.uri)
        #expect(Set(updated) == ["sip:alice@oma.example", "sip:bob@contoso.com"])
        // Not registered, and no domain of the gateway's: UPnP error 600 (UDA 1.1 §3.2.2).
        #expect(try await point.call("GetContactPresence", ["TargetContact": contact("sip:zoe@oma.example")]).fault == 600)
        #expect(
            try await point.call(
                "RegisterForContactPresence", ["Contact": contact("sip:eve@elsewhere.example"), "Expire": 60]
            ).fault == 600)

        _ = try await point.call("RegisterForContactPresence", ["Contact": contact("sip:alice@oma.example"), "Expire": 0])
        #expect(await point.waitForContact("sip:alice@oma.example") { $0.state == .terminated })
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, !peers.kamailioSubscribes(for: "sip:alice@oma.example").contains(where: { $0.contains("expires=[0]") }) {
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        #expect(peers.kamailioSubscribes(for: "sip:alice@oma.example").contains { $0.contains("expires=[0]") })
    }
}

/// upnp_control_point.py running against a device bound here on loopback with the gateway's
/// backend: commands written as files, answers and events read back.
final class ControlPoint: @unchecked Sendable {
    let folder: String
    let process: ChildProcess
    private var number = 0

    struct Answer {
        var ok: [String: String]?
        var fault: Int?
    }

    private init(folder: String, process: ChildProcess) {
        self.folder = folder
        self.process = process
    }

    /// Binds the device (HTTP and SSDP on free loopback ports, no multicast), runs it, starts the
    /// control point, and runs `body` once the control point has subscribed to the events.
    static func with(
        backend: any PresenceServiceBackend, python: String, script: String, _ body: (ControlPoint) async throws -> Void
    ) async throws {
        let configuration = PresenceDeviceConfiguration(
            identity: DeviceIdentity(uuid: makeUUID()), httpHost: "127.0.0.1", httpPort: 0, ssdpHost: "127.0.0.1",
            ssdpPort: 0, joinMulticastGroup: false)
        let device = try await PresenceDevice.bind(configuration: configuration, backend: backend)
        let running = Task { try await device.run() }
        let folder = NSTemporaryDirectory() + "upnp-cp-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try await withCleanup {
            let process = try ChildProcess(python, [script, String(device.ssdpAddress.port ?? 0), folder])
            let point = ControlPoint(folder: folder, process: process)
            try await withCleanup {
                _ = try await point.read("ready.json", within: 20)
                try await body(point)
            } cleanup: {
                try? Data(#"{"quit": true}"#.utf8).write(
                    to: URL(fileURLWithPath: folder + "/cmd-\(point.number + 1).json"), options: .atomic)
                _ = await process.wait(timeout: 10)
            }
        } cleanup: {
            running.cancel()
            _ = try? await running.value
            try? FileManager.default.removeItem(atPath: folder)
        }
    }

    /// Calls `action` with `args` and waits for the answer.
    func call(_ action: String, _ args: [String: Any] = [:]) async throws -> Answer {
        number += 1
        let command = try JSONSerialization.data(withJSONObject: ["action": action, "args": args])
        // Whole or not at all: the control point polls for the file and reads it once it exists.
        try command.write(to: URL(fileURLWithPath: folder + "/cmd-\(number).json"), options: .atomic)
        let answer = try await read("out-\(number).json", within: 20)
        return Answer(ok: answer["ok"] as? [String: String], fault: answer["fault"] as? Int)
    }

    /// The events received so far, each as the variables it carried.
    var events: [[String: String]] {
        guard let text = try? String(contentsOfFile: folder + "/events.jsonl", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String]
        }
    }

    func waitForEvent(within seconds: Double = 10, _ matches: ([String: String]) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if events.contains(where: matches) { return true }
            try? await Task.sleep(nanoseconds: 100_000_000)
        }
        return false
    }

    /// Waits for a Watcher event whose list `matches` wants.
    func waitForWatchers(within seconds: Double = 10, _ matches: ([UPnPWatcher]) -> Bool) async -> Bool {
        await waitForEvent(within: seconds) { event in
            guard let value = event["Watcher"], let list = try? UPnPWatcherList(bytes: Array(value.utf8)) else {
                return false
            }
            return matches(list.watchers)
        }
    }

    /// Waits for a PresenceOfContactsUpdate event showing `uri` as `matches` wants.
    func waitForContact(_ uri: String, within seconds: Double = 10, _ matches: (UPnPContactPresence) -> Bool) async
        -> Bool
    {
        await waitForEvent(within: seconds) { event in
            guard let value = event["PresenceOfContactsUpdate"],
                let list = try? UPnPContactPresenceList(bytes: Array(value.utf8))
            else { return false }
            return list.contacts.contains { $0.uri == uri && matches($0) }
        }
    }

    private func read(_ name: String, within seconds: Double) async throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let data = FileManager.default.contents(atPath: folder + "/" + name),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            {
                return object
            }
            if process.poll() != nil { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        throw PeerError("the control point wrote no \(name): \(process.output)")
    }
}
