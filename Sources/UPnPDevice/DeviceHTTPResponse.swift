/// An HTTP response of the device.
public struct DeviceHTTPResponse: Sendable {
    public var status: Int
    public var reason: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, reason: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    static let xmlContentType = ("CONTENT-TYPE", "text/xml; charset=\"utf-8\"")

    static func plain(_ status: Int, _ reason: String) -> DeviceHTTPResponse {
        DeviceHTTPResponse(status: status, reason: reason)
    }
}
