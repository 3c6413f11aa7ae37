import Foundation
import Logging
import NIOEmbedded
import PresenceGateway
import PresenceMapping
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// The runtime's refusal lines carry the SIP context as metadata, so `--log-format json` makes
/// it fields an operator can filter on (Call-ID, method, side, source, status).
@Suite struct RuntimeLogMetadataTests {
    @Test func aRefusedRequestIsLoggedWithItsSIPContext() throws {
        let loop = EmbeddedEventLoop()
        let network = SIPLoopbackNetwork(eventLoop: loop)
        let configuration = try GatewayConfiguration(yaml: GatewayConfiguration.defaultYAML)
        let omaSide = SIPTarget(.udp, host: "127.0.0.1", port: 5060)
        let enterpriseSide = SIPTarget(.tcp, host: "127.0.0.1", port: 5061)
        let core = GatewayCore(
            configuration: configuration, mapper: PresenceMapper(tables: try MappingTables.builtIn()),
            contacts: [.oma: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5060")),
                       .enterprise: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5061;transport=tcp"))],
            ids: .random())
        let lines = JSONLogHandlerTests.Lines()
        let logger = Logger(label: "presence-gateway") { label in
            JSONLogHandler(label: label, clock: { JSONLogHandlerTests.fixedTime }) { lines.append($0) }
        }
        let runtime = GatewayRuntime(
            core: core, router: FederationRouter(configuration: configuration, localAddresses: ["127.0.0.1:5060", "127.0.0.1:5061"]),
            layers: [.oma: SIPTransactionLayer(transport: network.endpoint(omaSide), configuration: GatewayRuntime.transactionConfiguration()),
                     .enterprise: SIPTransactionLayer(transport: network.endpoint(enterpriseSide),
                                                      configuration: GatewayRuntime.transactionConfiguration())],
            eventLoop: loop, logger: logger)
        runtime.start()
        let watcher = network.endpoint(SIPTarget(.udp, host: "127.0.0.1", port: 5070))
        watcher.setMessageHandler { _ in }
        // A presentity in no domain the gateway serves: 403 Relaying Denied.
        let request = try SIPMessage(parsing: Array([
            "SUBSCRIBE sip:bob@elsewhere.example SIP/2.0",
            "Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKlog1;rport",
            "Max-Forwards: 70",
            "From: <sip:alice@oma.example>;tag=w1",
            "To: <sip:bob@elsewhere.example>",
            "Call-ID: log-\"1\"@127.0.0.1",
            "CSeq: 1 SUBSCRIBE",
            "Contact: <sip:alice@127.0.0.1:5070>",
            "Event: presence",
            "Content-Length: 0", "", "",
        ].joined(separator: "\r\n").utf8))
        _ = watcher.send(request, to: omaSide, connection: nil)
        loop.advanceTime(by: .seconds(0))
        let line = try #require(lines.all.first { $0.contains("rejected SUBSCRIBE") }, "\(lines.all)")
        let object = try JSONLogHandlerTests.object(line)
        #expect(object["call-id"] as? String == "log-\"1\"@127.0.0.1")
        #expect(object["method"] as? String == "SUBSCRIBE")
        #expect(object["side"] as? String == "oma")
        #expect(object["status"] as? String == "403")
        #expect((object["source"] as? String)?.contains("127.0.0.1") == true)
    }
}
