import Foundation
import PeerTestSupport
import Testing

/// `gssdp-discover` (Debian gupnp-tools, installed by scripts/setup.sh), a control point nobody
/// here wrote, finds the gateway's UPnP Presence:1 device on loopback by multicast
/// (UDA 1.1 §1): in a network namespace of its own (`unshare -n`), where `lo` is given the
/// MULTICAST flag and a route for 239.0.0.0/8, so that SSDP's fixed port 1900 is the test's
/// alone. The gateway runs as a process with `upnp: { ssdp-port: 1900, multicast-interface:
/// 127.0.0.1 }`; gssdp-discover, started before it, sees its ssdp:alive, then finds it again by
/// an M-SEARCH to 239.255.255.250:1900, and sees its ssdp:byebye at SIGTERM.
@Suite struct SSDPDiscoveryProcessTests {
    static let script = #"""
        set -e
        gateway="$1"; configuration="$2"; out="$3"
        ip link set lo up
        ip link set lo multicast on
        ip route add 239.0.0.0/8 dev lo
        gssdp-discover -i lo -m all --timeout=40 -t urn:schemas-upnp-org:service:Presence:1 > "$out/watch.txt" 2>&1 &
        watch=$!
        sleep 1
        "$gateway" --config "$configuration" > "$out/gateway.txt" 2>&1 &
        gateway_pid=$!
        for _ in $(seq 1 300); do grep -q "UPnP Presence:1 device" "$out/gateway.txt" && break; sleep 0.1; done
        for _ in $(seq 1 100); do grep -q "resource available" "$out/watch.txt" && break; sleep 0.1; done
        gssdp-discover -i lo --timeout=3 -t urn:schemas-upnp-org:service:Presence:1 > "$out/search.txt" 2>&1 || true
        kill -TERM "$gateway_pid"; wait "$gateway_pid" || true
        for _ in $(seq 1 50); do grep -q "resource unavailable" "$out/watch.txt" && break; sleep 0.1; done
        kill "$watch" 2>/dev/null || true; wait "$watch" || true
        """#

    @Test(.enabled(if: getuid() == 0, "unshare -n needs root"))
    func gssdpDiscoverFindsTheDeviceByMulticastOnLoopback() async throws {
        let binary = try #require(GatewayBinary.path)
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gssdp-discover") else {
            Issue.record("gssdp-discover is not installed: run scripts/setup.sh (gupnp-tools)")
            return
        }
        let directory = NSTemporaryDirectory() + "ssdp-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Fixed ports: the namespace is the test's own.
        let configuration = directory + "/gateway.yaml"
        try """
            listen:
              - { side: oma, transport: udp, address: 127.0.0.1, port: 5060 }
              - { side: enterprise, transport: udp, address: 127.0.0.1, port: 5061 }
            enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:5062;transport=udp" }
            oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:5070;transport=udp" }
            state: { store: memory }
            upnp:
              user: "sip:carol@oma.example"
              address: 127.0.0.1
              ssdp-port: 1900
              multicast-interface: 127.0.0.1
              friendly-name: SSDP test
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
        let (status, output) = try await runProgram(
            "/usr/bin/unshare", ["-n", "/bin/bash", "-c", Self.script, "ssdp", binary, configuration, directory],
            timeout: 90)
        let watched = (try? String(contentsOfFile: directory + "/watch.txt", encoding: .utf8)) ?? ""
        let searched = (try? String(contentsOfFile: directory + "/search.txt", encoding: .utf8)) ?? ""
        let gateway = (try? String(contentsOfFile: directory + "/gateway.txt", encoding: .utf8)) ?? ""
        let transcript = "\(output)\n--- watch\n\(watched)\n--- search\n\(searched)\n--- gateway\n\(gateway.suffix(2000))"
        #expect(status == 0, "\(transcript)")
        #expect(gateway.contains("\"multicast\": true") || gateway.contains("multicast=true"), "\(transcript)")
        // ssdp:alive at start and ssdp:byebye at SIGTERM (UDA 1.1 §1.2.2, §1.2.3).
        #expect(watched.contains("resource available"), "\(transcript)")
        #expect(watched.contains("resource unavailable"), "\(transcript)")
        // The multicast M-SEARCH answered with the service's USN and the description's LOCATION
        // (§1.3.3).
        #expect(searched.contains("resource available"), "\(transcript)")
        #expect(searched.contains("::urn:schemas-upnp-org:service:Presence:1"), "\(transcript)")
        #expect(searched.contains("Location: http://127.0.0.1:"), "\(transcript)")
    }
}
