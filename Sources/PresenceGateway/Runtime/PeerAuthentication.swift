import Metrics
import SIPStack

/// What the runtime keeps to authenticate toward its peers and assert identities to them
/// (docs/security.md, "Credentials"; RFC 3325 §9.1): the configured peers' Digest credentials
/// and last challenges, whether any OMA peer is `trusted`, and the per-peer failure counters. A
/// value inside the runtime, on its loop.
struct PeerAuthentication {
    /// Each peer's credentials (by its position in ``GatewayConfiguration/peers``) and its
    /// last challenges.
    var digest: SIPDigestClient
    /// Whether a configured OMA peer is `trusted`: SUBSCRIBEs and PUBLISHes toward it carry
    /// `P-Asserted-Identity`.
    let trustedOMAPeers: Bool
    /// `gateway_authentication_failures_total{peer}`, present at zero for every peer with
    /// credentials: a challenge not answered, or credentials refused.
    let failures: [String: Counter]
    private let factory: any MetricsFactory

    /// For `configuration`'s peers; the counters of peers already counted are `kept`.
    init(_ configuration: GatewayConfiguration, factory: any MetricsFactory, kept: [String: Counter] = [:]) {
        var credentials: [Int: SIPDigestCredentials] = [:]
        var counters: [String: Counter] = [:]
        for (index, peer) in configuration.peers.enumerated() {
            guard let given = peer.credentials else { continue }
            credentials[index] = given
            counters[peer.name] =
                kept[peer.name]
                ?? Counter(
                    label: "gateway_authentication_failures_total", dimensions: [("peer", peer.name)], factory: factory)
        }
        self.digest = SIPDigestClient(credentials: credentials)
        self.trustedOMAPeers = configuration.peers.contains { $0.side == .oma && $0.trusted }
        self.failures = counters
        self.factory = factory
    }

    /// The same for a reloaded configuration: the last challenges are dropped (a peer's
    /// position or credentials may have changed), the counters kept.
    func reconfigured(_ configuration: GatewayConfiguration) -> PeerAuthentication {
        PeerAuthentication(configuration, factory: factory, kept: failures)
    }

    /// Whether any configured peer has credentials or is a trusted OMA peer: when none is, the
    /// runtime looks nothing up for a request.
    var isActive: Bool { !digest.isEmpty || trustedOMAPeers }
}
