/// The 409 Conflict body of a publish, `application/msrtc-fault+xml`
/// ([MS-PRES] §2.2.2.2.3, example §4.2.1). No namespace.
///
/// ```
/// <Fault> <Faultcode>Client.BadCall.WrongDelta</Faultcode>
///   <details> <operation index version curVersion> data? </operation>* </details> </Fault>
/// ```
public struct PublishFault: Hashable, Sendable {
    /// "Protocol client.BadCall.WrongDelta" in §4.2.1, "Client.BadCall.WrongDelta"
    /// in §2.2.2.10.4 (docs/flows.md, "Publish fault code"): read both, written as given.
    public var faultCode: String
    public var operations: [Operation]

    public struct Operation: Hashable, Sendable {
        /// 1-based position of the publication in the request.
        public var index: Int
        public var version: UInt32?
        public var currentVersion: UInt32?
        /// The current data of that publication: as the server holds it, or, read from a
        /// body, kept as it came (``CategoryPayload/other(_:)``: an operation does not name its
        /// category, so its data is not typed).
        public var data: CategoryPayload?
        public init(index: Int, version: UInt32? = nil, currentVersion: UInt32? = nil, data: CategoryPayload? = nil) {
            self.index = index
            self.version = version
            self.currentVersion = currentVersion
            self.data = data
        }
    }

    public init(faultCode: String = "Client.BadCall.WrongDelta", operations: [Operation] = []) {
        self.faultCode = faultCode
        self.operations = operations
    }
}
