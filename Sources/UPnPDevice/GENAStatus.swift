/// The HTTP status of a refused GENA request (UDA 1.1 §4.1.2 to §4.1.4).
public struct GENAStatus: Error, Hashable, Sendable, CustomStringConvertible {
    public var code: Int
    public var reason: String

    public init(code: Int, reason: String) {
        self.code = code
        self.reason = reason
    }

    public var description: String { "\(code) \(reason)" }

    /// SID together with CALLBACK or NT.
    public static let badRequest = GENAStatus(code: 400, reason: "Bad Request")
    public static let methodNotAllowed = GENAStatus(code: 405, reason: "Method Not Allowed")
    /// A missing or bad CALLBACK or NT, an unknown SID, a callback not allowed.
    public static let preconditionFailed = GENAStatus(code: 412, reason: "Precondition Failed")
    /// The publisher cannot take another subscription (UDA 1.1 §4.1.2: 5xx).
    public static let serviceUnavailable = GENAStatus(code: 503, reason: "Service Unavailable")
}
