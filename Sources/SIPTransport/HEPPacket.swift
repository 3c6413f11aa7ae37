/// One HEP v3 packet (the Homer Encapsulation Protocol, "HEP3 Network Protocol Specification",
/// sipcapture.org), as Homer, sngrep and Kamailio's `sipcapture` module read it: a copy of one SIP
/// message with its addresses, transport, capture time, capture agent and correlation id.
///
/// ```
/// header:  "HEP3" (4 bytes) | total length, header included (uint16, network order)
/// chunk:   vendor id (uint16) | type id (uint16) | length, chunk header included (uint16) | data
/// ```
///
/// Chunks written (vendor 0, the generic chunks of the specification), in the order of Kamailio's
/// own HEP v3 sender (`siptrace_hep.c`, `trace_send_hep3_duplicate`):
///
/// | type | data |
/// |---|---|
/// | 0x0001 | IP protocol family, uint8: 2 (AF_INET) or 10 (AF_INET6) |
/// | 0x0002 | IP protocol id, uint8: 17 (UDP) or 6 (TCP, also for TLS) |
/// | 0x0003 / 0x0004 | IPv4 source / destination address (4 bytes) |
/// | 0x0005 / 0x0006 | IPv6 source / destination address (16 bytes) |
/// | 0x0007 / 0x0008 | source / destination port, uint16 |
/// | 0x0009 / 0x000a | timestamp: seconds / microseconds since the Unix epoch, uint32 |
/// | 0x000b | protocol type, uint8: 1 (SIP) |
/// | 0x000c | capture agent id, uint32 |
/// | 0x0011 | correlation id (the Call-ID), omitted when empty |
/// | 0x000f | payload: the SIP message as on the wire, after TLS decryption |
///
/// All integers are in network byte order. TLS: the specification's chunk 0x0002 is the IP
/// protocol, and SIP over TLS runs over TCP; Kamailio's `sipcapture` recognises only 6 and 17
/// there (`sipcapture.c`, `hep_msg_received`: anything else leaves the transport unset), so TLS
/// goes out as 6. The correlation chunk comes before the payload: `sipcapture` reads it as a C
/// string, which the next chunk's vendor id (0x0000) terminates.
public struct HEPPacket: Sendable, Hashable {
    /// An IP address in network byte order: 4 bytes (IPv4) or 16 (IPv6).
    public struct Address: Sendable, Hashable {
        public var bytes: [UInt8]

        public init?(bytes: [UInt8]) {
            guard bytes.count == 4 || bytes.count == 16 else { return nil }
            self.bytes = bytes
        }

        public var isIPv6: Bool { bytes.count == 16 }

        /// The IPv4-mapped IPv6 form (RFC 4291 §2.5.5.2) of an IPv4 address; an IPv6 address as is.
        public var asIPv6: Address {
            guard !isIPv6 else { return self }
            return Address(mapping: bytes)
        }

        private init(mapping v4: [UInt8]) {
            bytes = [UInt8](repeating: 0, count: 10) + [0xff, 0xff] + v4
        }
    }

    public var transport: SIPTransportKind
    public var source: Address
    public var sourcePort: UInt16
    public var destination: Address
    public var destinationPort: UInt16
    /// Capture time: whole seconds and microseconds since the Unix epoch.
    public var seconds: UInt32
    public var microseconds: UInt32
    /// The capture agent id (chunk 0x000c), which tells a collector's nodes apart.
    public var captureID: UInt32
    /// The Call-ID, for the collector's correlation (chunk 0x0011); empty: no chunk.
    public var correlationID: [UInt8]
    /// The SIP message bytes.
    public var payload: [UInt8]

    public init(
        transport: SIPTransportKind, source: Address, sourcePort: UInt16, destination: Address, destinationPort: UInt16,
        seconds: UInt32, microseconds: UInt32, captureID: UInt32, correlationID: [UInt8], payload: [UInt8]
    ) {
        self.transport = transport
        self.source = source
        self.sourcePort = sourcePort
        self.destination = destination
        self.destinationPort = destinationPort
        self.seconds = seconds
        self.microseconds = microseconds
        self.captureID = captureID
        self.correlationID = correlationID
        self.payload = payload
    }

    /// The generic chunk types (vendor 0) of the specification that this encoder writes.
    public enum ChunkType: UInt16, Sendable {
        case ipFamily = 0x0001
        case ipProtocol = 0x0002
        case ipv4Source = 0x0003
        case ipv4Destination = 0x0004
        case ipv6Source = 0x0005
        case ipv6Destination = 0x0006
        case sourcePort = 0x0007
        case destinationPort = 0x0008
        case timestampSeconds = 0x0009
        case timestampMicroseconds = 0x000a
        case protocolType = 0x000b
        case captureAgentID = 0x000c
        case payload = 0x000f
        case correlationID = 0x0011
    }

    static let headerSize = 6
    static let chunkHeaderSize = 6
    /// HEP protocol type 1: SIP.
    static let protocolTypeSIP: UInt8 = 1

    /// The encoded length; above 65,535 the packet cannot be encoded (the total length field is
    /// 16 bits), and above 65,507 it does not fit one UDP datagram over IPv4.
    public var encodedCount: Int {
        let addressChunks =
            source.isIPv6 || destination.isIPv6 ? 2 * (Self.chunkHeaderSize + 16) : 2 * (Self.chunkHeaderSize + 4)
        let fixed =
            Self.headerSize + 2 * (Self.chunkHeaderSize + 1) + addressChunks + 2 * (Self.chunkHeaderSize + 2)
            + 2 * (Self.chunkHeaderSize + 4) + (Self.chunkHeaderSize + 1) + (Self.chunkHeaderSize + 4)
        let correlation = correlationID.isEmpty ? 0 : Self.chunkHeaderSize + correlationID.count
        return fixed + correlation + Self.chunkHeaderSize + payload.count
    }

    /// The packet's bytes; nil when it is longer than 65,535 bytes (HEP v3 cannot say so). When
    /// one address is IPv4 and the other IPv6, both go out as IPv6 (the IPv4 one mapped).
    public func encoded() -> [UInt8]? {
        let total = encodedCount
        guard total <= Int(UInt16.max) else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(total)
        out.append(contentsOf: [0x48, 0x45, 0x50, 0x33])  // "HEP3"
        Self.append(UInt16(total), to: &out)
        let v6 = source.isIPv6 || destination.isIPv6
        Self.chunk(.ipFamily, UInt8(v6 ? 10 : 2), to: &out)
        Self.chunk(.ipProtocol, UInt8(transport == .udp ? 17 : 6), to: &out)
        if v6 {
            Self.chunk(.ipv6Source, source.asIPv6.bytes, to: &out)
            Self.chunk(.ipv6Destination, destination.asIPv6.bytes, to: &out)
        } else {
            Self.chunk(.ipv4Source, source.bytes, to: &out)
            Self.chunk(.ipv4Destination, destination.bytes, to: &out)
        }
        Self.chunk(.sourcePort, sourcePort, to: &out)
        Self.chunk(.destinationPort, destinationPort, to: &out)
        Self.chunk(.timestampSeconds, seconds, to: &out)
        Self.chunk(.timestampMicroseconds, microseconds, to: &out)
        Self.chunk(.protocolType, Self.protocolTypeSIP, to: &out)
        Self.chunk(.captureAgentID, captureID, to: &out)
        if !correlationID.isEmpty { Self.chunk(.correlationID, correlationID, to: &out) }
        Self.chunk(.payload, payload, to: &out)
        return out
    }

    private static func chunk(_ type: ChunkType, _ data: [UInt8], to out: inout [UInt8]) {
        chunkHeader(type, data.count, to: &out)
        out.append(contentsOf: data)
    }

    /// A chunk holding one integer, in network byte order.
    private static func chunk<T: FixedWidthInteger>(_ type: ChunkType, _ value: T, to out: inout [UInt8]) {
        let size = T.bitWidth / 8
        chunkHeader(type, size, to: &out)
        for shift in stride(from: (size - 1) * 8, through: 0, by: -8) {
            out.append(UInt8(truncatingIfNeeded: value >> shift))
        }
    }

    private static func chunkHeader(_ type: ChunkType, _ dataCount: Int, to out: inout [UInt8]) {
        append(0, to: &out)  // vendor 0: generic chunk
        append(type.rawValue, to: &out)
        append(UInt16(chunkHeaderSize + dataCount), to: &out)
    }

    private static func append(_ value: UInt16, to out: inout [UInt8]) {
        out.append(UInt8(value >> 8))
        out.append(UInt8(value & 0xff))
    }
}

extension HEPPacket {
    /// The Call-ID of a SIP message's bytes (RFC 3261 §20.8, compact form `i`, §7.3.3), trimmed;
    /// empty when its header section has none. Reads only up to the blank line; folded values
    /// (§7.3.1) are not unfolded (a Call-ID is one word).
    ///
    /// ```
    /// Call-ID  =  ( "Call-ID" / "i" ) HCOLON callid
    /// ```
    public static func callID(in message: [UInt8]) -> [UInt8] {
        let cr: UInt8 = 13
        let lf: UInt8 = 10
        let space: UInt8 = 32
        let tab: UInt8 = 9
        var lineStart = 0
        // Skip the start line.
        while lineStart < message.count, message[lineStart] != lf { lineStart += 1 }
        lineStart += 1
        while lineStart < message.count {
            var lineEnd = lineStart
            while lineEnd < message.count, message[lineEnd] != lf { lineEnd += 1 }
            var end = lineEnd
            if end > lineStart, message[end - 1] == cr { end -= 1 }
            if end == lineStart { return [] }  // the blank line: end of the header section
            if let name = headerName(message, lineStart, end), let colonAt = name.colon,
                name.text == .callID || name.text == .compact
            {
                var valueStart = colonAt + 1
                while valueStart < end, message[valueStart] == space || message[valueStart] == tab { valueStart += 1 }
                var valueEnd = end
                while valueEnd > valueStart, message[valueEnd - 1] == space || message[valueEnd - 1] == tab {
                    valueEnd -= 1
                }
                return Array(message[valueStart..<valueEnd])
            }
            lineStart = lineEnd + 1
        }
        return []
    }

    private enum HeaderNameMatch { case callID, compact, other }

    /// `call-id` in lower case (ASCII letters compare with bit 0x20 set; '-' has it already).
    private static let callIDName: [UInt8] = Array("call-id".utf8)

    /// Whether the line at `start..<end` is a Call-ID header, and where its colon is.
    private static func headerName(_ bytes: [UInt8], _ start: Int, _ end: Int) -> (text: HeaderNameMatch, colon: Int?)?
    {
        var nameEnd = start
        while nameEnd < end, bytes[nameEnd] != 58, bytes[nameEnd] != 32, bytes[nameEnd] != 9 { nameEnd += 1 }
        var colon = nameEnd
        while colon < end, bytes[colon] == 32 || bytes[colon] == 9 { colon += 1 }
        guard colon < end, bytes[colon] == 58 else { return nil }
        let length = nameEnd - start
        if length == 1, bytes[start] | 0x20 == UInt8(ascii: "i") { return (.compact, colon) }
        guard length == callIDName.count else { return (.other, colon) }
        for i in 0..<length where bytes[start + i] | 0x20 != callIDName[i] { return (.other, colon) }
        return (.callID, colon)
    }
}
