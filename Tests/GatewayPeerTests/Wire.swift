import Foundation
import Multipart
import PeerTestSupport
import PresenceDocuments
import SIPMessages
import Testing

/// Reading what a sipp peer received: the messages of its `-trace_msg` log, parsed with the
/// project's SIP parser, and the presence documents in their bodies.
extension Sipp.Run {
    /// Every message sipp received, parsed (unparsable ones are a test failure).
    var receivedMessages: [SIPMessage] {
        received.compactMap { traced in
            do { return try SIPMessage(parsing: traced.bytes) } catch {
                Issue.record("sipp received an unparsable message (\(error)):\n\(traced.text)")
                return nil
            }
        }
    }

    /// The requests of `method` sipp received, in order.
    func receivedRequests(_ method: String) -> [SIPRequest] {
        receivedMessages.compactMap(\.request).filter { $0.method.description == method }
    }

    /// The responses sipp received to its requests of `method`.
    func receivedResponses(to method: String) -> [SIPResponse] {
        receivedMessages.compactMap(\.response).filter { (try? $0.headers.cseq)?.method.description == method }
    }
}

/// Expects every one of `requests` in the dialog whose SUBSCRIBE `answer` answered (its Call-ID),
/// with CSeqs rising and none twice: each sent once, in order (RFC 3261 §12.2.1.1).
func expectOneDialogInOrder(
    _ requests: [SIPRequest], answeredBy answer: SIPResponse, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    #expect(requests.allSatisfy { $0.headers.callID == answer.headers.callID }, sourceLocation: sourceLocation)
    let cseqs = try requests.map { try #require(try $0.headers.cseq?.sequence, sourceLocation: sourceLocation) }
    #expect(cseqs == cseqs.sorted() && Set(cseqs).count == cseqs.count, "\(cseqs)", sourceLocation: sourceLocation)
}

/// A body's parts by media type: a multipart body's parts (RFC 2046 §5.1), or the body itself.
func bodyParts(_ message: SIPMessage) -> [(type: String, body: [UInt8])] {
    guard let type = try? message.headers.contentType else { return [] }
    if type.isMultipart, let boundary = type.boundary, let multipart = try? MultipartBody(parsing: message.body, boundary: boundary) {
        return multipart.parts.map { (($0.header("Content-Type") ?? "").lowercased().split(separator: ";").first.map(String.init) ?? "", $0.body) }
    }
    return [(type.mediaType, message.body)]
}

/// The categories documents a message carries (BENOTIFY, NOTIFY, or a 200 with a piggybacked
/// first notification, [MS-PRES] §3.4.5.1.3).
func categoriesDocuments(_ message: SIPMessage) -> [CategoriesDocument] {
    bodyParts(message).filter { $0.type == "application/msrtc-event-categories+xml" }.compactMap { try? CategoriesDocument(bytes: $0.body) }
}

/// The aggregate state ([MS-PRES] §2.2.2.9) of `resource` in a categories document: availability
/// and activity token.
func aggregateState(_ documents: [CategoriesDocument], of resource: String) -> (availability: UInt32, token: String?)? {
    for document in documents.reversed() where document.uri == resource {
        for category in document.categories(named: .state) {
            if case .state(let state)? = category.payload, state.type == .aggregateState, let availability = state.availability {
                return (availability, state.activities.compactMap(\.token).first?.rawValue)
            }
        }
    }
    return nil
}

/// One of the mapping tables in `Mappings/` (tab-separated, `#` comments, a header row), read
/// here by the tests, independently of the gateway's loader.
struct MappingTable {
    let rows: [[String: String]]

    init(_ name: String) throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Mappings/\(name)")
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }
        guard let header = lines.first?.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) else {
            throw PeerError("\(name): empty")
        }
        rows = lines.dropFirst().map { line in
            Dictionary(uniqueKeysWithValues: zip(header, line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)))
        }
    }

    /// The rows whose `min`…`max` holds `availability` and whose `activity` column admits `token`
    /// (`*` any, `TOKEN` exactly, `!TOKEN` any but).
    func rows(availability: UInt32, token: String?) -> [[String: String]] {
        rows.filter { row in
            guard let min = row["min"].flatMap({ UInt32($0) }), let max = row["max"].flatMap({ UInt32($0) }),
                  (min...max).contains(availability), let activity = row["activity"] else { return false }
            if activity == "*" { return true }
            if activity.hasPrefix("!") { return token != String(activity.dropFirst()) }
            return token == activity
        }
    }
}

/// The headers of two messages with the dialog identifiers left out (RFC 3261 §12: Call-ID and
/// the From/To tags; with them Via, CSeq, Contact and Content-Length, which differ per
/// transaction or with the body), Subscription-State reduced to its state and reason, and the
/// multipart boundary (a random token per message, RFC 2046 §5.1.1) left out of Content-Type.
func headersWithoutDialogIdentifiers(_ message: SIPMessage) -> [String] {
    let skipped: Set<String> = ["via", "from", "to", "call-id", "cseq", "content-length", "contact", "record-route"]
    return message.headers.compactMap { field -> String? in
        let name = field.name.canonical.lowercased()
        if skipped.contains(name) { return nil }
        if name == "subscription-state", let state = try? message.headers.subscriptionState {
            return "subscription-state: \(state.state) \(state.reason ?? "")"
        }
        if name == "content-type", let type = try? message.headers.contentType {
            return "content-type: \(type.mediaType) \(type.parameters.filter { $0.name.lowercased() != "boundary" })"
        }
        return "\(name): \(field.value)"
    }
}
