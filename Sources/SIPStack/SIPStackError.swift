/// The one error type of the SIPStack module: a stable ``Code`` and a sentence saying what was
/// wrong.
public struct SIPStackError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code. Open vocabulary: compare with the static members.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A request cannot create or join a dialog: a mandatory header, a From tag or a Contact
        /// is missing or does not parse (RFC 3261 §12.1, §8.1.1).
        public static let invalidDialogRequest = Code(rawValue: "invalid-dialog-request")
        /// A response cannot create a dialog: no To tag or no Contact (RFC 3261 §12.1.2).
        public static let invalidDialogResponse = Code(rawValue: "invalid-dialog-response")
    }

    public var code: Code
    public var detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code): \(detail)" }
}
