public import SIPMessages

extension SIPUASCoreConfiguration {
    /// What a layer carrying the event agents must accept (RFC 3261 §8.2.3: a body type the UAS
    /// does not take gets 415, so the default, which takes none, refuses every NOTIFY with a
    /// body): the presence bodies of RFC 3863 (PIDF), [MS-PRES] §2.2.2.1 categories, §2.2.2.9
    /// msrtc.pidf, §2.2.2.4 batch category lists and their multipart/related + RLMI answers
    /// (RFC 4662), the §2.2.2.2.1 category publish of SERVICE, partial PIDF (RFC 5262), event
    /// filters in SUBSCRIBE bodies (RFC 4661), XCAP diff documents (RFC 5874, in the NOTIFYs of
    /// RFC 5875) and watcher information (RFC 3858, in the NOTIFYs of RFC 3857); and the option
    /// tags the
    /// [MS-PRES] dialect requires (`adhoclist`, `categoryList` on a batch SUBSCRIBE, §3.4.5.1.1;
    /// `eventlist`, RFC 4662; `ms-benotify`, `ms-piggyback-first-notify`).
    /// ``SIPTransactionLayer/setRequestHandler(for:_:)`` sets the allowed methods.
    public static let presenceEvents = SIPUASCoreConfiguration(
        allowedMethods: [],
        supportedExtensions: ["eventlist", "adhoclist", "categoryList", "ms-benotify", "ms-piggyback-first-notify"],
        defaultBodyTypes: [
            SIPBodyType.pidf, SIPBodyType.msrtcPIDF, SIPBodyType.msrtcCategories, SIPBodyType.msrtcCategoryList,
            SIPBodyType.rlmi, SIPBodyType.multipartRelated, "application/msrtc-category-publish+xml",
            "application/xpidf+xml", "application/pidf-diff+xml", "application/simple-filter+xml",
            "application/xcap-diff+xml", SIPBodyType.watcherInfo,
        ])
}

extension SIPTransactionLayer.Configuration {
    /// The default layer configuration with ``SIPUASCoreConfiguration/presenceEvents``.
    public static var presenceEvents: SIPTransactionLayer.Configuration {
        SIPTransactionLayer.Configuration(uas: .presenceEvents)
    }
}
