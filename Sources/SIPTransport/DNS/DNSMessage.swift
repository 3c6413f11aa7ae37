/// A DNS message (RFC 1035 §4.1): header, question, answer, authority and additional sections.
///
/// ```
///     +---------------------+
///     |        Header       |
///     +---------------------+
///     |       Question      | the question for the name server
///     +---------------------+
///     |        Answer       | RRs answering the question
///     +---------------------+
///     |      Authority      | RRs pointing toward an authority
///     +---------------------+
///     |      Additional     | RRs holding additional information
///     +---------------------+
/// ```
///
/// A value: ``DNSMessage/init(parsing:limits:)`` and ``DNSMessage/serialized()`` are the sans-IO
/// codec; ``DNSClient`` moves the bytes.
public struct DNSMessage: Sendable, Hashable {
    /// The header's second 16 bits (RFC 1035 §4.1.1).
    ///
    /// ```
    ///   0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15
    /// +--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+
    /// |QR|   Opcode  |AA|TC|RD|RA|   Z    |   RCODE   |
    /// +--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+--+
    /// ```
    public struct Flags: Sendable, Hashable {
        /// QR: a response (true) or a query.
        public var isResponse: Bool
        /// 0 is a standard query (QUERY).
        public var opcode: UInt8
        /// AA: the responding server is an authority for the name.
        public var isAuthoritative: Bool
        /// TC: the message was truncated to fit the transport (UDP: 512 octets, RFC 1035 §4.2.1).
        public var isTruncated: Bool
        /// RD: recursion desired.
        public var recursionDesired: Bool
        /// RA: recursion available.
        public var recursionAvailable: Bool
        /// Z: three reserved bits, kept as received.
        public var reserved: UInt8
        public var responseCode: DNSResponseCode

        public init(
            isResponse: Bool = false, opcode: UInt8 = 0, isAuthoritative: Bool = false, isTruncated: Bool = false,
            recursionDesired: Bool = true, recursionAvailable: Bool = false, reserved: UInt8 = 0,
            responseCode: DNSResponseCode = .noError
        ) {
            self.isResponse = isResponse
            self.opcode = opcode & 0x0F
            self.isAuthoritative = isAuthoritative
            self.isTruncated = isTruncated
            self.recursionDesired = recursionDesired
            self.recursionAvailable = recursionAvailable
            self.reserved = reserved & 0x07
            self.responseCode = DNSResponseCode(rawValue: responseCode.rawValue & 0x0F)
        }

        /// The 16 bits as on the wire.
        public var rawValue: UInt16 {
            var value: UInt16 = 0
            if isResponse { value |= 0x8000 }
            value |= UInt16(opcode & 0x0F) << 11
            if isAuthoritative { value |= 0x0400 }
            if isTruncated { value |= 0x0200 }
            if recursionDesired { value |= 0x0100 }
            if recursionAvailable { value |= 0x0080 }
            value |= UInt16(reserved & 0x07) << 4
            value |= UInt16(responseCode.rawValue & 0x0F)
            return value
        }

        public init(rawValue: UInt16) {
            self.init(
                isResponse: rawValue & 0x8000 != 0,
                opcode: UInt8((rawValue >> 11) & 0x0F),
                isAuthoritative: rawValue & 0x0400 != 0,
                isTruncated: rawValue & 0x0200 != 0,
                recursionDesired: rawValue & 0x0100 != 0,
                recursionAvailable: rawValue & 0x0080 != 0,
                reserved: UInt8((rawValue >> 4) & 0x07),
                responseCode: DNSResponseCode(rawValue: UInt8(rawValue & 0x0F))
            )
        }
    }

    /// ID: copied into the response so that the requester can match it (RFC 1035 §4.1.1).
    public var id: UInt16
    public var flags: Flags
    public var questions: [DNSQuestion]
    public var answers: [DNSResourceRecord]
    public var authorities: [DNSResourceRecord]
    public var additionals: [DNSResourceRecord]

    public init(
        id: UInt16, flags: Flags = Flags(), questions: [DNSQuestion] = [], answers: [DNSResourceRecord] = [],
        authorities: [DNSResourceRecord] = [], additionals: [DNSResourceRecord] = []
    ) {
        self.id = id
        self.flags = flags
        self.questions = questions
        self.answers = answers
        self.authorities = authorities
        self.additionals = additionals
    }

    /// A standard recursive query for one name and type (RFC 1035 §4.1.1, §7.1).
    public static func query(id: UInt16, name: DNSName, type: DNSRecordType) -> DNSMessage {
        DNSMessage(
            id: id, flags: Flags(recursionDesired: true),
            questions: [DNSQuestion(name: name, type: type)]
        )
    }
}
