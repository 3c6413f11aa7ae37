import Testing
import XMLBridge

@testable import UPnPDevice

/// SOAP control, UPnP Device Architecture 1.1 §3.2.1 (request) and §3.2.2 (response, faults).
@Suite struct SOAPTests {
    static let service = "urn:schemas-upnp-org:service:Presence:1"

    static func envelope(_ action: String, _ arguments: String, namespace: String = service) -> [UInt8] {
        Array(
            """
            <?xml version="1.0"?>
            <soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"
                soap:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/">
              <soap:Body><m:\(action) xmlns:m="\(namespace)">\(arguments)</m:\(action)></soap:Body>
            </soap:Envelope>
            """.utf8)
    }

    static func parse(_ action: String, _ arguments: String, soapAction: String? = nil) -> Result<
        SOAPActionRequest, SOAPRequestError
    > {
        SOAPCodec.parseRequest(
            body: envelope(action, arguments), soapAction: soapAction ?? "\"\(service)#\(action)\"")
    }

    /// §3.2.1: any prefix, the arguments unqualified and in order.
    @Test func validRequestIsRead() throws {
        let request = try Self.parse(
            "RegisterForContactPresence", "<Contact>sip:bob@example.com</Contact><Expire>3600</Expire>"
        ).get()
        #expect(request.action == .registerForContactPresence)
        #expect(request.arguments == ["Contact": "sip:bob@example.com", "Expire": "3600"])
    }

    /// An XML payload travels escaped as the argument's text.
    @Test func escapedPayloadIsText() throws {
        let request = try Self.parse(
            "UpdatePresence", "<UpdatedUserPresence>&lt;presence status=\"open\"/&gt;</UpdatedUserPresence>"
        ).get()
        #expect(request.arguments["UpdatedUserPresence"] == "<presence status=\"open\"/>")
    }

    /// §3.2.2: 401 Invalid Action for a name the service does not have, a SOAPACTION of another
    /// service, or a body element that is not the action SOAPACTION names.
    @Test func unknownActionIsInvalidAction() {
        #expect(Self.parse("Reboot", "") == .failure(.fault(.invalidAction)))
        #expect(
            Self.parse("GetPresence", "", soapAction: "\"urn:schemas-upnp-org:service:Messaging:1#GetPresence\"")
                == .failure(.fault(.invalidAction)))
        #expect(
            Self.parse("GetPresence", "", soapAction: "\"\(Self.service)#UpdatePresence\"")
                == .failure(.fault(.invalidAction)))
        #expect(
            SOAPCodec.parseRequest(
                body: Self.envelope("GetPresence", "", namespace: "urn:other"),
                soapAction: "\"\(Self.service)#GetPresence\"")
                == .failure(.fault(.invalidAction)))
        #expect(
            SOAPCodec.parseRequest(body: Self.envelope("GetPresence", ""), soapAction: nil)
                == .failure(.fault(.invalidAction)))
    }

    /// §3.2.2: 402 Invalid Args for missing, extra, reordered or misnamed IN arguments.
    @Test(arguments: [
        "<Contact>a</Contact>",
        "<Expire>1</Expire><Contact>a</Contact>",
        "<Contact>a</Contact><Expire>1</Expire><Extra/>",
        "<contact>a</contact><Expire>1</Expire>",
        "<Contact><b>a</b></Contact><Expire>1</Expire>",
    ])
    func wrongArgumentsAreInvalidArgs(arguments: String) {
        #expect(Self.parse("RegisterForContactPresence", arguments) == .failure(.fault(.invalidArgs)))
    }

    /// SOAPACTION without quotes is accepted (control points in the field leave them out).
    @Test func unquotedSOAPActionIsAccepted() throws {
        let request = try Self.parse("GetPresence", "", soapAction: "\(Self.service)#GetPresence").get()
        #expect(request.action == .getPresence)
    }

    @Test(arguments: [
        "", "not xml at all", "<a><b></a>", "<Envelope/>",
        "<!DOCTYPE x [<!ENTITY e \"e\">]><s:Envelope xmlns:s=\"http://schemas.xmlsoap.org/soap/envelope/\"/>",
    ])
    func garbageIsABadRequest(body: String) {
        let result = SOAPCodec.parseRequest(body: Array(body.utf8), soapAction: "\"\(Self.service)#GetPresence\"")
        guard case .failure(.badRequest) = result else {
            Issue.record("expected a bad request, got \(result)")
            return
        }
    }

    @Test func oversizedBodyIsABadRequest() {
        let big = "<UpdatedUserPresence>" + String(repeating: "x", count: 70_000) + "</UpdatedUserPresence>"
        guard case .failure(.badRequest) = Self.parse("UpdatePresence", big) else {
            Issue.record("a body over 64 KiB was read")
            return
        }
    }

    /// §3.2.2: the response element is `actionNameResponse` in the service namespace, with the OUT
    /// arguments unqualified.
    @Test func responseCarriesOutArguments() throws {
        let action = try #require(PresenceService.action(named: "GetPresence"))
        let body = SOAPCodec.response(action: action, values: ["UserPresence": "<p a=\"1\"/>"])
        let root = try XMLParser.parse(body)
        let soapBody = try #require(root.element(XMLName(SOAPCodec.envelopeNamespace, "Body")))
        let response = try #require(soapBody.element(XMLName(Self.service, "GetPresenceResponse")))
        #expect(response.element(XMLName("", "UserPresence"))?.text == "<p a=\"1\"/>")
    }

    /// §3.2.2: a fault is s:Fault with faultcode s:Client, faultstring UPnPError and a UPnPError
    /// detail in urn:schemas-upnp-org:control-1-0 with errorCode and errorDescription.
    @Test func faultHasUPnPErrorDetail() throws {
        let root = try XMLParser.parse(SOAPCodec.fault(.invalidArgs))
        let fault = try #require(
            root.element(XMLName(SOAPCodec.envelopeNamespace, "Body"))?.element(
                XMLName(SOAPCodec.envelopeNamespace, "Fault")))
        #expect(fault.element(XMLName("", "faultcode"))?.text == "s:Client")
        #expect(fault.element(XMLName("", "faultstring"))?.text == "UPnPError")
        let error = try #require(
            fault.element(XMLName("", "detail"))?.element(XMLName("urn:schemas-upnp-org:control-1-0", "UPnPError")))
        #expect(error.element(XMLName("urn:schemas-upnp-org:control-1-0", "errorCode"))?.text == "402")
        #expect(error.element(XMLName("urn:schemas-upnp-org:control-1-0", "errorDescription"))?.text == "Invalid Args")
    }
}

/// The checks the dispatcher makes before calling the backend.
@Suite struct PresenceActionDispatcherTests {
    let backend = InMemoryPresenceBackend()

    /// UDA 1.1 §2.5: i4 is a signed 32-bit integer; anything else is 600 Argument Value Invalid.
    @Test(arguments: ["soon", "", "4294967296", "1.5"])
    func expireMustBeAnI4(expire: String) async {
        let dispatcher = PresenceActionDispatcher(backend: backend)
        let request = SOAPActionRequest(
            action: .registerForContactPresence, arguments: ["Contact": "a", "Expire": expire])
        #expect(await dispatcher.perform(request) == .failure(.argumentValueInvalid))
    }

    /// The XML payloads of UpdatePresence and AuthorizePresence* must be well-formed.
    @Test(arguments: [
        ("UpdatePresence", ["UpdatedUserPresence": "<presence"]),
        ("AuthorizePresenceReactive", ["Contact": "a", "Expire": "1", "UserPresenceInfo": "plain text"]),
        ("AuthorizePresenceProactive", ["UserPresenceInfo": "<p/>", "Expire": "1", "WatcherList": "<a></b>"]),
    ])
    func payloadsMustBeWellFormed(action: String, arguments: [String: String]) async {
        let dispatcher = PresenceActionDispatcher(backend: backend)
        let request = SOAPActionRequest(action: UPnPActionName(action), arguments: arguments)
        #expect(await dispatcher.perform(request) == .failure(.argumentValueInvalid))
    }

    @Test func updateReachesTheBackend() async throws {
        let dispatcher = PresenceActionDispatcher(backend: backend)
        let update = SOAPActionRequest(action: .updatePresence, arguments: ["UpdatedUserPresence": "<p s='1'/>"])
        #expect(try await dispatcher.perform(update).get() == [:])
        let get = SOAPActionRequest(action: .getPresence, arguments: [:])
        #expect(try await dispatcher.perform(get).get() == ["UserPresence": "<p s='1'/>"])
    }

    /// A backend's own fault is answered as it is; another error becomes 501 Action Failed.
    @Test func backendFaultsPassThrough() async {
        let dispatcher = PresenceActionDispatcher(backend: backend)
        let request = SOAPActionRequest(action: .getContactPresence, arguments: ["TargetContact": "sip:nobody@x"])
        #expect(await dispatcher.perform(request) == .failure(.argumentValueInvalid))
    }
}
