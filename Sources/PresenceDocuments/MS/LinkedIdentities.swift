/// Microsoft `linked-identities` ([MS-PRES] §2.2.2.8.1).
public struct LinkedIdentities: Hashable, Sendable {
    public var primaryID: String?
    public var secondaryIdentities: [String]
    public init(primaryID: String? = nil, secondaryIdentities: [String] = []) {
        self.primaryID = primaryID
        self.secondaryIdentities = secondaryIdentities
    }
}
