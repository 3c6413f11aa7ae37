/// What ``fuzzSIPMessage(_:)`` found.
public enum SIPFuzzOutcome: Sendable, Hashable {
    /// The input was rejected with this code (fine: most mutated inputs are).
    case rejected(SIPParseError.Code)
    /// Parsed; serialize → parse → serialize gave the same bytes and the same body.
    case stable
    /// Parsed, but the round trip was not stable: a bug. The string says what differed.
    case unstable(String)
}

/// Fuzz entry point: parses the bytes; if they parse, serializes, re-parses and checks the round
/// trip is stable (the second serialization equals the first, and the body is unchanged).
/// Never traps on any input; it reports instead (a libFuzzer harness can trap on `.unstable`).
@discardableResult
public func fuzzSIPMessage(_ bytes: [UInt8], limits: SIPParserLimits = .default) -> SIPFuzzOutcome {
    let first: SIPMessage
    do {
        first = try SIPMessage(parsing: bytes, limits: limits)
    } catch {
        return .rejected(error.code)
    }
    let once = first.serialized()
    let second: SIPMessage
    do {
        second = try SIPMessage(
            parsing: once,
            limits: SIPParserLimits(
                maxMessageSize: Int.max, maxHeaderCount: Int.max,
                maxLineLength: Int.max / 2, maxViaCount: Int.max,
                maxCommentDepth: limits.maxCommentDepth))
    } catch {
        return .unstable("re-parse failed: \(error)")
    }
    let twice = second.serialized()
    guard once == twice else { return .unstable("second serialization differs from the first") }
    guard first.body == second.body else { return .unstable("body changed") }
    guard first.headers.count + (first.headers.contains(.contentLength) ? 0 : 1) == second.headers.count else {
        return .unstable("header count changed")
    }
    return .stable
}
