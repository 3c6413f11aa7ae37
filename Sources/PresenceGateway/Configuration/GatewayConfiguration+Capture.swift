public import SIPTransport

extension GatewayConfiguration {
    /// HEP v3 capture (YAML `capture:`): every SIP message sent and received on either side,
    /// after TLS decryption, is copied to a HEP collector (Homer, sngrep, Kamailio's
    /// `sipcapture`) over UDP (``SIPTransport/HEPCapture``, ``SIPTransport/HEPPacket``).
    ///
    /// ```yaml
    /// capture:
    ///   hep: "udp:127.0.0.1:9060"   # udp:IPV4:PORT or udp:[IPV6]:PORT (IP literals only)
    ///   id: 2001                    # capture agent id, 0 to 4294967295
    ///   queue: 10000                # messages waiting at most (default 10,000); beyond: dropped
    /// ```
    public struct Capture: Sendable, Hashable {
        /// The collector's IP address (IPv6 without brackets).
        public var host: String
        public var port: UInt16
        public var captureID: UInt32
        public var queueCapacity: Int

        public init(host: String, port: UInt16, captureID: UInt32, queueCapacity: Int = 10_000) {
            self.host = host
            self.port = port
            self.captureID = captureID
            self.queueCapacity = queueCapacity
        }

        /// The sender's settings.
        public var hepConfiguration: HEPCapture.Configuration {
            HEPCapture.Configuration(host: host, port: port, captureID: captureID, queueCapacity: queueCapacity)
        }
    }

    /// Reads `capture:`; absent: nil (nothing captured).
    static func capture(_ node: ConfigurationNode?) throws(ConfigurationError) -> Capture? {
        guard let node else { return nil }
        let m = try node.mapping(known: ["hep", "id", "queue"])
        guard let hep = m["hep"], let id = m["id"] else { throw node.error("needs hep (\"udp:HOST:PORT\") and id") }
        let (host, port) = try hepAddress(hep)
        var capture = Capture(host: host, port: port, captureID: try id.integer(in: 0...UInt32.max))
        if let v = m["queue"] { capture.queueCapacity = try v.integer(in: 1...1_000_000) }
        return capture
    }

    /// `udp:HOST:PORT`, HOST an IPv4 literal or a bracketed IPv6 literal (no names: nothing is
    /// resolved at run time, as for listeners).
    private static func hepAddress(_ node: ConfigurationNode) throws(ConfigurationError) -> (String, UInt16) {
        let text = try node.string()
        let expected = "expected \"udp:HOST:PORT\" with HOST an IP address (IPv6 in brackets), got '\(text)'"
        guard text.lowercased().hasPrefix("udp:") else {
            let other = ["tcp:", "tls:", "sctp:"].contains { text.lowercased().hasPrefix($0) }
            throw node.error(other ? "HEP capture goes over UDP only: \(expected)" : expected)
        }
        let rest = text.dropFirst(4)
        let host: Substring
        let portText: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]"), rest[rest.index(after: close)...].hasPrefix(":") else {
                throw node.error(expected)
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            portText = rest[rest.index(close, offsetBy: 2)...]
            guard host.contains(":"), host.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw node.error(expected)
            }
        } else {
            guard let colon = rest.lastIndex(of: ":") else { throw node.error(expected) }
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
            let parts = host.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 4, parts.allSatisfy({ UInt8($0) != nil }) else { throw node.error(expected) }
        }
        guard let port = UInt16(portText), port > 0 else {
            throw node.error("'\(portText)' is not a port from 1 to 65535: \(expected)")
        }
        return (String(host), port)
    }
}
