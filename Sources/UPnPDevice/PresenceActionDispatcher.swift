public import XMLBridge

/// Runs a checked action invocation on a ``PresenceServiceBackend`` and returns the OUT
/// arguments, or the fault to answer (UPnP Device Architecture 1.1 §3.2.2).
public struct PresenceActionDispatcher: Sendable {
    public let backend: any PresenceServiceBackend
    /// The limits for parsing a payload argument that must be XML.
    public var payloadLimits: XMLLimits

    /// The IN arguments that carry XML documents and must be well-formed (ISO/IEC 29341-26-16
    /// §5.3.4 and §5.3.10 define them as XML; their schema, Annex B, is applied by the bridge).
    static let xmlArguments: Set<String> = ["UpdatedUserPresence", "UserPresenceInfo", "WatcherList"]

    public init(backend: any PresenceServiceBackend, payloadLimits: XMLLimits = XMLLimits(maxBytes: 60 << 10)) {
        self.backend = backend
        self.payloadLimits = payloadLimits
    }

    /// The OUT arguments of `request`, or its fault; `controlPoint` is the address it came from.
    public func perform(_ request: SOAPActionRequest, controlPoint: String = "") async
        -> Result<[String: String], UPnPFault>
    {
        if let fault = check(request) { return .failure(fault) }
        do {
            return .success(try await call(request, controlPoint: controlPoint))
        } catch let fault as UPnPFault {
            return .failure(fault)
        } catch {
            return .failure(.actionFailed)
        }
    }

    /// The fault for an argument value the service cannot take: `Expire` not an i4 (UDA 1.1 §2.5,
    /// Table 2-4: a 4-byte signed integer in decimal), or an XML argument that is not well-formed;
    /// both 600 Argument Value Invalid (UDA 1.1 §3.2.2).
    func check(_ request: SOAPActionRequest) -> UPnPFault? {
        if let expire = request.arguments["Expire"], Self.i4(expire) == nil { return .argumentValueInvalid }
        for (name, value) in request.arguments where Self.xmlArguments.contains(name) {
            do {
                _ = try XMLParser.events(Array(value.utf8), limits: payloadLimits)
            } catch {
                return .argumentValueInvalid
            }
        }
        return nil
    }

    /// A decimal i4, optionally signed, surrounding whitespace allowed.
    static func i4(_ text: String) -> Int32? {
        Int32(text.trimmingCharacters(in: " \t\r\n"))
    }

    private func call(_ request: SOAPActionRequest, controlPoint: String) async throws -> [String: String] {
        let args = request.arguments
        let expire = args["Expire"].flatMap(Self.i4) ?? 0
        switch request.action {
        case .getPresence:
            return ["UserPresence": try await backend.getPresence()]
        case .updatePresence:
            try await backend.updatePresence(args["UpdatedUserPresence"] ?? "")
        case .getContactPresence:
            return ["ContactPresence": try await backend.getContactPresence(targetContact: args["TargetContact"] ?? "")]
        case .getPresenceOfContactsUpdate:
            return ["ContactPresenceUpdate": try await backend.getPresenceOfContactsUpdate()]
        case .registerForContactPresence:
            let result = try await backend.registerForContactPresence(
                contact: args["Contact"] ?? "", expire: expire, controlPoint: controlPoint)
            return ["RegistrationResult": result]
        case .authorizePresenceReactive:
            try await backend.authorizePresenceReactive(
                contact: args["Contact"] ?? "", expire: expire, userPresenceInfo: args["UserPresenceInfo"] ?? "")
        case .authorizePresenceProactive:
            try await backend.authorizePresenceProactive(
                userPresenceInfo: args["UserPresenceInfo"] ?? "", expire: expire, watcherList: args["WatcherList"] ?? ""
            )
        default:
            throw UPnPFault.invalidAction
        }
        return [:]
    }
}
