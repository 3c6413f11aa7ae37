public import SIPMessages

/// The checks of RFC 3261 §8.2 a UAS core applies before a request reaches the TU, in the RFC's
/// order: method inspection (§8.2.1), To and Request-URI (§8.2.2.1), merged requests (§8.2.2.2),
/// Require (§8.2.2.3), content processing (§8.2.3), and the application-layer answers RFC 4475
/// §3.3 assigns to a UAS.
///
/// "Note that every response to a request ... MUST follow these rules in the order given" —
/// the first check that fails decides the response.
public enum SIPUASCore {
    /// The outcome of ``check(_:configuration:toTag:isMerged:)``.
    public enum Verdict: Sendable, Hashable {
        /// Hand the request to the TU.
        case accept
        /// Answer with this response; the TU never sees the request.
        case reject(SIPResponse)

        public var response: SIPResponse? {
            if case .reject(let r) = self { return r }
            return nil
        }
    }

    /// Checks `request` in RFC 3261 §8.2 order. `toTag` goes into the To of a rejection (§8.2.6.2);
    /// `isMerged` answers §8.2.2.2 from the transaction table (it is asked first, and the To tag
    /// is looked at only when it says yes: a request with a To tag is never merged).
    ///
    /// RFC 4475 §3.3 commentary this applies: §3.3.2 and §3.3.3 (an unknown or atypical
    /// Request-URI scheme → 416), §3.3.4 (a registrar gets a To that is no SIP or SIPS URI → 400),
    /// §3.3.5 (Require → 420 with Unsupported listing the Require tags; Proxy-Require is for
    /// proxies and ignored, RFC 3261 §20.29), §3.3.6 (unknown Content-Type → 415), §3.3.7 (an
    /// endpoint that is no registrar answers REGISTER with 405), §3.3.11 (Max-Forwards 0: "An
    /// endpoint should process the request as if the Max-Forwards field value were still
    /// positive" — no check here), §3.3.15 (Accept excludes every type the TU answers with → 406
    /// with a Warning 399).
    public static func check(
        _ request: SIPRequest, configuration c: SIPUASCoreConfiguration, toTag: String? = nil,
        isMerged: (SIPRequest) -> Bool = { _ in false }
    ) -> Verdict {
        func reject(_ code: Int, _ extra: SIPHeaders = []) -> Verdict {
            .reject(SIPResponse(replyingTo: request, statusCode: code, toTag: toTag, headers: extra))
        }

        // §8.2.1: "If the UAS recognizes but does not support the method of a request, it MUST
        // generate a 405 (Method Not Allowed) response. ... The UAS MUST also add an Allow header
        // field to the 405 (Method Not Allowed) response."
        if !c.allowedMethods.contains(request.method) {
            let code = c.recognizedMethods.contains(request.method) ? 405 : c.unrecognizedMethodStatus
            return reject(code, [(.allow, c.allowHeader)])
        }

        // §8.2.2.1: "If the Request-URI uses a scheme not supported by the UAS, it SHOULD reject
        // the request with a 416 (Unsupported URI Scheme) response."
        if !c.uriSchemes.contains(request.uri.scheme) {
            return reject(416)
        }
        // RFC 4475 §3.3.4: "A registrar would reject this request with a 400 Bad Request
        // response, since the To: header field is required to contain a SIP or SIPS URI as an
        // AOR" (RFC 3261 §10.2: "The To header field contains the address of record").
        if request.method == .register {
            guard let to = try? request.headers.to, to.uri.isSIP else {
                return .reject(
                    SIPResponse(
                        replyingTo: request, statusCode: 400,
                        reasonPhrase: "Bad Request (To is no SIP or SIPS address of record)",
                        toTag: toTag))
            }
        }

        // §8.2.2.2: "If the request has no tag in the To header field, the UAS core MUST check
        // the request against ongoing transactions. If the From tag, Call-ID, and CSeq exactly
        // match those associated with an ongoing transaction, but the request does not match
        // that transaction (based on the matching rules in Section 17.2.3), the UAS core SHOULD
        // generate a 482 (Loop Detected) response and pass it to the server transaction."
        if isMerged(request), (try? request.headers.to)?.tag == nil {
            return reject(482)
        }

        // §8.2.2.3: "If a UAS does not understand an option-tag listed in a Require header field,
        // it MUST respond by generating a response with status code 420 (Bad Extension). The UAS
        // MUST add an Unsupported header field, and list in it those options it does not
        // understand amongst those in the Require header field of the request."
        guard let required = try? request.headers.require else {
            return .reject(
                SIPResponse(
                    replyingTo: request, statusCode: 400,
                    reasonPhrase: "Bad Request (Require does not parse)", toTag: toTag))
        }
        let unsupported = required.filter { tag in
            !c.supportedExtensions.contains { $0.lowercased() == tag.lowercased() }
        }
        if !unsupported.isEmpty {
            return reject(420, [(.unsupported, unsupported.joined(separator: ", "))])
        }

        // §8.2.3: "If a UAS does not understand the content type (Content-Type), encoding
        // (Content-Encoding) or language (Content-Language) of a body, it SHOULD reject with a
        // 415 (Unsupported Media Type) response. The response MUST contain an Accept header field
        // listing the types of all bodies it understands ... The response MUST contain an
        // Accept-Encoding header field listing the encodings understood by the UAS ... [and]
        // an Accept-Language header field indicating the languages understood by the UAS."
        if !request.body.isEmpty || request.headers.contains(.contentType) {
            let accepted = c.acceptedBodyTypes(for: request.method)
            func unsupportedMedia() -> Verdict {
                reject(
                    415,
                    [
                        (.accept, accepted.joined(separator: ", ")),
                        (SIPHeaderName("Accept-Encoding"), c.encodings.joined(separator: ", ")),
                        (SIPHeaderName("Accept-Language"), c.languages.joined(separator: ", ")),
                    ])
            }
            guard let type = try? request.headers.contentType else {
                if request.body.isEmpty { return .accept }
                return unsupportedMedia()
            }
            let media = type.mediaType.lowercased()
            if !request.body.isEmpty, !accepted.contains(where: { mediaTypeMatches($0, media) }) {
                return unsupportedMedia()
            }
            for field in request.headers.values(named: .contentEncoding) {
                for coding in field.split(separator: ",") {
                    let coding = coding.trimmingSpaces().lowercased()
                    if !c.encodings.contains(where: { $0.lowercased() == coding }) {
                        return unsupportedMedia()
                    }
                }
            }
        }

        // RFC 3261 §21.4.7 (406: "only capable of generating response entities that have content
        // characteristics not acceptable according to the Accept header field sent in the
        // request"); RFC 4475 §3.3.15: "The recipient of this request could respond with a 406
        // Not Acceptable, with a Warning/399 indicating that a response cannot be formulated in
        // the formats offered in the Accept header field."
        if let produced = c.responseBodyTypes[request.method], !produced.isEmpty,
            let accept = try? request.headers.accept
        {
            let ok = produced.contains { type in
                accept.contains { $0.q > 0 && mediaTypeMatches("\($0.type)/\($0.subtype)", type.lowercased()) }
            }
            if !ok {
                let warning =
                    "399 \(c.warningAgent) \"responses are only available as \(produced.joined(separator: ", "))\""
                return reject(406, [(.accept, produced.joined(separator: ", ")), (.warning, warning)])
            }
        }
        return .accept
    }

    /// A 200 to OPTIONS (RFC 3261 §11.2): "Allow, Accept, Accept-Encoding, Accept-Language, and
    /// Supported header fields SHOULD be present in a response to an OPTIONS request."
    public static func optionsResponse(
        to request: SIPRequest, configuration c: SIPUASCoreConfiguration,
        toTag: String?
    ) -> SIPResponse {
        var extra: SIPHeaders = [(.allow, c.allowHeader)]
        let accepted = c.acceptedBodyTypes(for: .options)
        if !accepted.isEmpty { extra.append(.accept, accepted.joined(separator: ", ")) }
        extra.append(SIPHeaderName("Accept-Encoding"), c.encodings.joined(separator: ", "))
        extra.append(SIPHeaderName("Accept-Language"), c.languages.joined(separator: ", "))
        if !c.supportedExtensions.isEmpty { extra.append(.supported, c.supportedExtensions.joined(separator: ", ")) }
        return SIPResponse(replyingTo: request, statusCode: 200, toTag: toTag, headers: extra)
    }

    /// Whether a media range (`type/subtype`, `type/*` or `*/*`) admits `media` (lowercase).
    static func mediaTypeMatches(_ range: String, _ media: String) -> Bool {
        let r = range.lowercased()
        if r == "*/*" || r == media { return true }
        if r.hasSuffix("/*") { return media.hasPrefix(r.dropLast(1)) }
        return false
    }
}

extension Substring {
    func trimmingSpaces() -> String {
        var s = self[...]
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
