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
        /// gateway from reaching its peers. Default: 4,096.
        public var maxInboundConnections: Int
        /// Most inbound TCP and TLS connections from one IP address, so that one address cannot
        /// take them all; further ones are closed at once (`address-limit`). Default: 64.
        public var maxInboundConnectionsPerAddress: Int
        /// Most TCP and TLS connections this transport opens (or is opening) at once; further
        /// sends that need a new connection fail with ``SIPTransportError/Code/connectFailed``
        /// (`outbound-limit`). Default: 1,024.
        public var maxOutboundConnections: Int
        /// A TLS connection whose handshake has not completed this long after it was accepted
        /// (or, for one this transport opens, after the connect began) is closed. Default: 10
        /// seconds.
        public var tlsHandshakeTimeout: TimeAmount
        /// A stream message must arrive whole (start line, header section and the body its
        /// Content-Length announces) within this long of its first byte, else the connection is
        /// closed: a peer dripping a byte now and then resets ``idleTimeout`` forever. CRLF
        /// keep-alives between messages (RFC 5626 §3.5.1) start no clock. Default: 10 seconds.
        public var headerTimeout: TimeAmount

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
            headerTimeout: TimeAmount = .seconds(10)
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

        public init(_ kind: SIPTransportKind, host: String, port: UInt16? = nil,
                    advertisedHost: String? = nil, advertisedPort: UInt16? = nil) {
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
        /// Whether outgoing connections verify the server's certificate against
        /// ``SIPTarget/serverName`` (or the IP address when no name is given). Turning it off
        /// still verifies the chain. Default: true.
        public var verifyServerName: Bool

        public init(certificateChain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey,
                    trustRoots: NIOSSLTrustRoots = .default, requireClientCertificate: Bool = true,
                    verifyServerName: Bool = true) {
            self.certificateChain = certificateChain
            self.privateKey = privateKey
            self.trustRoots = trustRoots
            self.requireClientCertificate = requireClientCertificate
            self.verifyServerName = verifyServerName
        }

        /// PEM text for the chain and the key (the trust roots given separately as PEM too).
        public init(certificateChainPEM: String, privateKeyPEM: String, trustRootsPEM: String? = nil,
                    requireClientCertificate: Bool = true, verifyServerName: Bool = true) throws {
            let chain = try NIOSSLCertificate.fromPEMBytes(Array(certificateChainPEM.utf8))
            let key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
            let roots: NIOSSLTrustRoots
            if let trustRootsPEM {
                roots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(trustRootsPEM.utf8)))
            } else {
                roots = .default
            }
            self.init(certificateChain: chain, privateKey: key, trustRoots: roots,
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
            c.certificateVerification = verifyServerName ? .fullVerification : .noHostnameVerification
            return c
        }
    }
}
