/// A MIME multipart body (RFC 2046 §5.1), as used by multipart/related
/// (RFC 2387) in RLMI notifications and Microsoft's batch SUBSCRIBE 200 OK.
///
/// ```
/// multipart-body := [preamble CRLF] dash-boundary transport-padding CRLF
///                   body-part *encapsulation close-delimiter ...
/// ```
public struct MultipartBody: Sendable, Hashable {
    /// One body part: its headers in order (names as written) and its bytes.
    public struct Part: Sendable, Hashable {
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public init(headers: [(name: String, value: String)], body: [UInt8]) {
            self.headers = headers
            self.body = body
        }

        /// The first header with this name (compared case-insensitively).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }

        /// The media type its Content-Type names, lowercased, without parameters ("" without one).
        public var mediaType: String {
            var type = Substring(header("Content-Type") ?? "").prefix { $0 != ";" }
            while type.first == " " || type.first == "\t" { type = type.dropFirst() }
            while type.last == " " || type.last == "\t" { type = type.dropLast() }
            return type.lowercased()
        }

        public static func == (a: Part, b: Part) -> Bool {
            a.body == b.body && a.headers.count == b.headers.count
                && zip(a.headers, b.headers).allSatisfy {
                    $0.name.lowercased() == $1.name.lowercased() && $0.value == $1.value
                }
        }

        public func hash(into hasher: inout Hasher) { hasher.combine(body) }
    }

    public var boundary: String
    public var parts: [Part]

    public init(boundary: String, parts: [Part]) {
        self.boundary = boundary
        self.parts = parts
    }

    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        public var message: String
        /// Byte offset into the body where the problem was found.
        public var offset: Int
        public var description: String { "multipart body, byte \(offset): \(message)" }
    }

    /// Parses a body with the boundary taken from the Content-Type parameter.
    /// Bare LF line ends are accepted as well as CRLF.
    public init(parsing body: [UInt8], boundary: String, maxParts: Int = 1000) throws(ParseError) {
        guard !boundary.isEmpty, boundary.utf8.count <= 70 else {
            throw ParseError(message: "boundary must be 1 to 70 characters (RFC 2046 §5.1.1)", offset: 0)
        }
        self.boundary = boundary
        self.parts = []
        let delimiter = Array("--\(boundary)".utf8)
        // Positions of delimiter lines: at the start of the body or after a line end.
        var positions: [Int] = []
        var i = 0
        while let found = Self.find(delimiter, in: body, from: i) {
            let atLineStart = found == 0 || body[found - 1] == 0x0A
            if atLineStart { positions.append(found) }
            i = found + delimiter.count
        }
        guard let first = positions.first else {
            throw ParseError(message: "no delimiter line \"--\(boundary)\"", offset: 0)
        }
        var closed = false
        for (index, start) in positions.enumerated() {
            var cursor = start + delimiter.count
            if cursor + 1 < body.count, body[cursor] == 0x2D, body[cursor + 1] == 0x2D {
                closed = true
                break
            }
            // Skip transport padding up to the end of the delimiter line.
            while cursor < body.count, body[cursor] == 0x20 || body[cursor] == 0x09 { cursor += 1 }
            if cursor < body.count, body[cursor] == 0x0D { cursor += 1 }
            guard cursor < body.count, body[cursor] == 0x0A else {
                throw ParseError(message: "delimiter line not followed by a line end", offset: cursor)
            }
            cursor += 1
            guard index + 1 < positions.count else {
                throw ParseError(message: "part is not closed by a delimiter", offset: cursor)
            }
            // The CRLF before the next delimiter belongs to the delimiter.
            var end = positions[index + 1]
            if end > cursor, body[end - 1] == 0x0A { end -= 1 }
            if end > cursor, body[end - 1] == 0x0D { end -= 1 }
            parts.append(try Self.parsePart(Array(body[cursor..<max(cursor, end)]), offset: cursor))
            guard parts.count <= maxParts else {
                throw ParseError(message: "more than \(maxParts) parts", offset: cursor)
            }
        }
        _ = first
        guard closed else { throw ParseError(message: "no close delimiter \"--\(boundary)--\"", offset: body.count) }
    }

    private static func parsePart(_ bytes: [UInt8], offset: Int) throws(ParseError) -> Part {
        var headers: [(name: String, value: String)] = []
        var cursor = 0
        while cursor < bytes.count {
            var lineEnd = cursor
            while lineEnd < bytes.count, bytes[lineEnd] != 0x0A { lineEnd += 1 }
            var contentEnd = lineEnd
            if contentEnd > cursor, bytes[contentEnd - 1] == 0x0D { contentEnd -= 1 }
            let line = bytes[cursor..<contentEnd]
            let next = min(lineEnd + 1, bytes.count)
            if line.isEmpty { return Part(headers: headers, body: Array(bytes[next...])) }
            if line.first == 0x20 || line.first == 0x09, !headers.isEmpty {
                // Folded continuation of the previous header (RFC 5322 §2.2.3).
                headers[headers.count - 1].value += " " + String(decoding: line, as: UTF8.self).trimmingSpaces()
            } else {
                guard let colon = line.firstIndex(of: 0x3A) else {
                    throw ParseError(message: "part header line without a colon", offset: offset + cursor)
                }
                let name = String(decoding: line[line.startIndex..<colon], as: UTF8.self).trimmingSpaces()
                let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces()
                guard !name.isEmpty else {
                    throw ParseError(message: "empty part header name", offset: offset + cursor)
                }
                headers.append((name, value))
            }
            cursor = next
        }
        // No blank line: a part with headers only and an empty body.
        return Part(headers: headers, body: [])
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count else { return nil }
        var i = start
        let last = haystack.count - needle.count
        while i <= last {
            if haystack[i] == needle[0] {
                var j = 1
                while j < needle.count, haystack[i + j] == needle[j] { j += 1 }
                if j == needle.count { return i }
            }
            i += 1
        }
        return nil
    }

    /// The body bytes, with CRLF line ends and the close delimiter.
    ///
    /// Each part's content ends with a CRLF of its own, so that an empty line stands before every
    /// delimiter, as in the multipart bodies of the [MS-PRES] §4.5 examples: the CRLF before a
    /// delimiter belongs to the delimiter (RFC 2046 §5.1.1), and Microsoft clients (libpurple's
    /// MIME reader, under SIPE) drop the four bytes before each one. A content that already ends
    /// with CRLF gets none more, so parsing these bytes and writing them again gives them back.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        for part in parts {
            out.append(contentsOf: "--\(boundary)\r\n".utf8)
            for h in part.headers { out.append(contentsOf: "\(h.name): \(h.value)\r\n".utf8) }
            out.append(contentsOf: "\r\n".utf8)
            out.append(contentsOf: part.body)
            if !part.body.ends(with: [0x0D, 0x0A]) { out.append(contentsOf: "\r\n".utf8) }
            out.append(contentsOf: "\r\n".utf8)
        }
        out.append(contentsOf: "--\(boundary)--\r\n".utf8)
        return out
    }
}

extension [UInt8] {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && self[(count - suffix.count)...].elementsEqual(suffix)
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return String(s)
    }
}
