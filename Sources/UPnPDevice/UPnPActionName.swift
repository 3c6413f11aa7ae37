/// The name of a UPnP action: an open vocabulary, as in swift-http-types' `HTTPField.Name`.
public struct UPnPActionName: Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// ISO/IEC 29341-26-16 §5.5.1.
    public static let getPresence = UPnPActionName("GetPresence")
    /// ISO/IEC 29341-26-16 §5.5.2.
    public static let updatePresence = UPnPActionName("UpdatePresence")
    /// ISO/IEC 29341-26-16 §5.5.3.
    public static let getContactPresence = UPnPActionName("GetContactPresence")
    /// ISO/IEC 29341-26-16 §5.5.4.
    public static let getPresenceOfContactsUpdate = UPnPActionName("GetPresenceOfContactsUpdate")
    /// ISO/IEC 29341-26-16 §5.5.5.
    public static let registerForContactPresence = UPnPActionName("RegisterForContactPresence")
    /// ISO/IEC 29341-26-16 §5.5.6.
    public static let authorizePresenceReactive = UPnPActionName("AuthorizePresenceReactive")
    /// ISO/IEC 29341-26-16 §5.5.7.
    public static let authorizePresenceProactive = UPnPActionName("AuthorizePresenceProactive")
}
