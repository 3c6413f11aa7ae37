public import XMLBridge

/// Which presence document a root element is, by (namespace, local name) only.
public enum PresenceDocumentKind: String, Hashable, Sendable, CaseIterable {
    /// `{urn:ietf:params:xml:ns:pidf}presence` (RFC 3863).
    case pidf
    /// `categories` ([MS-PRES] §2.2.2.1).
    case categories
    /// msrtc.pidf `presentity` ([MS-PRES] §2.2.2.9.2).
    case msrtcPresentity
    /// `batchSub` category SUBSCRIBE body ([MS-PRES] §2.2.2.4.1).
    case batchSubscribe
    /// RLMI `list` (RFC 4662; [MS-PRES] §2.2.2.4.2).
    case rlmiList
    /// `publish` SERVICE body ([MS-PRES] §2.2.2.2.1).
    case publish
    /// `Fault` in no namespace ([MS-PRES] §2.2.2.2.3).
    case fault
    /// `roamingData` self-subscription document ([MS-PRES] §2.2.2.3).
    case roamingData
    /// Anything else.
    case other

    /// Classifies a parsed root element.
    public static func detect(root: XMLElement) -> PresenceDocumentKind {
        switch (root.name.namespace, root.name.local) {
        case (NS.pidf, "presence"): .pidf
        case (NS.categories, "categories"): .categories
        case (NS.msrtcPresence, "presentity"): .msrtcPresentity
        case (NS.batchSubscribe, "batchSub"): .batchSubscribe
        case (NS.rlmi, "list"): .rlmiList
        case (NS.richPresence, "publish"): .publish
        case ("", "Fault"): .fault
        case (NS.roamingSelf, "roamingData"): .roamingData
        default: .other
        }
    }
}
