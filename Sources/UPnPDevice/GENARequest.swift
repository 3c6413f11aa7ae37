/// A GENA request to the event subscription URL, checked (UPnP Device Architecture 1.1 §4.1).
///
/// ```
/// SUBSCRIBE publisher path HTTP/1.1       (§4.1.2, a new subscription)
/// CALLBACK: <delivery URL>
/// NT: upnp:event
/// TIMEOUT: Second-requested subscription duration
///
/// SUBSCRIBE publisher path HTTP/1.1       (§4.1.3, a renewal)
/// SID: uuid:subscription UUID
/// TIMEOUT: Second-requested subscription duration
///
/// UNSUBSCRIBE publisher path HTTP/1.1     (§4.1.4)
/// SID: uuid:subscription UUID
/// ```
public enum GENARequest: Sendable, Hashable {
    case subscribe(callbacks: [String], timeout: GENATimeout?)
    case renew(sid: String, timeout: GENATimeout?)
    case unsubscribe(sid: String)

    /// Reads a GENA request from its method and header fields (names case-insensitive).
    ///
    /// UDA 1.1 §4.1.2 and §4.1.3: SID together with CALLBACK or NT is 400 Bad Request; a new
    /// subscription without a CALLBACK of at least one `<http://…>` URL, or without NT
    /// `upnp:event`, is 412 Precondition Failed. UDA 1.1 §4.1.4: UNSUBSCRIBE without SID is 412,
    /// with CALLBACK or NT 400. An unreadable TIMEOUT is taken as absent (the publisher chooses).
    public static func parse(method: String, headers: [(name: String, value: String)]) -> Result<
        GENARequest, GENAStatus
    > {
        func field(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name }?.value
        }
        let sid = field("sid")
        let hasCallbackOrNT = field("callback") != nil || field("nt") != nil
        let timeout = field("timeout").flatMap(GENATimeout.init)
        switch method {
        case "SUBSCRIBE":
            if let sid {
                guard !hasCallbackOrNT else { return .failure(.badRequest) }
                return .success(.renew(sid: sid, timeout: timeout))
            }
            guard field("nt") == "upnp:event", let callbacks = field("callback").flatMap(Self.callbackURLs) else {
                return .failure(.preconditionFailed)
            }
            return .success(.subscribe(callbacks: callbacks, timeout: timeout))
        case "UNSUBSCRIBE":
            guard !hasCallbackOrNT else { return .failure(.badRequest) }
            guard let sid else { return .failure(.preconditionFailed) }
            return .success(.unsubscribe(sid: sid))
        default:
            return .failure(.methodNotAllowed)
        }
    }

    /// The URLs of a CALLBACK field, `<url1><url2>…` (UDA 1.1 §4.1.2); nil unless every one is an
    /// http URL and there is at least one.
    static func callbackURLs(_ field: String) -> [String]? {
        var urls: [String] = []
        var rest = Substring(field.trimmingCharacters(in: " \t"))
        while !rest.isEmpty {
            guard rest.first == "<", let close = rest.firstIndex(of: ">") else { return nil }
            let url = String(rest[rest.index(after: rest.startIndex)..<close])
            guard url.lowercased().hasPrefix("http://"), url.count > 7 else { return nil }
            urls.append(url)
            rest = rest[rest.index(after: close)...].drop { $0 == " " || $0 == "\t" }
        }
        return urls.isEmpty ? nil : urls
    }
}
