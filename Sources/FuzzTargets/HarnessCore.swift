import PresenceGateway
import PresenceMapping
import SIPMessages

extension GatewayCore {
    /// A core for a harness that drives one dialog of the core: `yaml` with the built-in tables,
    /// the gateway's contacts on 127.0.0.1:5060 (OMA, UDP) and 5061 (enterprise, TCP), and
    /// identifiers that repeat from run to run. nil when any part cannot be made.
    static func harnessCore(yaml: String) -> GatewayCore? {
        guard let configuration = try? GatewayConfiguration(yaml: yaml),
            let tables = try? MappingTables.builtIn(),
            let oma = try? SIPURI("sip:gateway@127.0.0.1:5060"),
            let enterprise = try? SIPURI("sip:gateway@127.0.0.1:5061;transport=tcp")
        else { return nil }
        return GatewayCore(
            configuration: configuration, mapper: PresenceMapper(tables: tables),
            contacts: [.oma: SIPAddress(uri: oma), .enterprise: SIPAddress(uri: enterprise)],
            ids: IdentifierSource(token: { "t\($0)" }, jitter: { 0.5 }))
    }
}
