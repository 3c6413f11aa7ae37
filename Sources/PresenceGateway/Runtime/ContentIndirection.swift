import AsyncHTTPClient
import Foundation
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import SIPMessages

/// Content indirection (RFC 4483) through the OMA domain's content server (PacketCable Presence
/// §6.1.8, §6.3.6.4; YAML `content-server:`, docs/flows.md, "Content indirection"): a reference
/// from the OMA side is followed, and a NOTIFY too large for a UDP-only OMA side is offered as
/// one. Requests go through the XDM client (``XCAPClient``), so `xcap-auth:` applies to the
/// content server as to an XCAP root, and its failures show in `/health` the same way.
final class ContentIndirection: Sendable {
    private let settings: NIOLockedValueBox<GatewayConfiguration.ContentServer?>
    private let client: XCAPClient
    private let counters: [String: Counter]
    private let hostName: String

    static let mediaType = "message/external-body"
    /// How long an offered reference says it is good for (its `expiration`, RFC 4483 §5.4 and
    /// RFC 2017 §3): the object is replaced at the dialog's next offer, and deleted then.
    static let offeredLifetime: TimeInterval = 3_600

    /// With `configuration`'s `content-server:`; its host name (or first listener's) names the
    /// Content-IDs of offered objects.
    init(_ configuration: GatewayConfiguration, client: XCAPClient, factory: any MetricsFactory) {
        settings = NIOLockedValueBox(configuration.contentServer)
        self.client = client
        hostName = configuration.hostName ?? configuration.listeners.first?.host ?? "gateway"
        var counters: [String: Counter] = [:]
        for direction in ["followed", "offered"] {
            for result in ["ok", "refused", "failed"] {
                counters[direction + " " + result] = Counter(
                    label: "gateway_content_indirection_total",
                    dimensions: [("direction", direction), ("result", result)], factory: factory)
            }
        }
        self.counters = counters
    }

    /// The settings now in force; nil when no content server is configured.
    var server: GatewayConfiguration.ContentServer? { settings.withLockedValue { $0 } }

    /// Takes a reload's `content-server:`.
    func configure(_ server: GatewayConfiguration.ContentServer?) { settings.withLockedValue { $0 = server } }

    /// Counts one reference followed or offered: `gateway_content_indirection_total{direction,result}`.
    func count(_ direction: String, _ failure: ContentIndirectionError?) {
        let result = failure.map { $0.status == 415 ? "refused" : "failed" } ?? "ok"
        counters[direction + " " + result]?.increment()
    }

    /// Whether `request`'s body is a `message/external-body` (a reference, RFC 4483 §4).
    /// Every relayed NOTIFY is asked: only a Content-Type beginning `message/` is parsed.
    static func isIndirect(_ request: SIPRequest) -> Bool {
        guard let field = request.headers.fields.first(where: { $0.name == .contentType }) else { return false }
        let value = field.valueBytes.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard value.count > 8, zip(value, "message/".utf8).allSatisfy({ $0 | 0x20 == $1 }) else { return false }
        return (try? request.headers.contentType)?.mediaType == mediaType
    }

    /// The reference `request` carries, checked against the content server: refused (415) when
    /// none is configured or the reference is not one the gateway follows.
    func reference(in request: SIPRequest, now: Date = Date()) -> Result<ExternalBodyReference, ContentIndirectionError>
    {
        guard let server else { return .failure(.refused("no content server is configured")) }
        guard let type = try? request.headers.contentType else { return .failure(.refused("unreadable Content-Type")) }
        return Result { () throws(ContentIndirectionError) in
            try ExternalBodyReference(contentType: type, body: request.body, server: server, now: now)
        }
    }

    /// `request` with the content `reference` names in place of the reference: one GET, no
    /// redirects, at most `max-bytes`, within `timeout` seconds (all of it, the body too).
    func follow(_ reference: ExternalBodyReference, in request: SIPRequest) async -> Result<
        SIPRequest, ContentIndirectionError
    > {
        guard let server else { return .failure(.refused("no content server is configured")) }
        let client = self.client
        let fetched: Result<[UInt8], ContentIndirectionError> = await Self.within(server.timeoutSeconds) {
            switch await client.execute(
                .GET, reference.url, headers: [("Accept", reference.contentType)], maximumBytes: server.maximumBytes,
                timeoutSeconds: server.timeoutSeconds)
            {
            case .failure(let failure): return .failure(.noAnswer("no content from \(reference.url) (\(failure))"))
            case .success(let answer) where answer.status == 200: return .success(answer.body)
            case .success(let answer):
                return .failure(.badAnswer("\(reference.url) answered \(answer.status) \(answer.reason)"))
            }
        }
        return fetched.map { body in
            var followed = request
            followed.headers.set(.contentType, reference.contentType)
            followed.body = body
            return followed
        }
    }

    /// `request` with its body stored on the content server (HTTP PUT of a new object under the
    /// URL) and a reference to it in its place (RFC 4483 §4: access-type URL, `expiration`,
    /// `size`; the body's Content-Type and a new Content-ID, §5.6), and the object's URL.
    func offer(_ request: SIPRequest, now: Date = Date()) async -> Result<
        (request: SIPRequest, url: String), ContentIndirectionError
    > {
        guard let server else { return .failure(.refused("no content server is configured")) }
        guard request.body.count <= server.maximumBytes else {
            return .failure(.refused("\(request.body.count) bytes are over max-bytes \(server.maximumBytes)"))
        }
        let type = request.headers[.contentType] ?? "application/pidf+xml"
        let name =
            String(UInt64.random(in: .min ... .max), radix: 16) + String(UInt64.random(in: .min ... .max), radix: 16)
        let url = "\(server.url)/\(name).xml"
        let client = self.client
        let body = request.body
        let stored: Result<Void, ContentIndirectionError> = await Self.within(server.timeoutSeconds) {
            switch await client.execute(
                .PUT, url, headers: [("Content-Type", type)], body: body, maximumBytes: 1 << 16,
                timeoutSeconds: server.timeoutSeconds)
            {
            case .failure(let failure): return .failure(.noAnswer("\(url) not stored (\(failure))"))
            case .success(let answer) where (200..<300).contains(answer.status): return .success(())
            case .success(let answer):
                return .failure(.badAnswer("\(url) not stored: \(answer.status) \(answer.reason)"))
            }
        }
        return stored.map {
            var indirect = request
            let expiration = ExternalBodyReference.httpDate(now.addingTimeInterval(Self.offeredLifetime))
            indirect.headers.set(
                .contentType,
                "\(Self.mediaType);access-type=URL;expiration=\"\(expiration)\";size=\(body.count);URL=\"\(url)\"")
            indirect.body = Array("Content-Type: \(type)\r\nContent-ID: <\(name)@\(hostName)>\r\n\r\n".utf8)
            return (indirect, url)
        }
    }

    /// Deletes an object the gateway offered and has replaced; a failure is let be (the
    /// reference's expiration tells the server when it may go).
    func delete(_ url: String) async {
        guard let server else { return }
        let client = self.client
        let _: Result<Void, ContentIndirectionError> = await Self.within(server.timeoutSeconds) {
            _ = await client.execute(.DELETE, url, maximumBytes: 1 << 16, timeoutSeconds: server.timeoutSeconds)
            return .success(())
        }
    }

    /// `work`, or a 504 failure when it takes longer than `seconds` (then cancelled).
    static func within<T: Sendable>(
        _ seconds: Int, _ work: @escaping @Sendable () async -> Result<T, ContentIndirectionError>
    ) async -> Result<T, ContentIndirectionError> {
        await withTaskGroup(of: Result<T, ContentIndirectionError>?.self) { group in
            group.addTask { await work() }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(seconds) * 1_000_000_000)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? .failure(.noAnswer("no answer within \(seconds) s"))
        }
    }
}

/// Why an indirect body was not followed or offered, with the status the request it came in is
/// answered with.
struct ContentIndirectionError: Error, Sendable, Hashable, CustomStringConvertible {
    var status: Int
    var reason: String

    /// A reference the gateway does not follow: 415 (RFC 4483 §5.3).
    static func refused(_ reason: String) -> Self { Self(status: 415, reason: reason) }
    /// The content server answered with something other than the content: 502 (RFC 3261
    /// §21.5.3, "an invalid response from the downstream server it accessed").
    static func badAnswer(_ reason: String) -> Self { Self(status: 502, reason: reason) }
    /// No answer in time: 504 (RFC 3261 §21.5.5, "did not receive a timely response from an
    /// external server it accessed").
    static func noAnswer(_ reason: String) -> Self { Self(status: 504, reason: reason) }

    var description: String { "\(status): \(reason)" }
}

/// The reference a `message/external-body` body makes (RFC 4483 §4, RFC 2046 §5.2.3, RFC 2017):
///
///     Content-Type: message/external-body; ACCESS-TYPE=URL;
///         URL="http://cs.example.net/alice/pidf.xml"; expiration="…"; size=1234
///
///     Content-Type: application/pidf+xml
///     Content-ID: <4e5562cd1214427d@example.net>
///
/// The parameters say where and until when; the body's own headers say what the content is.
struct ExternalBodyReference: Sendable, Hashable {
    var url: String
    /// The content's type, from the body's `Content-Type` header (RFC 4483 §4).
    var contentType: String

    /// The reference of a `message/external-body` body; refused for any other access type, a
    /// URL that is not HTTP(S) on `server`'s origin, an expired reference, a size over
    /// `server`'s limit, or a body that names no type for the content.
    init(
        contentType type: SIPContentType, body: [UInt8], server: GatewayConfiguration.ContentServer, now: Date
    ) throws(ContentIndirectionError) {
        guard type.mediaType == ContentIndirection.mediaType,
            type.parameters.value("access-type").map(Self.unquoted)?.lowercased() == "url"
        else { throw .refused("not message/external-body with access-type URL (RFC 4483 §4)") }
        guard let text = type.parameters.value("url").map(Self.unquoted), let url = URL(string: text),
            let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { throw .refused("the URL parameter is not an http or https URL (RFC 4483 §5.2)") }
        guard let origin = URL(string: server.url), Self.sameOrigin(url, origin) else {
            throw .refused("\(text) is not on the content server \(server.url)")
        }
        if let expiration = type.parameters.value("expiration").flatMap({ Self.date(Self.unquoted($0)) }),
            expiration < now
        {
            throw .refused("the reference expired (RFC 2017 §3)")
        }
        if let size = type.parameters.value("size").flatMap({ Int(Self.unquoted($0)) }), size > server.maximumBytes {
            throw .refused("size \(size) is over max-bytes \(server.maximumBytes)")
        }
        guard let inner = Self.headers(body)["content-type"], (try? SIPContentType(inner)) != nil else {
            throw .refused("the body names no Content-Type for the content (RFC 4483 §4)")
        }
        self.url = text
        contentType = inner
    }

    static func unquoted(_ text: String) -> String {
        let t = text.trimmingCharacters(in: .whitespaces)
        return t.count >= 2 && t.hasPrefix("\"") && t.hasSuffix("\"") ? String(t.dropFirst().dropLast()) : t
    }

    /// Scheme, host and port equal (the port defaulted from the scheme).
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func port(_ u: URL) -> Int { u.port ?? (u.scheme?.lowercased() == "https" ? 443 : 80) }
        return a.scheme?.lowercased() == b.scheme?.lowercased() && a.host?.lowercased() == b.host?.lowercased()
            && port(a) == port(b) && a.user == nil
    }

    /// The body's header fields (RFC 2046 §5.2.3: the encapsulated headers, up to the first
    /// empty line), names lower-cased.
    static func headers(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        let text = String(decoding: body.prefix(4096), as: UTF8.self)
        // "\r\n" is one Character: split at every line end, whichever it is.
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = line.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            fields[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return fields
    }

    /// An RFC 1123 date as RFC 2017 §3's `expiration` writes it (RFC 4483 §4's example spells
    /// the month out, which is read too).
    static func date(_ text: String) -> Date? {
        let formatter = Self.formatter
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEE, d MMMM yyyy HH:mm:ss zzz"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    /// `date` as RFC 1123 writes it.
    static func httpDate(_ date: Date) -> String {
        let formatter = Self.formatter
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    private static var formatter: DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        return formatter
    }
}

extension Result where Failure == ContentIndirectionError {
    /// The error, when it is one.
    var failure: ContentIndirectionError? {
        guard case .failure(let error) = self else { return nil }
        return error
    }
}
