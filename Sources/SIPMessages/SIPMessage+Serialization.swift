extension SIPMessage {
    /// What the serializer does with Content-Length.
    public enum ContentLengthPolicy: Sendable, Hashable {
        /// Write Content-Length as the body size: replace the first Content-Length field's value
        /// (dropping any others), or add one at the end of the headers.
        case recompute
        /// Write the header fields exactly as they are.
        case preserve
    }

    /// The message as bytes: start line, header fields (unmodified fields byte for byte), CRLF,
    /// body. Lines end in CRLF (RFC 3261 §7).
    public func serialized(contentLength: ContentLengthPolicy = .recompute) -> [UInt8] {
        var out: [UInt8] = []
        switch self {
        case .request(let r):
            out.reserveCapacity(r.body.count + Self.headerBytes(r.headers) + 96)
            out.append(contentsOf: r.method.rawValue.utf8)
            out.append(0x20)
            r.uri.write(to: &out)
            out.append(contentsOf: " SIP/2.0\r\n".utf8)
            Self.writeHeaders(r.headers, bodyCount: r.body.count, policy: contentLength, to: &out)
            out.append(contentsOf: r.body)
        case .response(let r):
            out.reserveCapacity(r.body.count + Self.headerBytes(r.headers) + r.reasonPhrase.utf8.count + 40)
            out.append(contentsOf: "SIP/2.0 ".utf8)
            out.append(contentsOf: String(r.statusCode).utf8)
            out.append(0x20)
            for b in r.reasonPhrase.utf8 where b != 0x0D && b != 0x0A { out.append(b) }
            out.append(contentsOf: "\r\n".utf8)
            Self.writeHeaders(r.headers, bodyCount: r.body.count, policy: contentLength, to: &out)
            out.append(contentsOf: r.body)
        }
        return out
    }

    /// Bytes the header section takes (a Content-Length field may be added: room for it).
    private static func headerBytes(_ headers: SIPHeaders) -> Int {
        var n = 32
        for f in headers.fields { n += f.serializedCount }
        return n
    }

    private static func writeHeaders(_ headers: SIPHeaders, bodyCount: Int, policy: ContentLengthPolicy, to out: inout [UInt8]) {
        var wroteLength = false
        for f in headers.fields {
            if policy == .recompute, f.name == .contentLength {
                if wroteLength { continue }
                wroteLength = true
                let text = String(bodyCount)
                if f.isVerbatim, f.valueBytes.elementsEqual(text.utf8) {
                    f.write(to: &out)
                } else {
                    SIPHeaderField(name: .contentLength, value: text).write(to: &out)
                }
                continue
            }
            f.write(to: &out)
        }
        if policy == .recompute, !wroteLength {
            SIPHeaderField(name: .contentLength, value: String(bodyCount)).write(to: &out)
        }
        out.append(0x0D)
        out.append(0x0A)
    }
}

extension SIPRequest {
    public func serialized(contentLength: SIPMessage.ContentLengthPolicy = .recompute) -> [UInt8] {
        SIPMessage.request(self).serialized(contentLength: contentLength)
    }
}

extension SIPResponse {
    public func serialized(contentLength: SIPMessage.ContentLengthPolicy = .recompute) -> [UInt8] {
        SIPMessage.response(self).serialized(contentLength: contentLength)
    }
}
