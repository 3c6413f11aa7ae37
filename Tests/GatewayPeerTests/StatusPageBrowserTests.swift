import Foundation
import PeerTestSupport
import PresenceGateway
import Testing

/// The admin status page in a real browser: Debian's chromium, headless (scripts/setup.sh
/// installs it), loads `GET /` from the gateway on loopback, and the test reads what it rendered
/// (its DOM after parsing) and keeps a screenshot. Set `STATUS_PAGE_SCREENSHOT=FILE` to keep the
/// PNG for a look.
@Suite(.serialized) struct StatusPageBrowserTests {
    static var chromium: String? {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Runs headless chromium with `arguments` and the page address (at most 60 s); what it
    /// printed. Nothing but the loopback page is loaded: no first-run, sync or update traffic.
    static func chromium(_ arguments: [String], url: String) async throws -> String {
        let program = try #require(chromium, "chromium is not installed: run scripts/setup.sh")
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UInt32.random(in: 0...UInt32.max))")
        defer { try? FileManager.default.removeItem(at: profile) }
        let (status, output) = try await runProgram(program, [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
            "--user-data-dir=\(profile.path)", "--window-size=1280,900",
        ] + arguments + [url], timeout: 60)
        #expect(status == 0, "chromium exited with \(status): \(output.suffix(2000))")
        return output
    }

    @Test func theStatusPageRendersTheBridgedSubscriptionsAndPeers() async throws {
        // The browser sends no bearer token: the page is read as a loopback client without one.
        let gw = try await AdminAPITests.Gateway(token: nil)
        _ = try await gw.bridgeOMAWatcher()
        let url = "http://127.0.0.1:\(gw.admin)/"
        let dom = try await Self.chromium(["--dump-dom"], url: url)
        // What the browser built from the page: the headings, the watcher's row, the peers.
        #expect(dom.contains("<h1>PresenceGateway</h1>"))
        #expect(dom.contains("OMA watchers → enterprise presentities: 1"))
        #expect(dom.contains("Enterprise watchers → OMA presentities: 0"))
        #expect(dom.contains("sip:dave@oma.example") && dom.contains("sip:bob@contoso.com (active)"))
        #expect(dom.contains(">edge</td>") || dom.contains(" edge</td>"))
        let shot = ProcessInfo.processInfo.environment["STATUS_PAGE_SCREENSHOT"]
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("status-page-\(gw.admin).png").path
        _ = try await Self.chromium(["--screenshot=\(shot)"], url: url)
        let png = try Data(contentsOf: URL(fileURLWithPath: shot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000, "\(png.count) bytes")
        if ProcessInfo.processInfo.environment["STATUS_PAGE_SCREENSHOT"] == nil { try? FileManager.default.removeItem(atPath: shot) }
        await gw.stop()
    }
}
