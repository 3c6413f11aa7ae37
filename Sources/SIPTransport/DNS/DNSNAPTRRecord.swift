/// NAPTR RDATA (RFC 3403 §4.1).
///
/// ```
/// ORDER PREFERENCE FLAGS SERVICES REGEXP REPLACEMENT
/// ```
///
/// FLAGS, SERVICES and REGEXP are `<character-string>`s (RFC 1035 §3.3), kept as octets.
public struct DNSNAPTRRecord: Sendable, Hashable {
    public var order: UInt16
    public var preference: UInt16
    public var flags: [UInt8]
    public var services: [UInt8]
    public var regexp: [UInt8]
    public var replacement: DNSName

    public init(
        order: UInt16, preference: UInt16, flags: String, services: String, regexp: String = "",
        replacement: DNSName
    ) {
        self.order = order
        self.preference = preference
        self.flags = Array(flags.utf8)
        self.services = Array(services.utf8)
        self.regexp = Array(regexp.utf8)
        self.replacement = replacement
    }

    init(order: UInt16, preference: UInt16, flags: [UInt8], services: [UInt8], regexp: [UInt8], replacement: DNSName) {
        self.order = order
        self.preference = preference
        self.flags = flags
        self.services = services
        self.regexp = regexp
        self.replacement = replacement
    }

    public var flagsText: String { String(decoding: flags, as: UTF8.self) }
    public var servicesText: String { String(decoding: services, as: UTF8.self) }
    public var regexpText: String { String(decoding: regexp, as: UTF8.self) }
}
