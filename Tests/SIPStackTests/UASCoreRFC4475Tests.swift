import Foundation
import SIPMessages
import SIPStack
import Testing

/// RFC 4475 vectors from Vectors/rfc4475 (found from this file's path, like the SIPMessages tests).
enum RFC4475 {
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors/rfc4475")

    static func bytes(_ file: String) -> [UInt8] {
        (try? Data(contentsOf: root.appendingPathComponent(file))).map { [UInt8]($0) } ?? []
    }

    static func message(_ file: String) throws -> SIPMessage { try SIPMessage(parsing: bytes(file)) }

    /// Files of manifest.tsv whose class is `kind` and which parse.
    static func parsingFiles(ofClass kind: String) -> [String] {
        let text = String(decoding: bytes("manifest.tsv"), as: UTF8.self)
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let c = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return c.count == 5 && c[2] == kind && c[3] == "parse-ok" ? c[0] : nil
        }
    }
}

/// RFC 4475 §3.3 (application-layer semantics): what its commentary asks of a UAS, checked on the
/// UAS core.
@Suite struct UASCoreRFC4475Tests {
    /// The gateway: presence methods; no REGISTER, no INVITE.
    static let gateway = SIPUASCoreConfiguration(allowedMethods: [.subscribe, .notify, .message, .publish, .options],
                                                 defaultBodyTypes: ["application/pidf+xml"])
    /// A registrar, for the commentary addressed to one.
    static let registrar = SIPUASCoreConfiguration(allowedMethods: [.register, .options])
    /// A user agent that takes calls with SDP, for the commentary addressed to endpoints that do.
    static let callee = SIPUASCoreConfiguration(allowedMethods: [.invite, .ack, .cancel, .bye, .options],
                                                bodyTypes: [.invite: ["application/sdp"]],
                                                responseBodyTypes: [.invite: ["application/sdp"]])

    /// What the gateway's UAS core answers each §3.3 request that parses (nil: handed on).
    static let gatewayExpectations: [String: Int?] = [
        "unkscm.dat": 416,   // §3.3.2 "should respond with a 416 (Unsupported URI Scheme)"
        "novelsc.dat": 416,  // §3.3.3 "treat it as unknown and return a 416"
        "unksm2.dat": 405,   // §3.3.4 REGISTER: the gateway is no registrar (§8.2.1 comes first)
        "bext01.dat": 420,   // §3.3.5 "respond with a 420 Bad Extension"
        "invut.dat": 405,    // §3.3.6 INVITE: method inspection precedes content processing
        "regaut01.dat": 405, // §3.3.7 "Endpoints choosing not to act as registrars ... A 405"
        "bcast.dat": nil,    // §3.3.10 a response: the transaction layer's (TransactionRFC4475Tests)
        "zeromf.dat": nil,   // §3.3.11 "process the request as if the Max-Forwards ... were still positive"
        "cparam01.dat": 405, // §3.3.12 REGISTER
        "cparam02.dat": 405, // §3.3.13 REGISTER
        "regescrt.dat": 405, // §3.3.14 REGISTER
        "sdp01.dat": 405,    // §3.3.15 INVITE
    ]

    private func check(_ file: String, _ c: SIPUASCoreConfiguration) throws -> SIPResponse? {
        let request = try #require(try RFC4475.message(file).request)
        return SIPUASCore.check(request, configuration: c, toTag: "t").response
    }

    @Test func everyParsingApplicationLayerVectorHasAnExpectation() {
        #expect(Set(RFC4475.parsingFiles(ofClass: "application-layer")) == Set(Self.gatewayExpectations.keys))
    }

    @Test(arguments: RFC4475.parsingFiles(ofClass: "application-layer").filter { $0 != "bcast.dat" })
    func theGatewaysUASCoreAnswersAsTheCommentaryAsks(_ file: String) throws {
        let expected = Self.gatewayExpectations[file] ?? nil
        let response = try check(file, Self.gateway)
        #expect(response?.statusCode == expected, "\(file)")
        if expected == 405 {
            #expect(response?.headers[.allow] == "SUBSCRIBE, NOTIFY, MESSAGE, PUBLISH, OPTIONS")
        }
    }

    @Test func unknownRequestURISchemeGets416() throws {
        // §3.3.2: "An element without knowledge of this scheme should respond with a 416".
        #expect(try check("unkscm.dat", Self.gateway)?.statusCode == 416)
        #expect(try check("unkscm.dat", Self.registrar)?.statusCode == 416)
        // §3.3.3: soap.beep is registered but never meaningful here.
        #expect(try check("novelsc.dat", Self.gateway)?.statusCode == 416)
    }

    @Test func aRegistrarRejectsAToThatIsNoSIPAddressOfRecordWith400() throws {
        // §3.3.4: "A registrar would reject this request with a 400 Bad Request response, since
        // the To: header field is required to contain a SIP or SIPS URI as an AOR."
        #expect(try check("unksm2.dat", Self.registrar)?.statusCode == 400)
    }

    @Test func unsupportedRequireTagsAreListedInUnsupported() throws {
        // §3.3.5: 420 "containing an Unsupported header field listing these features from either
        // the Require or Proxy-Require header field, depending on the role" — a UAS: Require.
        let r = try #require(try check("bext01.dat", Self.gateway))
        #expect(r.statusCode == 420)
        #expect(r.headers[.unsupported] == "nothingSupportsThis, nothingSupportsThisEither")
    }

    @Test func anEndpointTakingCallsRejectsAnUnknownBodyWith415() throws {
        // §3.3.6: "An endpoint receiving this request would reject it with a 415 Unsupported
        // Media Type error."
        let r = try #require(try check("invut.dat", Self.callee))
        #expect(r.statusCode == 415)
        #expect(r.headers[.accept] == "application/sdp")
        #expect(r.headers["Accept-Encoding"] != nil)
        #expect(r.headers["Accept-Language"] != nil)
    }

    @Test func anUnknownAuthorizationSchemeIsNotTheCoresBusiness() throws {
        // §3.3.7: a registrar that does not authenticate ignores it; one that does challenges
        // (the TU's job); a non-registrar answers 405.
        #expect(try check("regaut01.dat", Self.registrar) == nil)
        #expect(try check("regaut01.dat", Self.gateway)?.statusCode == 405)
    }

    @Test func maxForwardsZeroIsProcessedByAnEndpoint() throws {
        // §3.3.11: "An endpoint should process the request as if the Max-Forwards field value
        // were still positive."
        #expect(try check("zeromf.dat", Self.gateway) == nil)
    }

    @Test func registrationsWithUnusualContactsReachTheRegistrar() throws {
        // §3.3.12 - §3.3.14: "This REGISTER should succeed" — the core hands them on, with the
        // Contact parameters where the RFC says they belong.
        for file in ["cparam01.dat", "cparam02.dat", "regescrt.dat"] {
            #expect(try check(file, Self.registrar) == nil, "\(file)")
        }
        let c1 = try #require(try RFC4475.message("cparam01.dat").headers.contact.first)
        #expect(c1.parameters.contains("unknownparam"))
        #expect(c1.address?.uri.parameters.contains("unknownparam") == false)
        let c2 = try #require(try RFC4475.message("cparam02.dat").headers.contact.first)
        #expect(c2.address?.uri.parameters.contains("unknownparam") == true)
    }

    @Test func acceptWithoutSDPGets406WithWarning399FromACallee() throws {
        // §3.3.15: "could respond with a 406 Not Acceptable, with a Warning/399 indicating that a
        // response cannot be formulated in the formats offered in the Accept header field."
        let r = try #require(try check("sdp01.dat", Self.callee))
        #expect(r.statusCode == 406)
        #expect(r.headers[.warning]?.hasPrefix("399 ") == true)
    }
}
