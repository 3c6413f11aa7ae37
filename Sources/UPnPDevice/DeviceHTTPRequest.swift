/// An HTTP request as the router sees it: the whole body read, the peer's IP address.
public struct DeviceHTTPRequest: Sendable {
    public var method: String
    public var path: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    public var remoteAddress: String

    public init(
        method: String, path: String, headers: [(name: String, value: String)], body: [UInt8], remoteAddress: String
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// The first value of a header field, its name matched case-insensitively.
    public func field(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}
