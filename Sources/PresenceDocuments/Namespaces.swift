public import XMLBridge

/// XML namespace URIs of the presence documents, with their sources.
public enum NS {
    // IETF
    /// RFC 3863 §4.4
    public static let pidf = "urn:ietf:params:xml:ns:pidf"
    /// RFC 4479 §5.1.2
    public static let dataModel = "urn:ietf:params:xml:ns:pidf:data-model"
    /// RFC 4480 §5.1
    public static let rpid = "urn:ietf:params:xml:ns:pidf:rpid"
    /// RFC 4482 §5
    public static let cipid = "urn:ietf:params:xml:ns:pidf:cipid"
    /// RFC 5196 §6
    public static let caps = "urn:ietf:params:xml:ns:pidf:caps"
    /// RFC 4662 §5.1
    public static let rlmi = "urn:ietf:params:xml:ns:rlmi"
    /// RFC 3858 §5
    public static let watcherInfo = "urn:ietf:params:xml:ns:watcherinfo"
    /// RFC 4480 §3.8 place types use RFC 4589 location types.
    public static let locationTypes = "urn:ietf:params:xml:ns:location-type"
    /// Pre-RFC 4480 RPID namespaces that Microsoft servers emit ([MS-PRES] §2.2.2.8.1).
    public static let rpidStatus = "urn:ietf:params:xml:ns:pidf:status:rpid-status"
    public static let rpidTuple = "urn:ietf:params:xml:ns:pidf:rpid-tuple"
    /// OMA Presence SIMPLE's PIDF extensions (schema OMA-SUP-XSD_prs_pidf_omaPres;
    /// Mappings/oma-extensions.tsv).
    public static let omaPres = "urn:oma:xml:prs:pidf:oma-pres"
    public static let xml = "http://www.w3.org/XML/1998/namespace"
    public static let xsi = "http://www.w3.org/2001/XMLSchema-instance"

    // Microsoft ([MS-PRES] §2.2.2 and Appendix A/B/D)
    public static let categories = "http://schemas.microsoft.com/2006/09/sip/categories"
    public static let state = "http://schemas.microsoft.com/2006/09/sip/state"
    public static let note = "http://schemas.microsoft.com/2006/09/sip/note"
    public static let contactCard = "http://schemas.microsoft.com/2006/09/sip/contactcard"
    public static let calendarData = "http://schemas.microsoft.com/2006/09/sip/calendarData"
    public static let exchangeTypes = "http://schemas.microsoft.com/exchange/services/2006/types"
    public static let services = "http://schemas.microsoft.com/2006/09/sip/service"
    public static let device = "http://schemas.microsoft.com/2006/09/sip/device"
    public static let commonTypes = "http://schemas.microsoft.com/2006/09/sip/commontypes"
    public static let richPresence = "http://schemas.microsoft.com/2006/09/sip/rich-presence"
    public static let batchSubscribe = "http://schemas.microsoft.com/2006/01/sip/batch-subscribe"
    public static let categoryList = "http://schemas.microsoft.com/2006/09/sip/categorylist"
    public static let subscriptionContext = "http://schemas.microsoft.com/2008/09/sip/SubscriptionContext"
    public static let roamingSelf = "http://schemas.microsoft.com/2006/09/sip/roaming-self"
    /// msrtc.pidf presentity documents ([MS-PRES] §2.2.2.9, [MS-SIP] §6).
    public static let msrtcPresence = "http://schemas.microsoft.com/2002/09/sip/presence"
}

extension XMLVocabulary {
    /// Every namespace in ``NS``: a parse hands these URIs out as the ``NS``
    /// constants themselves, so the codecs' name matching compares by identity.
    public static let presence = XMLVocabulary(namespaces: [
        NS.pidf, NS.dataModel, NS.rpid, NS.cipid, NS.caps, NS.rlmi, NS.watcherInfo, NS.locationTypes, NS.rpidStatus,
        NS.rpidTuple, NS.omaPres,
        NS.xml, NS.xsi, NS.categories, NS.state, NS.note, NS.contactCard, NS.calendarData, NS.exchangeTypes,
        NS.services, NS.device, NS.commonTypes, NS.richPresence, NS.batchSubscribe, NS.categoryList,
        NS.subscriptionContext, NS.roamingSelf, NS.msrtcPresence, NS.upnpPresence,
    ])
}
