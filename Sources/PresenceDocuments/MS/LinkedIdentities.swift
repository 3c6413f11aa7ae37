// Optional stored properties are declared `Optional<T>`, not `T?`: a `var x: T?`
// starts out nil, so the initializer's `self.x = x` assigns it a second time,
// and the optimizer then builds the whole value aside and copies it into place
// (a retain and a release per field on every value made). `Optional<T>` has no
// implicit initial value: the initializer's assignment is the only one.

/// Microsoft `linked-identities` ([MS-PRES] §2.2.2.8.1).
public struct LinkedIdentities: Hashable, Sendable {
    public var primaryID: Optional<String>
    public var secondaryIdentities: [String]
    public init(primaryID: String? = nil, secondaryIdentities: [String] = []) {
        self.primaryID = primaryID
        self.secondaryIdentities = secondaryIdentities
    }
}
