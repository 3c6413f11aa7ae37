// The project's stand-in enhanced presence server (``PresenceServer``, SIPEventAgents) as a
// process of its own, for Peers/sipe/run-sipe-publish.py by hand: TCP on 127.0.0.1, SERVICE
// category publishes stored ([MS-PRES] §3.2.5.1.2), category SUBSCRIBEs served (§3.4.5.1.1),
// NOTIFY/BENOTIFY on change; watchers see one container's instances.
//
//     presence-server-standin PORT [CONTAINER]     (CONTAINER default 2)
//
// Prints "LISTENING <port>" once bound; runs until killed. Built with the package (a test tool,
// as event-bench); the gateway does not use it.
import Foundation
import MSPresenceEvents
import NIOCore
import SIPEventAgents
import SIPMessages
import SIPStack
import SIPTransport

@main
struct PresenceServerStandIn {
    static func main() async throws {
        let arguments = CommandLine.arguments
        guard arguments.count >= 2, let port = UInt16(arguments[1]) else {
            FileHandle.standardError.write(Data("usage: presence-server-standin PORT [CONTAINER]\n".utf8))
            exit(2)
        }
        let container = arguments.count > 2 ? UInt32(arguments[2]) ?? 2 : 2
        let transport = try SIPNetworkTransport(
            configuration: .init(listeners: [.init(.tcp, host: "127.0.0.1", port: port)]))
        let bound = try await transport.start()
        guard let local = bound.first else { exit(1) }
        let contact = SIPAddress(uri: try SIPURI("sip:127.0.0.1:\(local.port);transport=tcp"))
        let server = try await transport.eventLoop.submit {
            let layer = SIPTransactionLayer(transport: transport, configuration: .presenceEvents)
            let server = PresenceServer(
                layer: layer, configuration: .init(contact: contact, container: container),
                utcSeconds: { Int64(Date().timeIntervalSince1970) })
            layer.start()
            server.installAsRequestHandler()
            return server
        }.get()
        FileHandle.standardOutput.write(Data("LISTENING \(local.port) container \(container)\n".utf8))
        while true {
            try await Task.sleep(for: .seconds(3600))
            _ = server
        }
    }
}
