public import NIOCore
public import SIPMessages

/// What a notifier grants a SUBSCRIBE, or why it refuses it (RFC 6665 §4.2.1.1 and §4.2.1.2).
public struct SubscriptionTerms: Sendable, Hashable, Codable {
    public var package: SIPEventPackage
    /// The Event header's `id` parameter (RFC 6665 §8.2.1), kept for every NOTIFY.
    public var eventID: String?
    /// The negotiated body type, kept for refreshes while their Accept still allows it.
    public var bodyType: String
    /// Granted duration in seconds; 0 is a fetch (RFC 6665 §4.4.3) or an unsubscribe.
    public var expires: UInt32
    /// The subscriber supports `ms-benotify` ([MS-PRES] §3.4.5.1.4; [MS-SIP]).
    public var supportsBENotify: Bool
    /// The subscriber supports `ms-piggyback-first-notify` ([MS-PRES] §4.4.2).
    public var supportsPiggyback: Bool
    /// RFC 6446 rate control, from the Event header, in notifications per second: the most the
    /// subscriber wants (`max-rate`) and the fewest (`min-rate`: the state is sent again when no
    /// change comes); nil when not asked for. A notifier may lower `minRate` (and says so in
    /// Subscription-State).
    public var maxRate: Double?
    public var minRate: Double?
    /// RFC 6446 §7 `adaptive-min-rate`: the notifier paces its unprompted notifications by how
    /// many it sent recently; nil when not asked for.
    public var adaptiveMinRate: Double?
    /// True when the subscriber's Accept listed `message/external-body`: it takes content
    /// indirection (RFC 4483 §5.1). Nil otherwise, so that records stored without it read the same.
    public var acceptsExternalBody: Bool?

    /// The least time between two notifications that `max-rate` allows.
    public var minimumInterval: TimeAmount? { maxRate.map(Self.interval) }
    /// The most time between two notifications that `min-rate` asks for.
    public var maximumInterval: TimeAmount? { minRate.map(Self.interval) }

    /// 1 / `rate` seconds, in whole nanoseconds rounded up (at most about a century).
    static func interval(_ rate: Double) -> TimeAmount {
        .nanoseconds(Int64(Swift.min((1e9 / rate).rounded(.up), 3.2e18)))
    }

    public init(
        package: SIPEventPackage, eventID: String? = nil, bodyType: String, expires: UInt32,
        supportsBENotify: Bool = false, supportsPiggyback: Bool = false, maxRate: Double? = nil,
        minRate: Double? = nil, adaptiveMinRate: Double? = nil
    ) {
        self.package = package
        self.eventID = eventID
        self.bodyType = bodyType
        self.expires = expires
        self.supportsBENotify = supportsBENotify
        self.supportsPiggyback = supportsPiggyback
        self.maxRate = maxRate
        self.minRate = minRate
        self.adaptiveMinRate = adaptiveMinRate
    }

    /// The outcome of checking a SUBSCRIBE.
    public enum Evaluation: Sendable, Hashable {
        case accept(SubscriptionTerms)
        /// The status and extra headers of the refusal (the caller adds the §8.2.6 copies).
        case reject(status: Int, reason: String, headers: SIPHeaders)
    }

    /// Checks a SUBSCRIBE against the registry (RFC 6665 §4.2.1.1): the event package (489 Bad
    /// Event with Allow-Events when missing or unknown), Expires (400 when unreadable; 423 Interval
    /// Too Brief with Min-Expires when below the package minimum and not 0; shortened to the
    /// maximum), and the body type from Accept (406 Not Acceptable when none fits). For a refresh,
    /// pass the `negotiated` type of the subscription: it is kept as long as the new Accept still
    /// allows it.
    public static func evaluate(
        _ request: SIPRequest, registry: SIPEventPackageRegistry,
        negotiated: String? = nil
    ) -> Evaluation {
        let h = request.headers
        let event: SIPEvent
        do {
            guard let e = try h.event else {
                return .reject(status: 489, reason: "Bad Event", headers: allowEvents(registry))
            }
            event = e
        } catch {
            return .reject(status: 400, reason: "Bad Event header", headers: [])
        }
        guard let package = registry.package(named: event.package) else {
            return .reject(status: 489, reason: "Bad Event", headers: allowEvents(registry))
        }
        let maxRate: Double?
        let minRate: Double?
        let adaptiveMinRate: Double?
        do {
            maxRate = try rate("max-rate", of: event)
            minRate = try rate("min-rate", of: event)
            adaptiveMinRate = try rate("adaptive-min-rate", of: event)
        } catch {
            return .reject(status: 400, reason: "Bad Event header \(error.name)", headers: [])
        }
        let requested: UInt32?
        do { requested = try h.expires } catch {
            return .reject(status: 400, reason: "Bad Expires header", headers: [])
        }
        var expires = requested ?? package.defaultExpires
        if expires != 0 && expires < package.minimumExpires {
            return .reject(
                status: 423, reason: "Interval Too Brief",
                headers: [(.minExpires, String(package.minimumExpires))])
        }
        expires = min(expires, package.maximumExpires)
        let accept: [SIPMediaRange]?
        do { accept = try h.accept } catch {
            return .reject(status: 400, reason: "Bad Accept header", headers: [])
        }
        var bodyType = package.negotiateBodyType(accept: accept)
        if let negotiated, let accept, Self.allows(accept, negotiated) { bodyType = negotiated }
        if let negotiated, accept == nil { bodyType = negotiated }
        guard let bodyType else {
            var headers = SIPHeaders()
            headers.append(.accept, package.bodyTypes.joined(separator: ", "))
            return .reject(status: 406, reason: "Not Acceptable", headers: headers)
        }
        let supported = (try? h.supported)?.map { $0.lowercased() } ?? []
        var terms = SubscriptionTerms(
            package: package, eventID: event.id, bodyType: bodyType, expires: expires,
            supportsBENotify: supported.contains("ms-benotify"),
            supportsPiggyback: supported.contains("ms-piggyback-first-notify"), maxRate: maxRate,
            minRate: minRate, adaptiveMinRate: adaptiveMinRate)
        if accept?.contains(where: { $0.type == "message" && $0.subtype == "external-body" && $0.q > 0 }) == true {
            terms.acceptsExternalBody = true
        }
        return .accept(terms)
    }

    /// An RFC 6446 rate parameter: a positive decimal number of notifications per second
    /// (`1*DIGIT ["." 1*DIGIT]`, at most 16 characters); any other value is an error.
    private struct BadRate: Error { let name: String }
    private static func rate(_ name: String, of event: SIPEvent) throws(BadRate) -> Double? {
        guard event.parameters.contains(name) else { return nil }
        guard let text = event.parameters.value(name), isDecimal(text), let value = Double(text), value > 0 else {
            throw BadRate(name: name)
        }
        return value
    }

    private static func isDecimal(_ text: String) -> Bool {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return text.utf8.count <= 16 && (1...2).contains(parts.count)
            && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { (0x30...0x39).contains($0) } }
    }

    /// A rate as a decimal for a header: up to six places, no trailing zeros ("0.2", "0.001667", "5").
    public static func decimal(_ rate: Double) -> String {
        let millionths = Int64((Swift.min(rate, 1e12) * 1_000_000).rounded())
        var fraction = String(millionths % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        let whole = String(millionths / 1_000_000)
        return fraction.isEmpty ? whole : whole + "." + fraction
    }

    private static func allowEvents(_ registry: SIPEventPackageRegistry) -> SIPHeaders {
        var headers = SIPHeaders()
        headers.append(.allowEvents, registry.names.joined(separator: ", "))
        return headers
    }

    private static func allows(_ accept: [SIPMediaRange], _ type: String) -> Bool {
        let parts = type.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return false }
        return accept.contains { $0.matches(type: parts[0], subtype: parts[1]) && $0.q > 0 }
    }
}
