public import NIOCore

/// The limits and timeouts of eventing.
public struct GENAConfiguration: Sendable, Hashable {
    /// Granted when a subscriber asks for none (UDA 1.1 §4.1.2 recommends at least 1800 s).
    public var defaultTimeout: Int
    /// The shortest and longest durations granted; `Second-infinite` gets the longest.
    public var minimumTimeout: Int
    public var maximumTimeout: Int
    /// Subscriptions one control point (one IP address) may hold, and all of them together.
    public var maxPerControlPoint: Int
    public var maxSubscriptions: Int
    /// Which CALLBACK URLs are accepted.
    public var callbackPolicy: CallbackPolicy
    /// At most one event per variable in this interval (ISO/IEC 29341-26-16 §5.4, Table 2).
    public var moderationInterval: TimeAmount

    public init(
        defaultTimeout: Int = 1800, minimumTimeout: Int = 60, maximumTimeout: Int = 86_400, maxPerControlPoint: Int = 8,
        maxSubscriptions: Int = 128, callbackPolicy: CallbackPolicy = CallbackPolicy(),
        moderationInterval: TimeAmount = .milliseconds(200)
    ) {
        self.defaultTimeout = defaultTimeout
        self.minimumTimeout = minimumTimeout
        self.maximumTimeout = maximumTimeout
        self.maxPerControlPoint = maxPerControlPoint
        self.maxSubscriptions = maxSubscriptions
        self.callbackPolicy = callbackPolicy
        self.moderationInterval = moderationInterval
    }
}
