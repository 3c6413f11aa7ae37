public import SIPMessages

/// An event package (RFC 6665 §7): the name in the Event header, the body formats a notifier can
/// produce for it, and its subscription duration rules.
///
/// An open vocabulary: `presence` (RFC 3856) is built in; `presence.winfo` (RFC 3857) and others
/// are registered the same way in a ``SIPEventPackageRegistry``.
public struct SIPEventPackage: Sendable, Hashable, Codable {
    /// The event-type, compared case-insensitively (RFC 6665 §8.2.1: tokens are case-insensitive
    /// only for the registered names; Microsoft clients send `presence` in lower case).
    public var name: String
    /// Body types the notifier can produce, in the notifier's order of preference. The first one
    /// the subscriber accepts is chosen (``negotiateBodyType(accept:)``).
    public var bodyTypes: [String]
    /// The body type assumed when the SUBSCRIBE has no Accept header (RFC 6665 §4.1.2.1: the
    /// package's default; RFC 3856 §6.7: `application/pidf+xml`).
    public var defaultBodyType: String
    /// Duration granted when the SUBSCRIBE has no Expires (RFC 3856 §6.4: 3600 s for presence).
    public var defaultExpires: UInt32
    /// Shorter non-zero requests get 423 Interval Too Brief with Min-Expires (RFC 6665 §4.2.1.1).
    public var minimumExpires: UInt32
    /// Longer requests are shortened to this (RFC 6665 §4.2.1.1: the notifier MAY shorten).
    public var maximumExpires: UInt32

    public init(
        name: String, bodyTypes: [String], defaultBodyType: String, defaultExpires: UInt32,
        minimumExpires: UInt32, maximumExpires: UInt32
    ) {
        self.name = name.lowercased()
        self.bodyTypes = bodyTypes.map { $0.lowercased() }
        self.defaultBodyType = defaultBodyType.lowercased()
        self.defaultExpires = defaultExpires
        self.minimumExpires = minimumExpires
        self.maximumExpires = maximumExpires
    }

    /// `presence` (RFC 3856) with the three body formats of [MS-PRES] §1.3.3 in its order:
    /// enhanced presence categories, then msrtc.pidf, then PIDF. Default duration 3600 s
    /// (RFC 3856 §6.4), minimum 60 s, maximum one day.
    public static let presence = SIPEventPackage(
        name: "presence",
        bodyTypes: [SIPBodyType.msrtcCategories, SIPBodyType.msrtcPIDF, SIPBodyType.pidf],
        defaultBodyType: SIPBodyType.pidf,
        defaultExpires: 3600, minimumExpires: 60, maximumExpires: 86_400)

    /// The body type to use for a subscriber's Accept list ([MS-PRES] §1.3.3: "the notifier picks
    /// the body format ... in the order" of ``bodyTypes``; a range with q=0 excludes a type,
    /// RFC 3261 §20.1). Without an Accept header, ``defaultBodyType``. nil when the subscriber
    /// accepts none of them (→ 406 Not Acceptable, RFC 6665 §4.2.1.1 via RFC 3261 §21.4.7).
    public func negotiateBodyType(accept: [SIPMediaRange]?) -> String? {
        guard let accept else { return defaultBodyType }
        for type in bodyTypes {
            let parts = type.split(separator: "/", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { continue }
            // The most specific matching range decides (RFC 2616 §14.1 precedence).
            let matching = accept.filter { $0.matches(type: parts[0], subtype: parts[1]) }
            let best = matching.max { specificity($0) < specificity($1) }
            if let best, best.q > 0 { return type }
        }
        return nil
    }

    private func specificity(_ range: SIPMediaRange) -> Int {
        (range.type == "*" ? 0 : 1) + (range.subtype == "*" ? 0 : 1)
    }
}

/// Stored as one string, `NAME DEFAULT MINIMUM MAXIMUM DEFAULT-TYPE TYPE,TYPE,...` (an event
/// package name is a token, a media type has neither spaces nor commas): every stored
/// subscription holds its package, and a restart decodes one value for it instead of six
/// (docs/state.md, "What is stored"). Objects with a member per property, as schema version 1
/// stored them, are read as well.
extension SIPEventPackage {
    private enum CodingKeys: String, CodingKey {
        case name, bodyTypes, defaultBodyType, defaultExpires, minimumExpires, maximumExpires
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(
            "\(name) \(defaultExpires) \(minimumExpires) \(maximumExpires) \(defaultBodyType) "
                + bodyTypes.joined(separator: ","))
    }

    public init(from decoder: any Decoder) throws {
        guard let text = try? decoder.singleValueContainer().decode(String.self) else {
            let keyed = try decoder.container(keyedBy: CodingKeys.self)
            self.init(
                name: try keyed.decode(String.self, forKey: .name),
                bodyTypes: try keyed.decode([String].self, forKey: .bodyTypes),
                defaultBodyType: try keyed.decode(String.self, forKey: .defaultBodyType),
                defaultExpires: try keyed.decode(UInt32.self, forKey: .defaultExpires),
                minimumExpires: try keyed.decode(UInt32.self, forKey: .minimumExpires),
                maximumExpires: try keyed.decode(UInt32.self, forKey: .maximumExpires))
            return
        }
        let fields = text[...].parts(separatedBy: " ")
        guard fields.count == 6, let defaultExpires = UInt32(fields[1]), let minimumExpires = UInt32(fields[2]),
            let maximumExpires = UInt32(fields[3])
        else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not an event package: \(text.prefix(200))"))
        }
        self.init(
            name: String(fields[0]),
            bodyTypes: fields[5].isEmpty ? [] : fields[5].parts(separatedBy: ",").map(String.init),
            defaultBodyType: String(fields[4]),
            defaultExpires: defaultExpires, minimumExpires: minimumExpires, maximumExpires: maximumExpires)
    }
}

/// Media types of presence bodies.
public enum SIPBodyType {
    /// RFC 3863 PIDF.
    public static let pidf = "application/pidf+xml"
    /// [MS-PRES] §2.2.2.9 msrtc.pidf.
    public static let msrtcPIDF = "text/xml+msrtc.pidf"
    /// [MS-PRES] §2.2.2.1 enhanced presence categories.
    public static let msrtcCategories = "application/msrtc-event-categories+xml"
    /// [MS-PRES] §2.2.2.4 batch category subscription request body.
    public static let msrtcCategoryList = "application/msrtc-adrl-categorylist+xml"
    /// RFC 4662 resource list meta-information.
    public static let rlmi = "application/rlmi+xml"
    /// RFC 3858 watcher information.
    public static let watcherInfo = "application/watcherinfo+xml"
    /// RFC 2387.
    public static let multipartRelated = "multipart/related"
}

/// The event packages a notifier or subscriber knows, looked up by the Event header.
public struct SIPEventPackageRegistry: Sendable {
    private var packages: [String: SIPEventPackage]

    public init(_ packages: [SIPEventPackage] = [.presence]) {
        self.packages = Dictionary(packages.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
    }

    public mutating func register(_ package: SIPEventPackage) { packages[package.name] = package }

    public func package(named name: String) -> SIPEventPackage? { packages[name.lowercased()] }

    /// The names for Allow-Events (RFC 6665 §4.2.1.1 with 489 Bad Event), sorted.
    public var names: [String] { packages.keys.sorted() }
}
