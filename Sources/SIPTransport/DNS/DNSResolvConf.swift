/// The nameservers named in a resolver configuration file (resolv.conf(5)).
///
/// ```
/// nameserver 192.0.2.53        # IPv4 or IPv6 address, at most 3 are used by the C library
/// nameserver 2001:db8::53
/// ```
///
/// Only `nameserver` lines are read; `#` and `;` start comments. Addresses that are not IP
/// literals are skipped, and so is an IPv6 zone index (`fe80::1%eth0`) since it cannot be used
/// portably. Port 53 (RFC 1035 §4.2).
public struct DNSResolvConf: Sendable, Hashable {
    /// The nameserver addresses in file order, as IP literals.
    public var nameservers: [String]

    /// The most nameservers kept (the C library's MAXNS is 3). Default 3.
    public static let defaultMaxNameservers = 3

    public init(nameservers: [String]) { self.nameservers = nameservers }

    /// Parses the text of a resolv.conf file.
    public init(parsing text: String, maxNameservers: Int = defaultMaxNameservers) {
        var servers: [String] = []
        for rawLine in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            var line = Substring(rawLine)
            if let comment = line.firstIndex(where: { $0 == "#" || $0 == ";" }) { line = line[..<comment] }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2, fields[0] == "nameserver" else { continue }
            let address = fields[1]
            if DNSIPv4Address(address) != nil || DNSIPv6Address(address) != nil {
                servers.append(String(address))
            }
            if servers.count >= maxNameservers { break }
        }
        nameservers = servers
    }
}
