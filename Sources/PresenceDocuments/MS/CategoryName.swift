/// Category names: an open vocabulary ([MS-PRES] §2.2.2.7 and endnote <31>).
public struct CategoryName: Hashable, Sendable, RawRepresentable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    public static let state: CategoryName = "state"
    public static let note: CategoryName = "note"
    public static let contactCard: CategoryName = "contactCard"
    public static let calendarData: CategoryName = "calendarData"
    public static let services: CategoryName = "services"
    public static let device: CategoryName = "device"
    public static let userProperties: CategoryName = "userProperties"
    public static let legacyInterop: CategoryName = "legacyInterop"
    public static let workingHours: CategoryName = "workingHours"
    public static let dndState: CategoryName = "dndState"
    public static let routing: CategoryName = "routing"
    public static let mwi: CategoryName = "mwi"
    public static let linkedPICContacts: CategoryName = "linkedPICContacts"

    /// Categories nobody but the publisher may subscribe to ([MS-PRES] §1.3.1.2;
    /// §2.2.2.7.6, §2.2.2.7.7, §2.2.2.7.9, §2.2.2.7.10, §2.2.2.7.12).
    public static let privateCategories: Set<CategoryName> = [
        .legacyInterop, .routing, .workingHours, .dndState, .linkedPICContacts,
    ]
}
