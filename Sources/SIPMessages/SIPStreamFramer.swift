/// Splits a SIP byte stream (TCP, TLS, or any stream transport) into messages and keep-alives,
/// without doing any I/O: the transport appends whatever bytes it read, in chunks of any size,
/// then calls ``next()`` until it returns nil.
///
/// Framing (RFC 3261 §18.3): "In the case of stream-oriented transports such as TCP, the
/// Content-Length header field indicates the size of the body. All stream-oriented transports
/// MUST use Content-Length." A message is its header section (up to and including the empty
/// line) plus exactly Content-Length body bytes; a header section without Content-Length is
/// ``SIPParseError/Code/missingContentLength`` and the connection cannot be resynchronised.
///
/// Keep-alives between messages (RFC 5626 §3.5.1; RFC 3261 §7.5):
///
/// ```
/// ping  =  CRLF CRLF   ; answer with a single CRLF   -> ``Event/ping``
/// pong  =  CRLF                                      -> ``Event/pong``
/// ```
///
/// A lone CRLF cannot be told from the first half of a ping until the next byte arrives, so it
/// is held back; set ``awaitingPong`` after sending a ping to have it reported at once. Lone CR
/// or LF bytes between messages are skipped.
///
/// Limits: a message whose header section or announced size exceeds
/// ``SIPParserLimits/maxMessageSize`` is ``SIPParseError/Code/messageTooLarge``; more than
/// `maxBufferedBytes` unconsumed bytes is ``SIPParseError/Code/streamBufferFull``. Any error is
/// final: the framer keeps throwing it, and the transport should close the connection.
///
/// Work is linear in the bytes received: the search for the end of the header section resumes
/// where it stopped, and consumed bytes are dropped in amortised constant time.
public struct SIPStreamFramer: Sendable {
    /// What the stream carried next.
    public enum Event: Sendable, Hashable {
        /// One complete message: start line, header section, empty line and body, exactly as
        /// received. Parse it with ``SIPMessage/init(parsing:limits:)``.
        case message([UInt8])
        /// A double-CRLF keep-alive ping: the transport should answer with CRLF (RFC 5626 §3.5.1).
        case ping
        /// A single-CRLF pong, the answer to a ping (RFC 5626 §3.5.1).
        case pong
    }

    public let limits: SIPParserLimits
    /// Most unconsumed bytes held at once. Default: twice ``SIPParserLimits/maxMessageSize``.
    public let maxBufferedBytes: Int
    /// Set after sending a ping: the next lone CRLF is reported as ``Event/pong`` without waiting
    /// to see whether a second CRLF follows. Cleared when a pong is reported.
    public var awaitingPong = false

    private var buffer: [UInt8] = []
    /// Start of the unconsumed bytes in `buffer`.
    private var head = 0
    /// Offset from `head` where the search for the next line end resumes.
    private var searchFrom = 0
    /// Offset from `head` of the start of the line being searched (past the start line once
    /// the first line end is seen).
    private var lineStart = 0
    /// Size of the current message (header section plus Content-Length) once its header
    /// section is complete, so that waiting for the body rescans nothing.
    private var pendingTotal: Int?
    private var failure: SIPParseError?
    /// The start of a message refused as ``SIPParseError/Code/messageTooLarge`` (its header
    /// section, or its first `maxMessageSize` bytes when the section has no end within them), so
    /// that the transport can still answer it before closing: 413 or 513 (RFC 3261 §21.4.11,
    /// §21.5.14) need only the Via, From, To, Call-ID and CSeq the header section carries. Nil
    /// until such a refusal; other failures leave it nil.
    public private(set) var refusedHeaderSection: [UInt8]?

    public init(limits: SIPParserLimits = .default, maxBufferedBytes: Int? = nil) {
        self.limits = limits
        let doubled = limits.maxMessageSize.multipliedReportingOverflow(by: 2)
        self.maxBufferedBytes = maxBufferedBytes ?? (doubled.overflow ? Int.max : doubled.partialValue)
    }

    /// Bytes received but not yet returned as an event.
    public var bufferedByteCount: Int { buffer.count - head }

    /// Adds bytes read from the connection.
    public mutating func append(_ bytes: some Sequence<UInt8>) throws(SIPParseError) {
        if let failure { throw failure }
        if head > 0, head >= 4096 || head * 2 >= buffer.count {
            buffer.removeSubrange(0..<head)
            head = 0
        }
        buffer.append(contentsOf: bytes)
        guard buffer.count - head <= maxBufferedBytes else {
            throw fail(
                SIPParseError(
                    .streamBufferFull, expected: "at most \(maxBufferedBytes) unconsumed bytes on the connection",
                    offset: maxBufferedBytes))
        }
    }

    /// The next complete event, or nil when more bytes are needed.
    public mutating func next() throws(SIPParseError) -> Event? {
        if let failure { throw failure }
        // Between messages: keep-alives and stray line ends.
        while searchFrom == 0, head < buffer.count {
            let available = buffer.count - head
            let b0 = buffer[head]
            if b0 == 0x0D {
                guard available >= 2 else { return nil }
                guard buffer[head + 1] == 0x0A else {
                    head += 1  // lone CR
                    continue
                }
                if available >= 4, buffer[head + 2] == 0x0D, buffer[head + 3] == 0x0A {
                    head += 4
                    return .ping
                }
                let maybePing = available == 2 || (available == 3 && buffer[head + 2] == 0x0D)
                if maybePing, !awaitingPong { return nil }
                head += 2
                awaitingPong = false
                return .pong
            }
            if b0 == 0x0A {
                head += 1  // lone LF
                continue
            }
            break
        }
        guard head < buffer.count else { return nil }
        return try nextMessage()
    }

    private mutating func fail(_ error: SIPParseError) -> SIPParseError {
        failure = error
        return error
    }

    /// Frames the message starting at `head`.
    private mutating func nextMessage() throws(SIPParseError) -> Event? {
        let available = buffer.count - head
        if let total = pendingTotal {
            return available >= total ? takeMessage(total) : nil
        }
        // Find the empty line that ends the header section, resuming where the last call stopped.
        var headerEnd: Int? = nil
        while headerEnd == nil {
            let from = head + searchFrom
            let lf = SIPByte.firstIndex(of: 0x0A, in: buffer, from: from, to: buffer.count)
            guard lf < buffer.count else {
                searchFrom = available
                guard available <= limits.maxMessageSize else {
                    refusedHeaderSection = Array(buffer[head..<(head + limits.maxMessageSize)])
                    throw fail(
                        SIPParseError(
                            .messageTooLarge,
                            expected: "the end of the header section within \(limits.maxMessageSize) bytes",
                            offset: limits.maxMessageSize))
                }
                return nil
            }
            let start = head + lineStart
            let contentEnd = (lf > start && buffer[lf - 1] == 0x0D) ? lf - 1 : lf
            if contentEnd == start, lineStart > 0 {
                headerEnd = lf + 1 - head
            }
            lineStart = lf + 1 - head
            searchFrom = lineStart
        }
        guard let headerLength = headerEnd else { return nil }
        guard headerLength <= limits.maxMessageSize else {
            refusedHeaderSection = Array(buffer[head..<(head + limits.maxMessageSize)])
            throw fail(
                SIPParseError(
                    .messageTooLarge, expected: "a message of at most \(limits.maxMessageSize) bytes",
                    offset: limits.maxMessageSize))
        }
        let bodyLength: Int
        do {
            bodyLength = try contentLength(headerLength: headerLength)
        } catch {
            throw fail(error)
        }
        let total = headerLength + bodyLength
        guard total <= limits.maxMessageSize else {
            refusedHeaderSection = Array(buffer[head..<(head + headerLength)])
            throw fail(
                SIPParseError(
                    .messageTooLarge,
                    expected: "a message of at most \(limits.maxMessageSize) bytes (Content-Length gives \(total))",
                    offset: headerLength, header: "Content-Length"))
        }
        guard available >= total else {
            pendingTotal = total
            return nil
        }
        return takeMessage(total)
    }

    private mutating func takeMessage(_ total: Int) -> Event {
        let message = Array(buffer[head..<(head + total)])
        head += total
        searchFrom = 0
        lineStart = 0
        pendingTotal = nil
        if head == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            head = 0
        }
        return .message(message)
    }

    /// The Content-Length of the complete header section `head..<head+headerLength`: one pass
    /// over its lines, folds included (RFC 3261 §7.3.1, §20.14; compact form `l`).
    private func contentLength(headerLength: Int) throws(SIPParseError) -> Int {
        let end = head + headerLength
        var i = SIPByte.firstIndex(of: 0x0A, in: buffer, from: head, to: end) + 1  // past the start line
        var value: Int? = nil
        var inContentLength = false
        var digits: Int? = nil
        var sawDigits = false
        var valueDone = false
        var fieldOffset = 0
        func finish(_ v: Int?, _ saw: Bool, _ at: Int) throws(SIPParseError) -> Int {
            guard saw, let v else {
                throw SIPParseError(
                    .invalidContentLength, expected: "Content-Length as 1*DIGIT", offset: at, header: "Content-Length")
            }
            return v
        }
        /// Ends a Content-Length field: its value, and no second one.
        func closeContentLength() throws(SIPParseError) {
            let v = try finish(digits, sawDigits, fieldOffset)
            guard value == nil else {
                throw SIPParseError(
                    .duplicateContentLength, expected: "one Content-Length header (framing is ambiguous)",
                    offset: fieldOffset, header: "Content-Length")
            }
            value = v
        }
        while i < end {
            let lf = SIPByte.firstIndex(of: 0x0A, in: buffer, from: i, to: end)
            let contentEnd = (lf > i && buffer[lf - 1] == 0x0D) ? lf - 1 : lf
            if contentEnd == i { break }  // the empty line
            var valueStart = i
            let continuation = buffer[i] == 0x20 || buffer[i] == 0x09
            if !continuation {
                if inContentLength { try closeContentLength() }
                inContentLength = false
                let colon = SIPByte.firstIndex(of: 0x3A, in: buffer, from: i, to: contentEnd)
                var nameEnd = colon
                while nameEnd > i, buffer[nameEnd - 1] == 0x20 || buffer[nameEnd - 1] == 0x09 { nameEnd -= 1 }
                if colon < contentEnd,
                    SIPByte.equalsIgnoringCase(buffer[i..<nameEnd], "content-length")
                        || SIPByte.equalsIgnoringCase(buffer[i..<nameEnd], "l")
                {
                    inContentLength = true
                    digits = 0
                    sawDigits = false
                    valueDone = false
                    fieldOffset = colon + 1 - head
                    valueStart = colon + 1
                }
            }
            if inContentLength {
                for k in valueStart..<contentEnd {
                    let b = buffer[k]
                    if SIPByte.isDigit(b), !valueDone, let d = digits {
                        let (m, o1) = d.multipliedReportingOverflow(by: 10)
                        let (a, o2) = m.addingReportingOverflow(Int(b - 0x30))
                        digits = (o1 || o2 || a > Int(Int32.max)) ? nil : a
                        sawDigits = true
                    } else if b == 0x20 || b == 0x09 {
                        if sawDigits { valueDone = true }
                    } else {
                        digits = nil
                        sawDigits = true
                    }
                }
                if sawDigits { valueDone = true }
            }
            i = lf + 1
        }
        if inContentLength { try closeContentLength() }
        guard let value else {
            throw SIPParseError(
                .missingContentLength,
                expected: "a Content-Length header (mandatory on stream transports, RFC 3261 §18.3)",
                offset: headerLength)
        }
        return value
    }
}
