/// An SSDP message as it travels in one UDP datagram: HTTP over UDP, a start line and header
/// fields, no body (UPnP Device Architecture 1.1 §1.1.1, §1.1.2).
///
/// ```
/// M-SEARCH * HTTP/1.1
/// HOST: 239.255.255.250:1900
/// MAN: "ssdp:discover"
/// MX: seconds to delay response
/// ST: search target
/// ```
public struct SSDPMessage: Sendable, Hashable {
    /// The start line (`M-SEARCH * HTTP/1.1`, `NOTIFY * HTTP/1.1`, `HTTP/1.1 200 OK`).
    public var startLine: String
    /// The header fields in their order; names as sent.
    public var headers: [(name: String, value: String)]

    public init(startLine: String, headers: [(name: String, value: String)]) {
        self.startLine = startLine
        self.headers = headers
    }

    /// The first value of the header field `name`, matched case-insensitively (UDA 1.1 §1.1.2:
    /// field names are case-insensitive).
    public subscript(name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }

    public static func == (a: SSDPMessage, b: SSDPMessage) -> Bool {
        a.startLine == b.startLine && a.headers.map(\.name) == b.headers.map(\.name)
            && a.headers.map(\.value) == b.headers.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(startLine)
        for field in headers {
            hasher.combine(field.name)
            hasher.combine(field.value)
        }
    }

    /// The datagram: CRLF after every line and an empty line at the end (UDA 1.1 §1.1.1).
    public var bytes: [UInt8] {
        var text = startLine + "\r\n"
        for field in headers { text += "\(field.name): \(field.value)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }
}

extension SSDPMessage {
    /// Reads a datagram; nil when it is no SSDP message (not UTF-8, too large, no start line, a
    /// header line without a colon, too many header fields). Never traps.
    public static func parse(_ datagram: some Collection<UInt8>, limits: SSDPLimits = SSDPLimits()) -> SSDPMessage? {
        guard datagram.count <= limits.maxBytes else { return nil }
        // Split on LF as bytes (in a Swift String, CR LF is one Character), drop a CR before it.
        var lines: [Substring] = []
        for raw in Array(datagram).split(separator: 0x0A, omittingEmptySubsequences: false) {
            let line = raw.last == 0x0D ? raw.dropLast() : raw
            guard let text = String(validating: line, as: UTF8.self) else { return nil }
            lines.append(Substring(text))
        }
        guard let first = lines.first, !first.isEmpty else { return nil }
        lines.removeFirst()
        var headers: [(name: String, value: String)] = []
        for line in lines {
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { return nil }
            let name = line[..<colon].trimmingSSDPSpace()
            let value = line[line.index(after: colon)...].trimmingSSDPSpace()
            guard !name.isEmpty, !name.contains(" ") else { return nil }
            headers.append((name, value))
            guard headers.count <= limits.maxHeaders else { return nil }
        }
        return SSDPMessage(startLine: String(first), headers: headers)
    }
}
