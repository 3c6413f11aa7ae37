/// Why a transport could not send or keep a connection (RFC 3261 §18.4: the transaction layer
/// treats these as a transport error, §8.1.3.1 → 503 to the TU).
public struct SIPTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// No listener or client for this transport kind.
        public static let unsupportedTransport = Code(rawValue: "unsupported-transport")
        /// Connecting to the target failed or was refused.
        public static let connectFailed = Code(rawValue: "connect-failed")
        /// The connection closed before or while writing.
        public static let connectionClosed = Code(rawValue: "connection-closed")
        /// A UDP message larger than the path allows (RFC 3261 §18.1.1 asks for TCP instead).
        public static let messageTooLarge = Code(rawValue: "message-too-large")
        /// The TLS handshake failed or the peer's certificate was not accepted.
        public static let tlsFailed = Code(rawValue: "tls-failed")
        /// The target host is not an IP literal (resolve it with ``SIPResolver`` first).
        public static let invalidTarget = Code(rawValue: "invalid-target")
        /// A request inside a dialog made over TLS would have left over TCP or UDP, and no TLS
        /// target could be derived (RFC 5630 §3.1.1; ``SIPTarget/keepingSecurity(of:portWasGiven:)``).
        public static let downgradeRefused = Code(rawValue: "downgrade-refused")
        /// The transport was shut down.
        public static let shutDown = Code(rawValue: "shut-down")
        /// The loopback network dropped the message (fault injection in tests).
        public static let dropped = Code(rawValue: "dropped")
    }

    public var code: Code
    public var detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code): \(detail)" }
}
