public import SIPMessages

/// What the UAS core accepts: the TU's methods, URI schemes, extensions and body types.
public struct SIPUASCoreConfiguration: Sendable, Hashable {
    /// The methods the TU handles, in the order the Allow header lists them (RFC 3261 §20.5).
    public var allowedMethods: [SIPMethod]
    /// Methods this stack knows (RFC 3261 and the extensions a presence gateway meets); a method
    /// outside this set gets ``unrecognizedMethodStatus`` instead of 405 (§21.5.2: 501 "is the
    /// appropriate response when a UAS does not recognize the request method").
    public var recognizedMethods: Set<SIPMethod>
    /// 501 by default; 405 treats unknown methods like known but unsupported ones.
    public var unrecognizedMethodStatus: Int
    /// Request-URI schemes the UAS serves (§8.2.2.1); default sip, sips, tel.
    public var uriSchemes: Set<SIPURI.Scheme>
    /// Option tags the UAS understands (§8.2.2.3, listed in Supported).
    public var supportedExtensions: [String]
    /// Body media types (`type/subtype`, lowercase) the TU takes for each method; a method absent
    /// here uses ``defaultBodyTypes`` (§8.2.3).
    public var bodyTypes: [SIPMethod: [String]]
    /// Body media types for methods not in ``bodyTypes``.
    public var defaultBodyTypes: [String]
    /// Content codings the TU takes (`identity` means none, RFC 3261 §20.12).
    public var encodings: [String]
    /// Languages listed in Accept-Language of a 415.
    public var languages: [String]
    /// Media types the TU answers a method with, when its responses carry a body. A request whose
    /// Accept admits none of them gets 406 (RFC 3261 §21.4.7; RFC 4475 §3.3.15).
    public var responseBodyTypes: [SIPMethod: [String]]
    /// The host named in Warning headers (RFC 3261 §20.43 `warn-agent`).
    public var warningAgent: String

    public init(
        allowedMethods: [SIPMethod],
        recognizedMethods: Set<SIPMethod> = SIPUASCoreConfiguration.standardMethods,
        unrecognizedMethodStatus: Int = 501,
        uriSchemes: Set<SIPURI.Scheme> = [.sip, .sips, .tel],
        supportedExtensions: [String] = [],
        bodyTypes: [SIPMethod: [String]] = [:],
        defaultBodyTypes: [String] = [],
        encodings: [String] = ["identity"],
        languages: [String] = ["en"],
        responseBodyTypes: [SIPMethod: [String]] = [:],
        warningAgent: String = "presence-gateway"
    ) {
        self.allowedMethods = allowedMethods
        self.recognizedMethods = recognizedMethods
        self.unrecognizedMethodStatus = unrecognizedMethodStatus
        self.uriSchemes = uriSchemes
        self.supportedExtensions = supportedExtensions
        self.bodyTypes = bodyTypes
        self.defaultBodyTypes = defaultBodyTypes
        self.encodings = encodings
        self.languages = languages
        self.responseBodyTypes = responseBodyTypes
        self.warningAgent = warningAgent
    }

    /// RFC 3261 (§27.4), RFC 3262, 3311, 3428, 3515, 3903, 6086, 6665 and [MS-SIPRE] SERVICE and
    /// BENOTIFY.
    public static let standardMethods: Set<SIPMethod> = [
        .invite, .ack, .bye, .cancel, .options, .register, .prack, .subscribe, .notify, .publish,
        .message, .info, .update, .refer, .service, .benotify,
    ]

    /// The Allow header value.
    public var allowHeader: String { allowedMethods.map(\.rawValue).joined(separator: ", ") }

    /// The media types the TU takes in a request of `method`.
    public func acceptedBodyTypes(for method: SIPMethod) -> [String] { bodyTypes[method] ?? defaultBodyTypes }
}
