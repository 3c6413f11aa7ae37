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
        /// The transaction layer cannot send this request: INVITE or ACK (the gateway makes no
        /// calls), or CSeq missing or naming another method (RFC 3261 §8.1.1.5).
        public static let invalidClientRequest = Code(rawValue: "invalid-client-request")
        /// The transport advertises no address for the target's transport kind, so there is no
        /// sent-by for the Via (RFC 3261 §18.1.1).
        public static let noLocalAddress = Code(rawValue: "no-local-address")
        /// ``SIPTransactionLayer/Limits`` allow no more transactions.
        public static let tooManyTransactions = Code(rawValue: "too-many-transactions")
        /// No server transaction has this key (it ended, or never existed).
        public static let unknownTransaction = Code(rawValue: "unknown-transaction")
        /// An event agent's limit allows no more subscriptions or publications.
        public static let tooManySubscriptions = Code(rawValue: "too-many-subscriptions")
        /// A stored record (docs/state.md) does not restore: a field is missing or does not parse.
        public static let invalidRecord = Code(rawValue: "invalid-record")
    }

    public var code: Code
    public var detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "\(code): \(detail)" }
}
