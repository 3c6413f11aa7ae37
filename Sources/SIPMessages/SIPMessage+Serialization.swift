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
    ///
    /// The message is emitted twice through the same code: once to count the bytes, once into
    /// an array reserved at exactly that size.
    public func serialized(contentLength: ContentLengthPolicy = .recompute) -> [UInt8] {
        var counter = ByteCounter()
        emit(to: &counter, policy: contentLength)
        var writer = ByteWriter(capacity: counter.count)
        emit(to: &writer, policy: contentLength)
        return writer.bytes
    }

    private func emit<S: ByteSink>(to out: inout S, policy: ContentLengthPolicy) {
        switch self {
        case .request(let r):
            out.put(string: r.method.rawValue)
            out.put(0x20)
            if let verbatim = r.uri.verbatim {
                out.put(verbatim)
            } else {
                var uri: [UInt8] = []
                r.uri.write(to: &uri)
                out.put(uri[...])
            }
            out.put(static: " SIP/2.0\r\n")
            Self.emitHeaders(r.headers, bodyCount: r.body.count, policy: policy, to: &out)
            out.put(r.body[...])
        case .response(let r):
            out.put(static: "SIP/2.0 ")
            out.put(string: String(r.statusCode))
            out.put(0x20)
            for b in r.reasonPhrase.utf8 where b != 0x0D && b != 0x0A { out.put(b) }
            out.put(static: "\r\n")
            Self.emitHeaders(r.headers, bodyCount: r.body.count, policy: policy, to: &out)
            out.put(r.body[...])
        }
    }

    private static func emitHeaders<S: ByteSink>(
        _ headers: SIPHeaders, bodyCount: Int, policy: ContentLengthPolicy, to out: inout S
    ) {
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
        out.put(0x0D)
        out.put(0x0A)
    }
}

/// Where the serializer writes: a counter (first pass) or the output array (second pass).
protocol ByteSink {
    mutating func put(_ byte: UInt8)
    mutating func put(_ bytes: some Collection<UInt8>)
}

extension ByteSink {
    mutating func put(string: String) { put(string.utf8) }
    mutating func put(static text: StaticString) { text.withUTF8Buffer { put($0) } }
}

struct ByteCounter: ByteSink {
    var count = 0
    mutating func put(_ byte: UInt8) { count += 1 }
    mutating func put(_ bytes: some Collection<UInt8>) { count += bytes.count }
}

/// Writes into an array reserved at the size a ``ByteCounter`` pass over the same output counted.
struct ByteWriter: ByteSink {
    var bytes: [UInt8] = []
    init(capacity: Int) { bytes.reserveCapacity(capacity) }
    mutating func put(_ byte: UInt8) { bytes.append(byte) }
    mutating func put(_ bytes: some Collection<UInt8>) { self.bytes.append(contentsOf: bytes) }
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
