extension DNSMessage {
    /// Bounds on what a parsed message may contain.
    public struct ParseLimits: Sendable, Hashable {
        /// The largest message accepted, in octets. Default 65 535 (the most a UDP datagram or
        /// a TCP length prefix can carry, RFC 1035 §4.2.2).
        public var maxMessageSize: Int
        /// The most questions plus records over all sections. Default 1 024.
        public var maxRecords: Int
        /// The most compression pointers followed in one name. Default 64 (each pointer must go
        /// strictly backwards, so loops are impossible anyway; this bounds the work).
        public var maxPointersPerName: Int

        public init(maxMessageSize: Int = 65_535, maxRecords: Int = 1_024, maxPointersPerName: Int = 64) {
            self.maxMessageSize = maxMessageSize
            self.maxRecords = maxRecords
            self.maxPointersPerName = maxPointersPerName
        }
    }

    /// Parses a message in RFC 1035 §4.1 wire form. Names may use compression (§4.1.4) anywhere,
    /// including inside RDATA. Never traps: hostile input fails with a ``SIPTransportError``
    /// whose code says why (`dns-truncated`, `dns-bad-pointer`, `dns-bad-label`,
    /// `dns-name-too-long`, `dns-count-exceeds-message`, `dns-bad-rdata`, `dns-limit-exceeded`)
    /// and whose detail gives the byte offset. Octets after the last record are ignored.
    public init(parsing bytes: some Collection<UInt8>, limits: ParseLimits = ParseLimits()) throws(SIPTransportError) {
        var reader = DNSWireReader(bytes: Array(bytes), limits: limits)
        self = try reader.readMessage()
    }
}

/// Reads RFC 1035 wire form from a byte array, keeping a cursor.
struct DNSWireReader {
    let bytes: [UInt8]
    let limits: DNSMessage.ParseLimits
    var offset = 0

    /// A question is at least 5 octets (root name, QTYPE, QCLASS); a record at least 11 (root
    /// name, TYPE, CLASS, TTL, RDLENGTH).
    static let minQuestionSize = 5
    static let minRecordSize = 11
    static let headerSize = 12

    init(bytes: [UInt8], limits: DNSMessage.ParseLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    func fail(_ code: SIPTransportError.Code, _ what: String, at position: Int? = nil) -> SIPTransportError {
        SIPTransportError(code, "at byte \(position ?? offset): \(what)")
    }

    mutating func readMessage() throws(SIPTransportError) -> DNSMessage {
        guard bytes.count <= limits.maxMessageSize else {
            throw fail(
                .dnsLimitExceeded, "message of \(bytes.count) octets exceeds the limit of \(limits.maxMessageSize)",
                at: 0)
        }
        guard bytes.count >= Self.headerSize else {
            throw fail(.dnsTruncated, "expected a 12-octet header, got \(bytes.count) octets", at: 0)
        }
        let id = try readUInt16("ID")
        let flags = DNSMessage.Flags(rawValue: try readUInt16("flags"))
        let qdCount = Int(try readUInt16("QDCOUNT"))
        let anCount = Int(try readUInt16("ANCOUNT"))
        let nsCount = Int(try readUInt16("NSCOUNT"))
        let arCount = Int(try readUInt16("ARCOUNT"))
        let recordCount = anCount + nsCount + arCount
        let needed = qdCount * Self.minQuestionSize + recordCount * Self.minRecordSize
        guard needed <= bytes.count - Self.headerSize else {
            throw fail(
                .dnsCountExceedsMessage,
                "counts \(qdCount)/\(anCount)/\(nsCount)/\(arCount) need at least \(needed) octets after the header, message has \(bytes.count - Self.headerSize)",
                at: 4)
        }
        guard qdCount + recordCount <= limits.maxRecords else {
            throw fail(
                .dnsLimitExceeded, "\(qdCount + recordCount) entries exceed the limit of \(limits.maxRecords)", at: 4)
        }
        var questions: [DNSQuestion] = []
        questions.reserveCapacity(qdCount)
        for _ in 0..<qdCount {
            let name = try readName()
            let type = DNSRecordType(rawValue: try readUInt16("QTYPE"))
            let dnsClass = DNSClass(rawValue: try readUInt16("QCLASS"))
            questions.append(DNSQuestion(name: name, type: type, dnsClass: dnsClass))
        }
        var sections: [[DNSResourceRecord]] = []
        for count in [anCount, nsCount, arCount] {
            var records: [DNSResourceRecord] = []
            records.reserveCapacity(count)
            for _ in 0..<count { records.append(try readRecord()) }
            sections.append(records)
        }
        return DNSMessage(
            id: id, flags: flags, questions: questions,
            answers: sections[0], authorities: sections[1], additionals: sections[2])
    }

    mutating func readUInt8(_ what: String) throws(SIPTransportError) -> UInt8 {
        guard offset < bytes.count else { throw fail(.dnsTruncated, "expected \(what), message ended") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func readUInt16(_ what: String) throws(SIPTransportError) -> UInt16 {
        guard offset + 2 <= bytes.count else { throw fail(.dnsTruncated, "expected 2-octet \(what), message ended") }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    mutating func readUInt32(_ what: String) throws(SIPTransportError) -> UInt32 {
        guard offset + 4 <= bytes.count else { throw fail(.dnsTruncated, "expected 4-octet \(what), message ended") }
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8
            | UInt32(bytes[offset + 3])
    }

    mutating func readBytes(_ count: Int, _ what: String) throws(SIPTransportError) -> [UInt8] {
        guard count >= 0, offset + count <= bytes.count else {
            throw fail(.dnsTruncated, "expected \(count) octets of \(what), message ended")
        }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// `<character-string>`: a length octet followed by that many octets (RFC 1035 §3.3).
    mutating func readCharacterString(_ what: String) throws(SIPTransportError) -> [UInt8] {
        let length = Int(try readUInt8("length of \(what)"))
        return try readBytes(length, what)
    }

    /// Reads a possibly compressed name (RFC 1035 §4.1.4).
    ///
    /// ```
    ///     +--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+
    ///     | 1  1|                OFFSET                   |
    ///     +--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+
    /// ```
    ///
    /// A pointer must point before the start of the label run that contains it (a *prior*
    /// occurrence) and past the header; that rules out forward pointers, self pointers and
    /// loops. Label types `01` and `10` are rejected (RFC 6891 §5 retired extended labels).
    mutating func readName() throws(SIPTransportError) -> DNSName {
        var labels: [[UInt8]] = []
        var position = offset
        var runStart = offset
        var jumped = false
        var pointers = 0
        var wireLength = 1
        while true {
            guard position < bytes.count else {
                throw fail(.dnsTruncated, "expected a label length octet, message ended", at: position)
            }
            let length = bytes[position]
            switch length & 0xC0 {
            case 0x00:
                if length == 0 {
                    position += 1
                    if !jumped { offset = position }
                    return DNSName(uncheckedLabels: labels)
                }
                let count = Int(length)
                guard position + 1 + count <= bytes.count else {
                    throw fail(.dnsTruncated, "expected a label of \(count) octets, message ended", at: position)
                }
                wireLength += 1 + count
                guard wireLength <= DNSName.maxWireLength else {
                    throw fail(.dnsNameTooLong, "name longer than 255 octets", at: position)
                }
                labels.append(Array(bytes[(position + 1)..<(position + 1 + count)]))
                position += 1 + count
            case 0xC0:
                guard position + 1 < bytes.count else {
                    throw fail(
                        .dnsTruncated, "expected the second octet of a compression pointer, message ended", at: position
                    )
                }
                let target = Int(length & 0x3F) << 8 | Int(bytes[position + 1])
                guard target < runStart else {
                    throw fail(
                        .dnsBadPointer, "compression pointer to \(target) does not point to a prior name", at: position)
                }
                guard target >= Self.headerSize else {
                    throw fail(.dnsBadPointer, "compression pointer to \(target) points into the header", at: position)
                }
                pointers += 1
                guard pointers <= limits.maxPointersPerName else {
                    throw fail(
                        .dnsLimitExceeded, "more than \(limits.maxPointersPerName) compression pointers in a name",
                        at: position)
                }
                if !jumped { offset = position + 2 }
                jumped = true
                runStart = target
                position = target
            default:
                throw fail(
                    .dnsBadLabel,
                    "label length octet 0x\(String(length, radix: 16)) has reserved type bits (labels are at most 63 octets)",
                    at: position)
            }
        }
    }

    mutating func readRecord() throws(SIPTransportError) -> DNSResourceRecord {
        let name = try readName()
        let type = DNSRecordType(rawValue: try readUInt16("TYPE"))
        let dnsClass = DNSClass(rawValue: try readUInt16("CLASS"))
        let ttl = try readUInt32("TTL")
        let rdLength = Int(try readUInt16("RDLENGTH"))
        let start = offset
        let end = start + rdLength
        guard end <= bytes.count else {
            throw fail(
                .dnsTruncated, "RDATA of \(rdLength) octets runs past the end of the message (\(bytes.count))",
                at: start)
        }
        let data: DNSRecordData
        switch type {
        case .a:
            guard rdLength == 4 else {
                throw fail(.dnsBadRData, "A RDATA must be 4 octets, RDLENGTH is \(rdLength)", at: start)
            }
            data = .a(DNSIPv4Address(bytes[start], bytes[start + 1], bytes[start + 2], bytes[start + 3]))
            offset = end
        case .aaaa:
            guard rdLength == 16, let address = DNSIPv6Address(bytes: Array(bytes[start..<end])) else {
                throw fail(.dnsBadRData, "AAAA RDATA must be 16 octets, RDLENGTH is \(rdLength)", at: start)
            }
            data = .aaaa(address)
            offset = end
        case .cname:
            data = .cname(try readName())
        case .srv:
            let priority = try readUInt16("SRV priority")
            let weight = try readUInt16("SRV weight")
            let port = try readUInt16("SRV port")
            data = .srv(DNSSRVRecord(priority: priority, weight: weight, port: port, target: try readName()))
        case .naptr:
            let order = try readUInt16("NAPTR order")
            let preference = try readUInt16("NAPTR preference")
            let flags = try readCharacterString("NAPTR flags")
            let services = try readCharacterString("NAPTR services")
            let regexp = try readCharacterString("NAPTR regexp")
            let replacement = try readName()
            data = .naptr(
                DNSNAPTRRecord(
                    order: order, preference: preference, flags: flags, services: services,
                    regexp: regexp, replacement: replacement))
        case .soa:
            let primary = try readName()
            let mailbox = try readName()
            data = .soa(
                DNSSOARecord(
                    primaryServer: primary, responsibleMailbox: mailbox, serial: try readUInt32("SOA serial"),
                    refresh: try readUInt32("SOA refresh"), retry: try readUInt32("SOA retry"),
                    expire: try readUInt32("SOA expire"), minimum: try readUInt32("SOA minimum")))
        default:
            data = .other(type: type, rdata: Array(bytes[start..<end]))
            offset = end
        }
        guard offset == end else {
            throw fail(.dnsBadRData, "\(type) RDATA used \(offset - start) octets, RDLENGTH is \(rdLength)", at: start)
        }
        return DNSResourceRecord(name: name, dnsClass: dnsClass, ttl: ttl, data: data)
    }
}
