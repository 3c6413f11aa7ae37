/// One Via value (RFC 3261 §20.42; rport: RFC 3581 §3).
///
/// ```
/// Via               =  ( "Via" / "v" ) HCOLON via-parm *(COMMA via-parm)
/// via-parm          =  sent-protocol LWS sent-by *( SEMI via-params )
/// via-params        =  via-ttl / via-maddr / via-received / via-branch / via-extension
/// sent-protocol     =  protocol-name SLASH protocol-version SLASH transport
/// transport         =  "UDP" / "TCP" / "TLS" / "SCTP" / other-transport
/// sent-by           =  host [ COLON port ]
/// response-port     =  "rport" [EQUAL 1*DIGIT]                      ; RFC 3581
/// ```
///
/// All parameters are kept generically, in order; the properties below read them.
public struct SIPVia: Sendable, Hashable, CustomStringConvertible {
    /// `SIP` normally (compared case-insensitively).
    public var protocolName: String
    /// `2.0` normally.
    public var protocolVersion: String
    /// UDP, TCP, TLS, SCTP, WS, WSS or any other token, as written.
    public var transport: String
    public var host: String
    public var port: UInt16?
    public var parameters: SIPParameters

    public init(
        transport: String, host: String, port: UInt16? = nil, parameters: SIPParameters = [],
        protocolName: String = "SIP", protocolVersion: String = "2.0"
    ) {
        self.protocolName = protocolName
        self.protocolVersion = protocolVersion
        self.transport = transport
        self.host = host
        self.port = port
        self.parameters = parameters
    }

    /// The rport parameter (RFC 3581): requested (no value) or filled in by the server.
    public enum ResponsePort: Sendable, Hashable {
        case requested
        case port(UInt16)
    }

    /// RFC 3261 §8.1.1.7: the transaction identifier; starts with `z9hG4bK` when RFC 3261 compliant.
    public var branch: String? { parameters.value("branch") }
    /// Whether the branch carries the RFC 3261 magic cookie (RFC 4475 §3.2.1: a bare
    /// `z9hG4bK` does, but identifies nothing).
    public var hasMagicCookie: Bool { branch?.hasPrefix("z9hG4bK") ?? false }
    public var received: String? { parameters.value("received") }
    public var maddr: String? { parameters.value("maddr") }
    /// `ttl = 1*3DIGIT ; 0 to 255`; nil when absent or not a number in range.
    public var ttl: UInt8? { parameters.value("ttl").flatMap { UInt8($0) } }
    /// nil when absent; `.requested` for `;rport`; `.port` for `;rport=5060`.
    public var rport: ResponsePort? {
        guard let p = parameters["rport"] else { return nil }
        guard let v = p else { return .requested }
        return UInt16(v).map(ResponsePort.port)
    }
    /// Microsoft's `ms-received-port` ([MS-SIPRE] 2.2.x: source port seen by the server).
    public var msReceivedPort: UInt16? { parameters.value("ms-received-port").flatMap { UInt16($0) } }
    /// Microsoft's `ms-received-cid` (connection identifier, hex).
    public var msReceivedCID: String? { parameters.value("ms-received-cid") }

    /// Parses one Via value occupying the whole text.
    public init(_ text: String) throws(SIPParseError) {
        let bytes = Array(text.utf8)
        var s = SIPScanner(bytes[...], header: "Via", code: .invalidVia)
        self = try SIPVia.parse(&s)
        try s.expectEnd("end of the Via value")
    }

    public var description: String {
        var out: [UInt8] = []
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func write(to out: inout [UInt8]) {
        out.append(contentsOf: "\(protocolName)/\(protocolVersion)/\(transport) ".utf8)
        out.append(contentsOf: host.utf8)
        if let port { out.append(contentsOf: ":\(port)".utf8) }
        parameters.write(to: &out)
    }

    static func parse(_ s: inout SIPScanner) throws(SIPParseError) -> SIPVia {
        s.skipLWS()
        let name = try s.token("protocol-name (SIP) of sent-protocol")
        guard s.consumeSeparator(0x2F) else { throw s.error("'/' after protocol-name") }
        let version = try s.token("protocol-version (2.0) after '/'")
        guard s.consumeSeparator(0x2F) else { throw s.error("'/' after protocol-version") }
        let transport = try s.token("transport (UDP, TCP, TLS, SCTP or token) after '/'")
        let beforeLWS = s.index
        s.skipLWS()
        guard s.index > beforeLWS else { throw s.error("LWS between sent-protocol and sent-by") }
        let hostStart = s.index
        if s.consume(0x5B) {
            _ = s.run { SIPByte.isHex($0) || $0 == 0x3A || $0 == 0x2E }
            guard s.consume(0x5D) else { throw s.error("']' closing the IPv6 reference") }
        } else {
            _ = s.run { SIPByte.isAlphanum($0) || $0 == 0x2D || $0 == 0x2E || $0 == 0x5F }
        }
        guard s.index > hostStart else { throw s.error("sent-by host") }
        var via =
            s.build
            ? SIPVia(
                transport: SIPByte.string(transport), host: SIPByte.string(s.bytes[hostStart..<s.index]),
                protocolName: SIPByte.string(name), protocolVersion: SIPByte.string(version))
            : SIPVia(transport: "", host: "")
        if s.consumeSeparator(0x3A) {
            let digits = s.run(while: SIPByte.isDigit)
            guard !digits.isEmpty else { throw s.error("port after ':' in sent-by") }
            via.port = UInt16(try SIPByte.parseNumber(digits, max: 65535, what: "Via port", header: "Via"))
        }
        try s.parameters(into: &via.parameters)
        return via
    }

    static func parseList(_ s: inout SIPScanner, into out: inout [SIPVia]) throws(SIPParseError) {
        repeat {
            out.append(try parse(&s))
        } while s.consumeSeparator(0x2C)
        try s.expectEnd("',' or ';' or end of the Via value")
    }
}
