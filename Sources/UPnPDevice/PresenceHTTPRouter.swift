/// Answers the device's HTTP requests: descriptions (UDA 1.1 §2), control (§3), eventing (§4).
/// Thin over the pure pieces (``SOAPCodec``, ``GENARequest``) and the ``EventPublisher``.
public struct PresenceHTTPRouter: Sendable {
    public let deviceDescription: [UInt8]
    public let serviceDescription: [UInt8]
    public let dispatcher: PresenceActionDispatcher
    public let publisher: EventPublisher
    /// SERVER: `OS/version UPnP/1.1 product/version`.
    public let server: String

    public init(
        identity: DeviceIdentity, dispatcher: PresenceActionDispatcher, publisher: EventPublisher, server: String
    ) {
        deviceDescription = DescriptionDocuments.deviceDescription(identity)
        serviceDescription = DescriptionDocuments.serviceDescription(configID: identity.configID)
        self.dispatcher = dispatcher
        self.publisher = publisher
        self.server = server
    }

    /// The response, and the SID of a new subscription whose initial event is due once the
    /// response has gone out (UDA 1.1 §4.3.2: the initial event message follows the response).
    public func respond(to request: DeviceHTTPRequest) async -> (DeviceHTTPResponse, newSubscription: String?) {
        switch (request.path, request.method) {
        case (PresenceDevicePaths.description, "GET"), (PresenceDevicePaths.description, "HEAD"):
            return (xml(deviceDescription), nil)
        case (PresenceDevicePaths.scpd, "GET"), (PresenceDevicePaths.scpd, "HEAD"):
            return (xml(serviceDescription), nil)
        case (PresenceDevicePaths.control, "POST"):
            return (await control(request), nil)
        case (PresenceDevicePaths.event, "SUBSCRIBE"), (PresenceDevicePaths.event, "UNSUBSCRIBE"):
            return await event(request)
        case (PresenceDevicePaths.description, _), (PresenceDevicePaths.scpd, _), (PresenceDevicePaths.control, _),
            (PresenceDevicePaths.event, _):
            return (.plain(405, "Method Not Allowed"), nil)
        default:
            return (.plain(404, "Not Found"), nil)
        }
    }

    private func xml(_ body: [UInt8]) -> DeviceHTTPResponse {
        DeviceHTTPResponse(status: 200, reason: "OK", headers: [DeviceHTTPResponse.xmlContentType], body: body)
    }

    /// UDA 1.1 §3.2.2: 200 with the OUT arguments, or 500 with a UPnP fault; EXT and SERVER on both.
    func control(_ request: DeviceHTTPRequest) async -> DeviceHTTPResponse {
        let headers = [DeviceHTTPResponse.xmlContentType, ("EXT", ""), ("SERVER", server)]
        let fault: UPnPFault
        switch SOAPCodec.parseRequest(body: request.body, soapAction: request.field("SOAPACTION")) {
        case .failure(.badRequest):
            return .plain(400, "Bad Request")
        case .failure(.fault(let refused)):
            fault = refused
        case .success(let call):
            switch await dispatcher.perform(call, controlPoint: request.remoteAddress) {
            case .success(let values):
                guard let action = PresenceService.action(named: call.action.rawValue) else {
                    fault = .invalidAction
                    break
                }
                let body = SOAPCodec.response(action: action, values: values)
                return DeviceHTTPResponse(status: 200, reason: "OK", headers: headers, body: body)
            case .failure(let refused):
                fault = refused
            }
        }
        return DeviceHTTPResponse(
            status: 500, reason: "Internal Server Error", headers: headers, body: SOAPCodec.fault(fault))
    }

    /// UDA 1.1 §4.1.2 to §4.1.4: SID and TIMEOUT on a granted SUBSCRIBE, an empty 200 on UNSUBSCRIBE.
    func event(_ request: DeviceHTTPRequest) async -> (DeviceHTTPResponse, newSubscription: String?) {
        let parsed = GENARequest.parse(method: request.method, headers: request.headers)
        guard case .success(let gena) = parsed else {
            if case .failure(let status) = parsed { return (.plain(status.code, status.reason), nil) }
            return (.plain(400, "Bad Request"), nil)
        }
        switch await publisher.handle(gena, controlPoint: request.remoteAddress) {
        case .failure(let status):
            return (.plain(status.code, status.reason), nil)
        case .success(let granted):
            // UDA 1.1 §4.1.2: DATE is recommended, SERVER required in the SUBSCRIBE response.
            var headers: [(name: String, value: String)] = [("DATE", httpDate()), ("SERVER", server)]
            if let seconds = granted.seconds {
                headers += [("SID", granted.sid), ("TIMEOUT", "Second-\(seconds)")]
            }
            let isNew: Bool
            if case .subscribe = gena { isNew = true } else { isNew = false }
            return (DeviceHTTPResponse(status: 200, reason: "OK", headers: headers), isNew ? granted.sid : nil)
        }
    }
}
