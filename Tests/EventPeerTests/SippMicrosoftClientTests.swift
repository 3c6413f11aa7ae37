import Foundation
import NIOCore
import SIPEventAgents
import PeerTestSupport
import MSPresenceEvents
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// sipp (Debian `sip-tester`) as a Microsoft enhanced-presence client against the stack's
/// ``PresenceServer`` on ``SIPNetworkTransport`` (UDP, 127.0.0.1): a SERVICE category publish
/// ([MS-PRES] §3.2.5.1.2) and a batched category SUBSCRIBE (§3.4.5.1.1) whose 200 OK must carry
/// the published note, then an unsubscribe with its final NOTIFY (sipp/ms-client.xml).
@Suite(.serialized)
struct SippMicrosoftClientTests {
    /// A missing peer fails the tests (scripts/setup.sh installs it; CI must not pass without it).
    init() throws {
        guard PeerTools.sipp else { throw PeerTools.Missing("sipp (scripts/setup.sh installs sip-tester)") }
    }

    @Test func sippClientPublishesAndSubscribesToThePresenceServer() async throws {
        let transport = try SIPNetworkTransport(configuration: .init(listeners: [.init(.udp, host: "127.0.0.1", port: 0)]))
        let bound = try await transport.start()
        let local = try #require(bound.first)
        let loop = transport.eventLoop
        let server = try await loop.submit {
            let layer = SIPTransactionLayer(transport: transport, configuration: .presenceEvents)
            let server = PresenceServer(layer: layer, configuration: .init(contact: SIPAddress(uri: SIPURI(scheme: .sip, host: "127.0.0.1", port: local.port))),
                                        utcSeconds: { Int64(Date().timeIntervalSince1970) })
            layer.start()
            server.installAsRequestHandler()
            return server
        }.get()
        let scenario = PeerTools.directory.appendingPathComponent("sipp/ms-client.xml").path
        let run = try await Sipp.run(scenario: scenario, remote: "127.0.0.1:\(local.port)", timeLimit: 20)
        #expect(run.succeeded, "\(run)")
        #expect(try await loop.submit { server.batchDialogCount }.get() == 0)
        #expect(try await loop.submit { server.categories(of: "sip:bob@contoso.com").categories.count }.get() == 1)
        await transport.shutdown()
    }
}
