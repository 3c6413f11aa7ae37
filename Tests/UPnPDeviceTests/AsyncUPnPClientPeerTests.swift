import Foundation
import PeerTestSupport
import Testing
import UPnPDevice

/// The device with a real control point: async-upnp-client 0.49.0 (PyPI), installed by
/// scripts/setup.sh into a virtual environment (UPNP_PEER_VENV, default
/// /opt/presence-gateway-peers/async-upnp-client-0.49.0). upnp_peer.py searches with a unicast
/// M-SEARCH to the device's SSDP port on 127.0.0.1 (the device listens on a free loopback port
/// without joining the group: lo has no MULTICAST flag in the test machines, and a multicast
/// search goes to port 1900, which a test cannot count on), reads the descriptions, calls every
/// action, subscribes, and prints one JSON object.
@Suite struct AsyncUPnPClientPeerTests {
    static var python: String {
        let venv =
            ProcessInfo.processInfo.environment["UPNP_PEER_VENV"]
            ?? "/opt/presence-gateway-peers/async-upnp-client-0.49.0"
        return venv + "/bin/python"
    }

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "upnp_peer.py"
    )
    .path

    /// The JSON object on the script's last line that starts with `{`.
    static func report(_ output: String) throws -> [String: Any] {
        let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("{") }, "no JSON in: \(output)")
        return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func controlPointDiscoversCallsAndSubscribes() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            Issue.record("async-upnp-client is not installed at \(Self.python): run scripts/setup.sh")
            return
        }
        let backend = InMemoryPresenceBackend()
        await backend.setContactPresence("sip:bob@example.com", "<presence entity='sip:bob@example.com'/>")
        let (status, output) = try await withDevice(backend: backend) { device in
            try await runProgram(Self.python, [Self.script, String(device.ssdpAddress.port ?? 0)], timeout: 60)
        }
        #expect(status == 0, "upnp_peer.py: \(output)")
        let report = try Self.report(output)
        try checkDiscovery(report)
        try checkActions(report)
        try checkEvents(report, output: output)
        #expect(await backend.registrations.map(\.contact) == ["sip:bob@example.com"])
    }

    /// UDA 1.1 §1.3.3 and §2: four answers to ssdp:all, and the description as the client read it.
    func checkDiscovery(_ report: [String: Any]) throws {
        let search = try #require(report["search"] as? [[String: Any]])
        let targets = search.compactMap { $0["ST"] as? String }
        #expect(
            Set(targets.filter { !$0.hasPrefix("uuid:") }) == [
                "upnp:rootdevice", "urn:schemas-upnp-org:device:TelephonyServer:2",
                "urn:schemas-upnp-org:service:Presence:1",
            ])
        #expect(targets.filter { $0.hasPrefix("uuid:") }.count == 1)
        #expect(search.count == 4)
        let device = try #require(report["device"] as? [String: Any])
        #expect(device["type"] as? String == "urn:schemas-upnp-org:device:TelephonyServer:2")
        #expect(device["services"] as? [String] == ["urn:schemas-upnp-org:service:Presence:1"])
        #expect(
            report["actions"] as? [String] == [
                "AuthorizePresenceProactive", "AuthorizePresenceReactive", "GetContactPresence", "GetPresence",
                "GetPresenceOfContactsUpdate", "RegisterForContactPresence", "UpdatePresence",
            ])
        #expect(report["evented"] as? [String] == ["PresenceOfContactsUpdate", "UserPresenceInfo", "Watcher"])
    }

    /// Every action answered (UDA 1.1 §3.2.2), and fault 600 for a payload that is not XML.
    func checkActions(_ report: [String: Any]) throws {
        let results = try #require(report["results"] as? [String: [String: Any]])
        func ok(_ action: String) -> [String: String]? { results[action]?["ok"] as? [String: String] }
        #expect(ok("GetPresence") == ["UserPresence": "<presence/>"])
        #expect(ok("UpdatePresence") == [:])
        #expect(ok("GetContactPresence") == ["ContactPresence": "<presence entity='sip:bob@example.com'/>"])
        #expect(ok("GetPresenceOfContactsUpdate")?["ContactPresenceUpdate"]?.contains("sip:bob@example.com") == true)
        #expect(ok("RegisterForContactPresence")?["RegistrationResult"]?.contains("result=\"ok\"") == true)
        #expect(ok("AuthorizePresenceReactive") == [:])
        #expect(ok("AuthorizePresenceProactive") == [:])
        #expect(results["UpdatePresenceNotXML"]?["fault"] as? Int == 600)
        #expect(results["UpdatePresenceNotXML"]?["status"] as? Int == 500)
    }

    /// UDA 1.1 §4.1.2 and §4.3.2: the subscription, the initial event with every evented variable,
    /// then an event with the updated presence.
    func checkEvents(_ report: [String: Any], output: String) throws {
        let subscription = try #require(report["subscription"] as? [String: Any])
        #expect((subscription["sid"] as? String)?.hasPrefix("uuid:") == true)
        #expect(subscription["timeout"] as? Int == 1800)
        let events = try #require(report["events"] as? [[String: String]])
        try #require(events.count >= 2, "events: \(events); the client's log:\n\(output)")
        #expect(Set(events[0].keys) == ["UserPresenceInfo", "PresenceOfContactsUpdate", "Watcher"])
        #expect(events[0]["UserPresenceInfo"] == "<presence status='open'/>")
        #expect(events.dropFirst().contains { $0["UserPresenceInfo"] == "<presence status='away'/>" })
    }
}
