/// The one error type of the MSPresenceEvents module: a stable ``Code`` and a sentence saying what
/// was wrong.
public struct MSPresenceEventsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code. Open vocabulary: compare with the static members.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A publication's URI is not a SIP URI ([MS-PRES] §2.2.2.2.1: `uri` is the publisher's SIP URI).
        public static let invalidPublisherURI = Code(rawValue: "invalid-publisher-uri")
        /// A response body the publisher expected (roamingData, msrtc-fault) does not parse.
        public static let invalidResponseBody = Code(rawValue: "invalid-response-body")
    }

    public var code: Code
    public var detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code): \(detail)" }
}
