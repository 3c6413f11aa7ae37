/// The Subscription-State header (RFC 6665 §8.2.3, was RFC 3265 §7.2.4).
///
/// ```
/// Subscription-State   = "Subscription-State" HCOLON substate-value *( SEMI subexp-params )
/// substate-value       = "active" / "pending" / "terminated" / extension-substate
/// subexp-params        =   ("reason" EQUAL event-reason-value)
///                        / ("expires" EQUAL delta-seconds)
///                        / ("retry-after" EQUAL delta-seconds)
///                        / generic-param
/// ```
public struct SIPSubscriptionState: Sendable, Hashable, CustomStringConvertible {
    /// substate-value, lowercased. Open vocabulary.
    public struct State: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue.lowercased() }
        public var description: String { rawValue }
        public static let active = State(rawValue: "active")
        public static let pending = State(rawValue: "pending")
        public static let terminated = State(rawValue: "terminated")
    }

    public var state: State
    /// All parameters in order; the properties below read and write them.
    public var parameters: SIPParameters

    public init(state: State, expires: UInt32? = nil, reason: String? = nil, retryAfter: UInt32? = nil) {
        self.state = state
        self.parameters = []
        self.reason = reason
        self.expires = expires
        self.retryAfter = retryAfter
    }

    /// `expires` in seconds (validated as delta-seconds when parsed).
    public var expires: UInt32? {
        get { parameters.value("expires").flatMap { UInt32($0) } }
        set { if let newValue { parameters.set("expires", String(newValue)) } else { parameters.remove("expires") } }
    }
    /// `reason` (RFC 6665 §8.2.3: deactivated, probation, rejected, timeout, giveup, noresource, invariant).
    public var reason: String? {
        get { parameters.value("reason") }
        set { if let newValue { parameters.set("reason", newValue) } else { parameters.remove("reason") } }
    }
    /// `retry-after` in seconds.
    public var retryAfter: UInt32? {
        get { parameters.value("retry-after").flatMap { UInt32($0) } }
        set {
            if let newValue {
                parameters.set("retry-after", String(newValue))
            } else {
                parameters.remove("retry-after")
            }
        }
    }

    public init(_ text: String) throws(SIPParseError) {
        let bytes = Array(text.utf8)
        self = try SIPSubscriptionState.parse(bytes[...], header: "Subscription-State")
    }

    public var description: String {
        var out = Array(state.rawValue.utf8)
        parameters.write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func parse(_ bytes: ArraySlice<UInt8>, header: String?) throws(SIPParseError) -> SIPSubscriptionState {
        var s = SIPScanner(bytes, header: header, code: .invalidHeaderValue)
        s.skipLWS()
        let t = try s.token("substate-value (active, pending, terminated or token)")
        var params = SIPParameters()
        try s.parameters(into: &params)
        try s.expectEnd("';' parameter or end of Subscription-State")
        for name in ["expires", "retry-after"] {
            if let v = params.value(name) {
                _ = try SIPByte.parseNumber(ArraySlice(v.utf8), max: UInt64(UInt32.max), what: name, header: header)
            }
        }
        var st = SIPSubscriptionState(state: State(rawValue: SIPByte.string(t)))
        st.parameters = params
        return st
    }
}
