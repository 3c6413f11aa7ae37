public import NIOCore
public import NIOSSL
public import SIPMessages

extension SIPNetworkTransport {
    /// Everything ``SIPNetworkTransport`` needs to know, with documented defaults.
    public struct Configuration: Sendable {
        /// Sockets to listen on. UDP sends leave from the UDP listener of the target's address
        /// family (so that responses come back to the advertised port, RFC 3261 §18.1.1), so a
        /// transport that sends UDP needs a UDP listener. TCP and TLS clients need no listener.
        /// Default: none.
        public var listeners: [Listener]
        /// Certificates, key and trust for TLS; required for TLS listeners and TLS sends.
        /// Default: nil (no TLS).
        public var tls: TLS?
        /// A stream connection with no traffic in either direction for this long is closed.
        /// Default: 300 seconds (RFC 5626 §4.4.1 keep-alives come every 95 to 120 s, so a live
        /// flow outlasts it).
        public var idleTimeout: TimeAmount
        /// Most bytes received and not yet framed into a message on one connection
        /// (``SIPMessages/SIPStreamFramer/maxBufferedBytes``); a connection that exceeds it is
        /// closed. Default: 131,072 (twice the default maximum message size).
        public var maxBufferedBytesPerConnection: Int
        /// Limits for parsing every message. Default: ``SIPMessages/SIPParserLimits/default``.
        public var parserLimits: SIPParserLimits
        /// A UDP request larger than this many bytes fails with
        /// ``SIPTransportError/Code/messageTooLarge`` so that the layer above sends it over a
        /// congestion-controlled transport (RFC 3261 §18.1.1: "within 200 bytes of the path MTU,
        /// or if it is larger than 1300 bytes and the path MTU is unknown"). Default: 1300.
        /// Responses are not limited by it (only by the 65,507-byte datagram maximum).
        public var maxUDPRequestSize: Int
        /// Whether a received response whose top Via sent-by is not one of this transport's
        /// advertised or bound addresses is discarded (RFC 3261 §18.1.2: "If the value does not
        /// correspond, the message MUST be silently discarded"; a MAY for the check itself).
        /// Default: true.
        public var discardResponsesWithForeignSentBy: Bool
        /// How long a TCP or TLS connect may take. Default: 10 seconds.
        public var connectTimeout: TimeAmount
        /// Most inbound TCP and TLS connections open at once (all remote addresses together);
        /// further ones are closed as soon as they are accepted and counted as refused
        /// (`inbound-limit`). Connections this transport opens are counted apart
        /// (``maxOutboundConnections``), so a flood of inbound connections never stops the
        /// gateway from reaching its peers, and so are those accepted from ``peerHosts``, so
        /// that it never stops the peers from reaching the gateway. Default: 4,096.
        public var maxInboundConnections: Int
        /// Most inbound TCP and TLS connections from one IP address, so that one address cannot
        /// take them all; further ones are closed at once (`address-limit`). Default: 64.
        public var maxInboundConnectionsPerAddress: Int
        /// Most TCP and TLS connections this transport opens (or is opening) at once; further
        /// sends that need a new connection fail with ``SIPTransportError/Code/connectFailed``
        /// (`outbound-limit`). Connections to ``peerHosts`` are not counted. Default: 1,024.
        public var maxOutboundConnections: Int
        /// IP addresses of the peers this transport serves (configured peers, literal next
        /// hops). Connections from them are not counted against ``maxInboundConnections`` (only
        /// against ``maxInboundConnectionsPerAddress``), and connections to them not against
        /// ``maxOutboundConnections``: a peer can make the gateway open connections to addresses
        /// of its choosing (a response goes to the request's Via sent-by once the request's
        /// connection is gone, RFC 3261 §18.2.2), and those must not keep it from its own
        /// peers. Default: none.
        public var peerHosts: Set<String>
        /// A TLS connection whose handshake has not completed this long after it was accepted
        /// (or, for one this transport opens, after the connect began) is closed. Default: 10
        /// seconds.
        public var tlsHandshakeTimeout: TimeAmount
        /// A stream message must arrive whole (start line, header section and the body its
        /// Content-Length announces) within this long of its first byte, else the connection is
        /// closed: a peer dripping a byte now and then resets ``idleTimeout`` forever. CRLF
        /// keep-alives between messages (RFC 5626 §3.5.1) start no clock. Default: 10 seconds.
        public var headerTimeout: TimeAmount
        /// The names the certificate of the TLS server at an address must carry, for connections
        /// this transport opens (RFC 5922 §4). See ``KnownServer`` for how the names are chosen.
        /// Default: none.
        public var knownServers: [KnownServer]
        /// The shard this transport belongs to (``SIPShardedTransport``): the top bits of every
        /// ``SIPConnectionID`` it hands out, so that another shard's send on one of its
        /// connections finds it. Default: 0.
        public var shard: Int = 0
        /// Whether the listeners are bound with `SO_REUSEPORT`, so that each shard of a
        /// ``SIPShardedTransport`` binds the same addresses. Default: false.
        public var reusePort = false

        public init(
            listeners: [Listener] = [],
            tls: TLS? = nil,
            idleTimeout: TimeAmount = .seconds(300),
            maxBufferedBytesPerConnection: Int = 131_072,
            parserLimits: SIPParserLimits = .default,
            maxUDPRequestSize: Int = 1300,
            discardResponsesWithForeignSentBy: Bool = true,
            connectTimeout: TimeAmount = .seconds(10),
            maxInboundConnections: Int = 4096,
            maxInboundConnectionsPerAddress: Int = 64,
            maxOutboundConnections: Int = 1024,
            tlsHandshakeTimeout: TimeAmount = .seconds(10),
            headerTimeout: TimeAmount = .seconds(10),
            knownServers: [KnownServer] = [],
            peerHosts: Set<String> = []
        ) {
            self.listeners = listeners
            self.tls = tls
            self.idleTimeout = idleTimeout
            self.maxBufferedBytesPerConnection = maxBufferedBytesPerConnection
            self.parserLimits = parserLimits
            self.maxUDPRequestSize = maxUDPRequestSize
            self.discardResponsesWithForeignSentBy = discardResponsesWithForeignSentBy
            self.connectTimeout = connectTimeout
            self.maxInboundConnections = maxInboundConnections
            self.maxInboundConnectionsPerAddress = maxInboundConnectionsPerAddress
            self.maxOutboundConnections = maxOutboundConnections
            self.tlsHandshakeTimeout = tlsHandshakeTimeout
            self.headerTimeout = headerTimeout
            self.knownServers = knownServers
            self.peerHosts = peerHosts
        }

        /// The names the certificate of the TLS server at `target` must carry, for a connection
        /// this transport opens (RFC 5922 §4), most specific first:
        ///
        /// 1. the names of the ``KnownServer`` for the target's address and port, else for its
        ///    address with no port, else the first for its address (a peer's configured port may
        ///    be its source port, not its listener);
        /// 2. else ``SIPTarget/serverName`` when it is a name (the next hop's host, the domain
        ///    resolved by RFC 3263, or the SRV target of Microsoft federation);
        /// 3. else none: the connection is refused, never verified by IP address alone. An
        ///    operator who routes to an IP address must name the certificate it expects there.
        func expectedServerNames(for target: SIPTarget) -> [String] {
            let host = SIPHostAddress.canonicalIP(target.host) ?? target.host
            let atAddress = knownServers.filter {
                !$0.names.isEmpty && (SIPHostAddress.canonicalIP($0.host) ?? $0.host) == host
            }
            if let exact = atAddress.first(where: { $0.port == target.port }) { return exact.names }
            if let any = atAddress.first(where: { $0.port == nil }) ?? atAddress.first { return any.names }
            if SIPServerIdentity.isName(target.serverName), let name = target.serverName { return [name] }
            return []
        }
    }

    /// A TLS server the transport connects to by IP address, and the certificate names it must
    /// present there (a configured peer's `certificate-names`). Any one name matching is enough;
    /// wildcards follow RFC 6125 §6.4.3 (``SIPServerIdentity``).
    public struct KnownServer: Sendable, Hashable {
        /// An IP literal.
        public var host: String
        /// nil: any port of that address.
        public var port: UInt16?
        public var names: [String]

        public init(host: String, port: UInt16? = nil, names: [String]) {
            self.host = host
            self.port = port
            self.names = names
        }
    }

    /// One listening socket.
    public struct Listener: Sendable, Hashable {
        public var kind: SIPTransportKind
        /// An IP literal to bind (`0.0.0.0`, `::`, `127.0.0.1`, `::1`, ...).
        public var host: String
        /// The port to bind; 0 picks an ephemeral port (``SIPNetworkTransport/start()`` reports
        /// it). Default: 5060 for UDP and TCP, 5061 for TLS (RFC 3261 §19.1.2).
        public var port: UInt16
        /// The host to advertise in Via and Contact instead of the bound address (a public
        /// name or address in front of NAT). Default: nil (the bound address).
        public var advertisedHost: String?
        /// The port to advertise instead of the bound one. Default: nil (the bound port).
        public var advertisedPort: UInt16?

        public init(
            _ kind: SIPTransportKind, host: String, port: UInt16? = nil,
            advertisedHost: String? = nil, advertisedPort: UInt16? = nil
        ) {
            self.kind = kind
            self.host = host
            self.port = port ?? kind.defaultPort
            self.advertisedHost = advertisedHost
            self.advertisedPort = advertisedPort
        }
    }

    /// TLS material (RFC 3261 §26.2.1; RFC 5922 for the names). The same certificate serves as
    /// the server certificate on TLS listeners and as the client certificate on outgoing TLS
    /// connections (mutual TLS, as Microsoft federation uses).
    public struct TLS: Sendable {
        /// This side's certificate chain, leaf first.
        public var certificateChain: [NIOSSLCertificate]
        public var privateKey: NIOSSLPrivateKey
        /// The CAs peers' certificates must chain to. Default: the system's trust store.
        public var trustRoots: NIOSSLTrustRoots
        /// Whether TLS listeners require a client certificate that chains to ``trustRoots``
        /// (mutual TLS). When false a certificate is still verified if the client sends one.
        /// Default: true.
        public var requireClientCertificate: Bool
        /// Whether outgoing connections verify the server's certificate names
        /// (``Configuration/expectedServerNames(for:)``; an IP address alone is never accepted).
        /// Turning it off still verifies the chain. Default: true.
        public var verifyServerName: Bool

        public init(
            certificateChain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey,
            trustRoots: NIOSSLTrustRoots = .default, requireClientCertificate: Bool = true,
            verifyServerName: Bool = true
        ) {
            self.certificateChain = certificateChain
            self.privateKey = privateKey
            self.trustRoots = trustRoots
            self.requireClientCertificate = requireClientCertificate
            self.verifyServerName = verifyServerName
        }

        /// PEM text for the chain and the key (the trust roots given separately as PEM too).
        public init(
            certificateChainPEM: String, privateKeyPEM: String, trustRootsPEM: String? = nil,
            requireClientCertificate: Bool = true, verifyServerName: Bool = true
        ) throws {
            let chain = try NIOSSLCertificate.fromPEMBytes(Array(certificateChainPEM.utf8))
            let key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
            let roots: NIOSSLTrustRoots
            if let trustRootsPEM {
                roots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(trustRootsPEM.utf8)))
            } else {
                roots = .default
            }
            self.init(
                certificateChain: chain, privateKey: key, trustRoots: roots,
                requireClientCertificate: requireClientCertificate, verifyServerName: verifyServerName)
        }

        func serverConfiguration() -> TLSConfiguration {
            var c = TLSConfiguration.makeServerConfiguration(
                certificateChain: certificateChain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
            c.trustRoots = trustRoots
            c.certificateVerification = requireClientCertificate ? .noHostnameVerification : .optionalVerification
            return c
        }

        func clientConfiguration() -> TLSConfiguration {
            var c = TLSConfiguration.makeClientConfiguration()
            c.certificateChain = certificateChain.map { .certificate($0) }
            c.privateKey = .privateKey(privateKey)
            c.trustRoots = trustRoots
            // The chain is verified here; the name by ``SIPServerIdentity`` once the handshake is
            // done: NIOSSL's own check accepts any certificate whose subjectAltName carries the
            // connected IP address, whatever its names (RFC 5922 §4 asks for the domain).
            c.certificateVerification = .noHostnameVerification
            return c
        }
    }
}
