public import XMLBridge

/// Reads and writes the SOAP 1.1 messages of UPnP control (UDA 1.1 §3.2).
public enum SOAPCodec {
    public static let envelopeNamespace = "http://schemas.xmlsoap.org/soap/envelope/"
    public static let encodingStyle = "http://schemas.xmlsoap.org/soap/encoding/"
    public static let controlNamespace = "urn:schemas-upnp-org:control-1-0"

    /// The limits of a control body: 64 KiB and shallow nesting (UDA 1.1 §3.2.1 bodies are flat).
    public static let defaultLimits = XMLLimits(maxBytes: 64 << 10, maxDepth: 16, maxElements: 256)

    /// Reads an action invocation for `serviceType` and checks it against the service's table.
    ///
    /// UDA 1.1 §3.2.1: SOAPACTION names the service type and action, quoted; the body element is
    /// that action in the service namespace; its children are the IN arguments, unqualified, in
    /// the order of the SCPD. A name no action has is 401 Invalid Action; missing, extra or
    /// reordered arguments are 402 Invalid Args (UDA 1.1 §3.2.2).
    public static func parseRequest(
        body: [UInt8], soapAction: String?, serviceType: String = PresenceService.serviceType,
        actions: [UPnPAction] = PresenceService.actions, limits: XMLLimits = defaultLimits
    ) -> Result<SOAPActionRequest, SOAPRequestError> {
        guard let named = soapActionName(soapAction, serviceType: serviceType),
            let action = actions.first(where: { $0.name.rawValue == named })
        else { return .failure(.fault(.invalidAction)) }
        let root: XMLElement
        do {
            root = try XMLParser.parse(body, limits: limits)
        } catch {
            return .failure(.badRequest("control body: \(error)"))
        }
        guard root.name == XMLName(envelopeNamespace, "Envelope"),
            let soapBody = root.element(XMLName(envelopeNamespace, "Body"))
        else { return .failure(.badRequest("no SOAP Envelope with a Body")) }
        let calls = Array(soapBody.elements)
        guard calls.count == 1, calls[0].name == XMLName(serviceType, named) else {
            return .failure(.fault(.invalidAction))
        }
        return arguments(of: calls[0], for: action).map { SOAPActionRequest(action: action.name, arguments: $0) }
    }

    /// The action name of a SOAPACTION field for `serviceType`; quotes are optional (some control
    /// points leave them out).
    static func soapActionName(_ field: String?, serviceType: String) -> String? {
        guard var value = field?.trimmingCharacters(in: " \t") else { return nil }
        if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
            value = String(value.dropFirst().dropLast())
        }
        let prefix = serviceType + "#"
        guard value.hasPrefix(prefix) else { return nil }
        let name = String(value.dropFirst(prefix.count))
        return name.isEmpty ? nil : name
    }

    /// The IN arguments of `call`, exactly those of `action` and in its order, each text only.
    static func arguments(of call: XMLElement, for action: UPnPAction) -> Result<[String: String], SOAPRequestError> {
        let given = Array(call.elements)
        let wanted = action.inArguments
        guard given.count == wanted.count else { return .failure(.fault(.invalidArgs)) }
        var values: [String: String] = [:]
        for (element, argument) in zip(given, wanted) {
            guard element.name == XMLName("", argument.name), !element.elements.contains(where: { _ in true }) else {
                return .failure(.fault(.invalidArgs))
            }
            values[argument.name] = element.text
        }
        return .success(values)
    }

    /// The success response (UDA 1.1 §3.2.2): `<u:actionNameResponse>` with the OUT arguments in
    /// the SCPD's order.
    public static func response(
        action: UPnPAction, values: [String: String], serviceType: String = PresenceService.serviceType
    ) -> [UInt8] {
        var call = XMLElement(XMLName(serviceType, action.name.rawValue + "Response"), prefix: "u")
        for argument in action.outArguments {
            call.append(XMLElement(XMLName("", argument.name), children: [.text(values[argument.name] ?? "")]))
        }
        return envelope(containing: call)
    }

    /// The error response (UDA 1.1 §3.2.2), sent with HTTP 500:
    /// `s:Fault` with faultcode `s:Client`, faultstring `UPnPError`, and the `UPnPError` detail.
    public static func fault(_ fault: UPnPFault) -> [UInt8] {
        let ns = envelopeNamespace
        let error = XMLElement(
            XMLName(controlNamespace, "UPnPError"),
            children: [
                .element(XMLElement(XMLName(controlNamespace, "errorCode"), children: [.text(String(fault.code))])),
                .element(
                    XMLElement(XMLName(controlNamespace, "errorDescription"), children: [.text(fault.errorDescription)])
                ),
            ])
        let body = XMLElement(
            XMLName(ns, "Fault"), prefix: "s")
        var faultElement = body
        faultElement.append(XMLElement(XMLName("", "faultcode"), children: [.text("s:Client")]))
        faultElement.append(XMLElement(XMLName("", "faultstring"), children: [.text("UPnPError")]))
        faultElement.append(XMLElement(XMLName("", "detail"), children: [.element(error)]))
        return envelope(containing: faultElement)
    }

    static func envelope(containing content: XMLElement) -> [UInt8] {
        let ns = envelopeNamespace
        let body = XMLElement(XMLName(ns, "Body"), children: [.element(content)], prefix: "s")
        let envelope = XMLElement(
            XMLName(ns, "Envelope"),
            attributes: [XMLAttribute(XMLName(ns, "encodingStyle"), encodingStyle, prefix: "s")],
            children: [.element(body)], prefix: "s", namespaceDeclarations: [(prefix: "s", uri: ns)])
        return XMLWriter(indent: nil, declaration: true).bytes(envelope)
    }
}
