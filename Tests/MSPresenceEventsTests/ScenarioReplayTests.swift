import Foundation
import Multipart
import NIOCore
import SIPEventAgents
import NIOEmbedded
import PresenceDocuments
import MSPresenceEvents
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// One scripted exchange of Vectors/scenarios (format in its README).
struct Scenario: CustomStringConvertible, Sendable {
    enum Step: Sendable {
        /// Not in the seed: state the exchange presumes (answers to it are not compared).
        case setup(SIPMessage)
        case peer(SIPMessage)
        case stack(SIPMessage)
    }
    var name: String
    var steps: [Step]
    /// A `# known-issue:` line: the comparisons run inside `withKnownIssue` with this reason.
    var knownIssue: String?
    /// A `<<< nothing` block: the stack must send nothing more.
    var expectsNothingMore = false
    var description: String { name }

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Vectors/scenarios")

    static func all() -> [Scenario] {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return files.filter { $0.hasSuffix(".txt") }.sorted().compactMap { try? load($0) }
    }

    static func load(_ file: String) throws -> Scenario {
        let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
        var steps: [Step] = []
        var current: (kind: String, lines: [String])?
        var knownIssue: String?
        var nothingMore = false
        func flush() throws {
            guard let block = current else { return }
            let lines = block.lines
            guard let blank = lines.firstIndex(of: "") else { throw ScenarioError("\(file): a block without blank line") }
            var headLines = Array(lines[..<blank])
            // The seed's messages often omit Via; the parser needs one, and Via is not compared.
            if !headLines.contains(where: { $0.lowercased().hasPrefix("via:") }) {
                headLines.insert("Via: SIP/2.0/UDP 192.0.2.1:5060;branch=z9hG4bKseedelided", at: 1)
            }
            let head = headLines.joined(separator: "\r\n") + "\r\n"
            // A multipart body's delimiters end in CRLF (RFC 2046 §5.1.1); XML bodies keep the file's LF.
            let multipart = headLines.contains { $0.lowercased().hasPrefix("content-type:") && $0.lowercased().contains("multipart/") }
            let body = lines[(blank + 1)...].joined(separator: multipart ? "\r\n" : "\n").trimmingCharacters(in: .whitespacesAndNewlines)
            let bytes = Array(body.utf8)
            let wire = Array((head + "Content-Length: \(bytes.count)\r\n\r\n").utf8) + bytes
            let message = try SIPMessage(parsing: wire)
            switch block.kind {
            case ">>> peer setup": steps.append(.setup(message))
            case ">>> peer": steps.append(.peer(message))
            default: steps.append(.stack(message))
            }
        }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("# known-issue:") && current == nil {
                knownIssue = String(line.dropFirst("# known-issue:".count)).trimmingCharacters(in: .whitespaces)
                continue
            }
            if line.hasPrefix("#") && current == nil { continue }
            if line.trimmingCharacters(in: .whitespaces) == "<<< nothing" {
                try flush()
                current = nil
                nothingMore = true
                continue
            }
            if line.hasPrefix(">>> ") || line.hasPrefix("<<< ") {
                try flush()
                current = (line.trimmingCharacters(in: .whitespaces), [])
            } else {
                current?.lines.append(line)
            }
        }
        try flush()
        return Scenario(name: file, steps: steps, knownIssue: knownIssue, expectsNothingMore: nothingMore)
    }
}

struct ScenarioError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

@Suite struct ScenarioReplayTests {
    static let skipped: Set<SIPHeaderName> = [.via, .contact, .contentLength, .userAgent, .from, .to, .callID, .cseq,
                                             .maxForwards]

    /// The differences between what the stack sent and the seed's message, by the README's rules.
    static func differences(_ sent: SIPMessage, _ expected: SIPMessage) -> [String] {
        var out: [String] = []
        switch (sent, expected) {
        case (.request(let s), .request(let e)):
            if s.method != e.method { out.append("method \(s.method) ≠ \(e.method)") }
        case (.response(let s), .response(let e)):
            if s.statusCode != e.statusCode { out.append("status \(s.statusCode) ≠ \(e.statusCode)") }
        default:
            return ["a \(sent.isRequest ? "request" : "response") where the seed has the other"]
        }
        let sh = sent.headers, eh = expected.headers
        if sh.callID != eh.callID { out.append("Call-ID") }
        if (try? sh.cseq) != (try? eh.cseq) { out.append("CSeq \(String(describing: try? sh.cseq))") }
        if ((try? sh.to)??.tag == nil) != ((try? eh.to)??.tag == nil) { out.append("To tag presence") }
        var names: [SIPHeaderName] = []
        for field in eh.fields where !Self.skipped.contains(field.name) && !names.contains(field.name) { names.append(field.name) }
        for name in names {
            switch name {
            case .contentType:
                let s = (try? sh.contentType).map { "\($0.type)/\($0.subtype)".lowercased() }
                let e = (try? eh.contentType).map { "\($0.type)/\($0.subtype)".lowercased() }
                if s != e { out.append("Content-Type \(s ?? "none") ≠ \(e ?? "none")") }
            case .subscriptionState:
                // The notifier chooses the duration (RFC 6665 §4.2.1.1): compared is whether it is
                // there and whether it is 0, not its value.
                let s = try? sh.subscriptionState, e = try? eh.subscriptionState
                if s?.state != e?.state || s?.expires.map({ $0 == 0 }) != e?.expires.map({ $0 == 0 }) {
                    out.append("Subscription-State \(s.map { $0.description } ?? "none") ≠ \(e.map { $0.description } ?? "none")")
                }
            case .expires:
                let s = try? sh.expires, e = try? eh.expires
                if s.map({ $0 == 0 }) != e.map({ $0 == 0 }) {
                    out.append("Expires \(String(describing: s)) ≠ \(String(describing: e)) (presence or zero)")
                }
            default:
                let norm: ([String]) -> Set<String> = { values in
                    Set(values.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
                }
                let s = norm(sh.values(named: name)), e = norm(eh.values(named: name))
                if !e.isSubset(of: s) { out.append("\(name): \(s.sorted()) lacks \(e.subtracting(s).sorted())") }
            }
        }
        return out
    }

    /// The `boundary` parameter of a multipart Content-Type (RFC 2046 §5.1.1), quotes removed.
    static func boundary(_ message: SIPMessage) -> String? {
        guard let value = message.headers.values(named: .contentType).first,
              let range = value.range(of: "boundary=", options: .caseInsensitive) else { return nil }
        let rest = value[range.upperBound...].prefix { $0 != ";" }
        return rest.trimmingCharacters(in: CharacterSet(charactersIn: "\" \t"))
    }

    /// A category SUBSCRIBE 200 OK's multipart/related body ([MS-PRES] §2.2.2.4.2) decoded.
    static func batchBody(_ message: SIPMessage) -> BatchSubscribeResponse? {
        guard let boundary = boundary(message),
              let multipart = try? MultipartBody(parsing: message.body, boundary: boundary) else { return nil }
        return try? BatchSubscribeResponse(multipart: multipart)
    }

    /// The differences between the bodies, for an expected multipart/related body (the README's
    /// rules): the RLMI list's URI and its resources with their instances' states; per categories
    /// part (by URI) the (name, instance) of every published category (one with an instance; the
    /// seed's `<category name="note"/>` names a category nothing was published in), and the
    /// payload of each one for which the seed shows one.
    static func bodyDifferences(_ sent: SIPMessage, _ expected: SIPMessage) -> [String] {
        guard !expected.body.isEmpty, boundary(expected) != nil else { return [] }
        guard let e = batchBody(expected) else { return ["the seed's multipart body does not decode"] }
        guard let s = batchBody(sent) else { return ["the body is not a multipart/related RLMI body"] }
        var out: [String] = []
        if s.list.uri != e.list.uri { out.append("RLMI list uri \(s.list.uri) ≠ \(e.list.uri)") }
        let resources: (RLMIList) -> [String] = { list in
            list.resources.map { r in "\(r.uri) [\(r.instances.map { "\($0.state)" }.joined(separator: ","))]" }.sorted()
        }
        if resources(s.list) != resources(e.list) { out.append("RLMI resources \(resources(s.list)) ≠ \(resources(e.list))") }
        let published: (CategoriesDocument) -> [String] = { doc in
            doc.categories.compactMap { c in c.instance.map { "\(c.name)#\($0)" } }.sorted()
        }
        if s.categories.map(\.uri).sorted() != e.categories.map(\.uri).sorted() {
            out.append("categories parts for \(s.categories.map(\.uri)) ≠ \(e.categories.map(\.uri))")
        }
        for expectedDoc in e.categories {
            guard let sentDoc = s.categories.first(where: { $0.uri == expectedDoc.uri }) else { continue }
            if published(sentDoc) != published(expectedDoc) {
                out.append("\(expectedDoc.uri): categories \(published(sentDoc)) ≠ \(published(expectedDoc))")
            }
            for category in expectedDoc.categories where category.instance != nil && category.payload != nil {
                let match = sentDoc.categories.first { $0.name == category.name && $0.instance == category.instance }
                if let match, match.payload != category.payload {
                    out.append("\(expectedDoc.uri): \(category.name)#\(category.instance ?? 0) payload differs")
                }
            }
        }
        return out
    }

    @Test func everyScenarioFileLoads() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Scenario.directory.path).filter { $0.hasSuffix(".txt") }
        #expect(files.count >= 2)
        for file in files { _ = try Scenario.load(file) }
    }

    @Test(arguments: Scenario.all())
    func stackReplaysTheSeedExchange(_ scenario: Scenario) throws {
        let loop = EmbeddedEventLoop()
        let network = SIPLoopbackNetwork(eventLoop: loop)
        let serverAddress = SIPTarget(.udp, host: "127.0.0.2", port: 5070)
        let peerAddress = SIPTarget(.udp, host: "127.0.0.3", port: 5080)
        let layer = SIPTransactionLayer(transport: network.endpoint(serverAddress), configuration: .presenceEvents)
        let server = PresenceServer(layer: layer, configuration: .init(contact: SIPAddress(uri: SIPURI(scheme: .sip, host: "127.0.0.2", port: 5070))),
                                    utcSeconds: { 1_700_000_000 })
        // The seed's peers are reached by name; here every request goes to the scripted peer.
        server.notifier.routing = SIPEventRouting(nextHop: peerAddress, alwaysUseNextHop: true)
        layer.start()
        server.installAsRequestHandler()
        let peer = network.endpoint(peerAddress)
        let inbox = PresenceServerHarness.Inbox()
        peer.setMessageHandler { inbox.messages.append($0.message) }
        var seen = 0
        // The seed's tags for the stack's side of a dialog → the tags the stack chose: later peer
        // requests in that dialog carry the stack's.
        var tags: [String: String] = [:]
        func retagged(_ message: SIPMessage) -> SIPMessage {
            guard case .request(var request) = message, let tag = (try? request.headers.to)??.tag, let actual = tags[tag],
                  let to = request.headers.values(named: .to).first else { return message }
            request.headers.set(.to, to.replacingOccurrences(of: "tag=\(tag)", with: "tag=\(actual)"))
            return .request(request)
        }
        for step in scenario.steps {
            switch step {
            case .setup(let message):
                _ = peer.send(message, to: serverAddress, connection: nil)
                loop.run()
                seen = inbox.messages.count
            case .peer(let message):
                _ = peer.send(retagged(message), to: serverAddress, connection: nil)
                loop.run()
            case .stack(let expected):
                let sent = try #require(inbox.messages.dropFirst(seen).first, "\(scenario): the stack sent nothing where the seed has a \(expected.isRequest ? "request" : "response")")
                seen += 1
                // The stack's tag: To of its responses, From of its requests.
                let stackTag: (SIPMessage) -> String? = { m in
                    m.isRequest ? (try? m.headers.from)??.tag : (try? m.headers.to)??.tag
                }
                if let seedTag = stackTag(expected), let actual = stackTag(sent) { tags[seedTag] = actual }
                let diff = Self.differences(sent, expected) + Self.bodyDifferences(sent, expected)
                let check = {
                    #expect(diff.isEmpty, "\(scenario): \(diff.joined(separator: "; "))\n\(String(decoding: sent.serialized(), as: UTF8.self))")
                }
                if let reason = scenario.knownIssue {
                    withKnownIssue(Comment(rawValue: reason), isIntermittent: true) { check() }
                } else {
                    check()
                }
                // The peer answers the stack's NOTIFY as the seed's peer would (200).
                if case .request(let request) = sent, request.method == .notify {
                    _ = peer.send(.response(SIPResponse(replyingTo: request, statusCode: 200, reasonPhrase: "OK")), to: serverAddress, connection: nil)
                    loop.run()
                }
            }
        }
        if scenario.expectsNothingMore {
            loop.advanceTime(by: .seconds(1))
            #expect(inbox.messages.count == seen, "\(scenario): the stack sent more than the seed shows")
        }
    }
}
