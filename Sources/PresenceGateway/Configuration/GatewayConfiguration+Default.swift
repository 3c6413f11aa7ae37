extension GatewayConfiguration {
    /// The configuration `presence-gateway` runs with when no `--config` is given: everything on
    /// loopback, a demo routing table matching the README walkthrough — the OMA domain
    /// `oma.example` served by Kamailio on 127.0.0.1:5070 (../shared/peers/kamailio-presence.cfg),
    /// the enterprise domain `contoso.com` behind an edge on 127.0.0.1:5062 (sipp in the tests).
    public static let defaultYAML = """
        # PresenceGateway demo configuration: loopback only.
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1, port: 5060 }
          - { side: oma, transport: tcp, address: 127.0.0.1, port: 5060 }
          - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 5061 }
        enterprise:
          domains: [contoso.com]
          next-hop: "sip:127.0.0.1:5062;transport=tcp"
        oma:
          domains: [oma.example]
          next-hop: "sip:127.0.0.1:5070;transport=udp"
        partners:
          blocked: [spam.example]
        peers:
          - { name: enterprise-edge, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }
          - { name: kamailio, address: 127.0.0.1, port: 5070, side: oma, network: federated, rate-limit: 5000 }
        linked-identities:
          - { oma: "sip:alice@oma.example", enterprise: "sip:alice@contoso.com", publish-to-enterprise: false, publish-to-oma: true }
        presentities:
          default:
            defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
            containers:
              100: { members: [federated], categories: [state, contactCard] }
              200: { members: [sameEnterprise], categories: [state, note, contactCard, calendarData, services] }
        subscriptions:
          piggyback-wait-ms: 500
          default-expires: 3600
        admin: { address: 127.0.0.1, port: 9460 }
        # Every dialog survives a restart: kept in this SQLite file (created on first start).
        state: { store: sqlite, path: state/presence-gateway.db }
        shutdown: keep
        """
}
