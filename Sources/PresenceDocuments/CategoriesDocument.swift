public import XMLBridge

// Optional stored properties are declared `Optional<T>`, not `T?`: a `var x: T?`
// starts out nil, so the initializer's `self.x = x` assigns it a second time,
// and the optimizer then builds the whole value aside and copies it into place
// (a retain and a release per field on every value made). `Optional<T>` has no
// implicit initial value: the initializer's assignment is the only one.

/// An enhanced-presence `categories` document ([MS-PRES] §2.2.2.1, schema §6.2).
///
/// ```
/// <categories uri="sip:publisher"> <category name instance? container? version?
///     publishTime? expireType? expires? endpointId?> payload? </category>* </categories>
/// ```
public struct CategoriesDocument: Hashable, Sendable {
    /// The publisher (`uri` attribute, required).
    public var uri: String
    public var categories: [Category]

    public init(uri: String, categories: [Category] = []) {
        self.uri = uri
        self.categories = categories
    }

    /// The categories with a given name, in document order.
    public func categories(named name: CategoryName) -> [Category] { categories.filter { $0.name == name } }
}

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
    /// lines 4301, 4330, 4557, 4604, 4668 of the seed).
    public static let privateCategories: Set<CategoryName> = [
        .legacyInterop, .routing, .workingHours, .dndState, .linkedPICContacts,
    ]
}

/// `expireType` ([MS-PRES] §2.2.2.2.1).
public enum ExpireType: String, Hashable, Sendable, CaseIterable {
    case `static`, endpoint, user, time
}

/// One `category` element: the publication's key and metadata plus its data.
public struct Category: Hashable, Sendable {
    public var name: CategoryName
    public var instance: Optional<UInt32>
    public var container: Optional<UInt32>
    public var version: Optional<UInt32>
    /// As written; [MS-PRES] examples use `2008-01-11T18:11:33.577` (no zone, see guide Q8).
    public var publishTime: Optional<String>
    public var expireType: Optional<ExpireType>
    public var expires: Optional<UInt32>
    public var endpointID: Optional<String>
    /// Attributes the schema does not name, kept verbatim.
    public var otherAttributes: [XMLAttribute]
    /// `nil` for an empty category element: the category is not published, or
    /// the watcher resolves to no container ([MS-PRES] §3.2.5.3 rule 7).
    public var payload: Optional<CategoryPayload>

    /// Inlinable: callers in other modules then move a payload into place
    /// instead of copying it through an opaque call (copying a `ContactCard` or
    /// `MSState` retains and releases every field).
    @inlinable
    public init(
        name: CategoryName, instance: UInt32? = nil, container: UInt32? = nil, version: UInt32? = nil,
        publishTime: String? = nil, expireType: ExpireType? = nil, expires: UInt32? = nil,
        endpointID: String? = nil, otherAttributes: [XMLAttribute] = [], payload: CategoryPayload? = nil
    ) {
        self.name = name
        self.instance = instance
        self.container = container
        self.version = version
        self.publishTime = publishTime
        self.expireType = expireType
        self.expires = expires
        self.endpointID = endpointID
        self.otherAttributes = otherAttributes
        self.payload = payload
    }

    public static func == (a: Category, b: Category) -> Bool {
        a.name == b.name && a.instance == b.instance && a.container == b.container && a.version == b.version
            && a.publishTime == b.publishTime && a.expireType == b.expireType && a.expires == b.expires
            && a.endpointID == b.endpointID && a.payload == b.payload
            && a.otherAttributes.count == b.otherAttributes.count
            && a.otherAttributes.allSatisfy { x in b.otherAttributes.contains { $0.name == x.name && $0.value == x.value } }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(instance)
        hasher.combine(payload)
    }
}

/// The data of a category, typed where the gateway understands it.
///
/// The two large payloads are boxed (`indirect`): a contact card is 176 bytes and calendar data
/// 128, and every category of every document, `state` included, would otherwise be that wide.
/// Subscriptions keep their presentities' categories for their whole life (issue 5 §6: memory
/// per bridged pair).
public enum CategoryPayload: Hashable, Sendable {
    case state(MSState)
    case note(MSNote)
    indirect case contactCard(ContactCard)
    indirect case calendarData(CalendarData)
    case services(MSServices)
    case device(MSDevice)
    case userProperties(UserProperties)
    case legacyInterop(LegacyInterop)
    /// Any other category (or an unexpected root), kept verbatim: all child
    /// nodes of the `category` element except white-space-only text nodes
    /// (indentation; dropped at every depth so that values survive re-indenting).
    case other([XMLNode])
}
