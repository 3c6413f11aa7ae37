import Multipart
import PresenceDocuments
import SIPMessages
import SIPStack

/// The body of a list notification (RFC 4662 §5): `multipart/related` (RFC 2387) whose root part
/// (`start`, else the first) is the RLMI document, and a part for each resource instance with
/// state, named by its `cid`. Every PIDF part is read here, so that a part that does not parse
/// refuses the whole notification.
struct ListNotification {
    var list: RLMIList
    /// The PIDF documents of the parts, by Content-ID (without angle brackets).
    var documents: [String: PIDFDocument]

    struct Problem: Error {
        var text: String
    }

    init(_ request: SIPRequest) throws(Problem) {
        guard let type = (try? request.headers.contentType) ?? nil else {
            throw Problem(text: "no readable Content-Type")
        }
        guard type.mediaType == SIPBodyType.multipartRelated else {
            throw Problem(text: "\(type.mediaType) is not multipart/related (RFC 4662 §5)")
        }
        guard let boundary = type.boundary else { throw Problem(text: "multipart/related without a boundary") }
        let body: MultipartBody
        do { body = try MultipartBody(parsing: request.body, boundary: boundary) } catch {
            throw Problem(text: "\(error)")
        }
        let start = type.parameters.value("start").map(Self.contentID)
        let root =
            start.flatMap { id in body.parts.firstIndex { $0.header("Content-ID").map(Self.contentID) == id } }
            ?? (start == nil ? body.parts.indices.first : nil)
        guard let root else { throw Problem(text: "no root part \(start ?? "")") }
        guard body.parts[root].mediaType == SIPBodyType.rlmi else {
            throw Problem(text: "the root part is not application/rlmi+xml")
        }
        do { list = try RLMIList(bytes: body.parts[root].body) } catch {
            throw Problem(text: "RLMI: \(error)")
        }
        documents = [:]
        for (index, part) in body.parts.enumerated() where index != root {
            guard let id = part.header("Content-ID").map(Self.contentID), part.mediaType == SIPBodyType.pidf
            else { continue }
            do { documents[id] = try PIDFDocument(bytes: part.body) } catch {
                throw Problem(text: "part \(id): \(error)")
            }
        }
    }

    /// A Content-ID or `cid` without quotes, angle brackets (RFC 2392) or `cid:` scheme.
    static func contentID(_ text: String) -> String {
        var id = trimmed(Substring(text))
        if id.count >= 2, id.first == "\"", id.last == "\"" { id = id.dropFirst().dropLast() }
        if id.first == "<", id.last == ">" { id = id.dropFirst().dropLast() }
        if id.prefix(4).lowercased() == "cid:" { id = id.dropFirst(4) }
        return String(id)
    }

    /// `text` without leading and trailing spaces and tabs (a header value's LWS).
    private static func trimmed(_ text: Substring) -> Substring {
        var text = text
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}
