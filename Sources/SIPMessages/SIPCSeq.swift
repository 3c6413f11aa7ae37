/// The CSeq header: sequence number and method (RFC 3261 §20.16, §8.1.1.5).
///
/// ```
/// CSeq  =  "CSeq" HCOLON 1*DIGIT LWS Method
/// ```
///
/// The number must be expressible as a 32-bit unsigned integer (RFC 3261 §8.1.1.5;
/// RFC 4475 §3.1.2.4 rejects 36893488147419103232).
public struct SIPCSeq: Sendable, Hashable, CustomStringConvertible {
    public var sequence: UInt32
    public var method: SIPMethod

    public init(_ sequence: UInt32, _ method: SIPMethod) {
        self.sequence = sequence
        self.method = method
    }

    public init(_ text: String) throws(SIPParseError) {
        let bytes = Array(text.utf8)
        self = try SIPCSeq.parse(bytes[...], header: "CSeq")
    }

    public var description: String { "\(sequence) \(method.rawValue)" }

    static func parse(_ bytes: ArraySlice<UInt8>, header: String?) throws(SIPParseError) -> SIPCSeq {
        var s = SIPScanner(bytes, header: header, code: .invalidCSeq)
        s.skipLWS()
        let digits = s.run(while: SIPByte.isDigit)
        guard !digits.isEmpty else { throw s.error("sequence number (1*DIGIT)") }
        let n = try SIPByte.parseNumber(digits, max: UInt64(UInt32.max), what: "CSeq sequence number", header: header)
        let before = s.index
        s.skipLWS()
        guard s.index > before else { throw s.error("LWS between the sequence number and the method") }
        let method = try s.token("method (token)")
        try s.expectEnd("end of CSeq after the method")
        return SIPCSeq(UInt32(n), SIPMethod.known(method))
    }
}
