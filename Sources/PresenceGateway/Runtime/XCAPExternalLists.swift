import Foundation
import Logging
import Metrics
import XMLBridge

/// Resolves the lists OMA's `external-list` conditions name (``PresRules/ExternalList``) over
/// XCAP: an `anc` is an XCAP URI of a list kept in the domain's XDMS (OMA-TS-XDM_Core, the
/// URI lists of the Shared XDMS; PacketCable Presence §6.1.5: "a presence authorization policy
/// that references [a list] as the accept list"), fetched from the configured XCAP server only.
///
/// - An `anc` under the XCAP root (same scheme, host and port, its path below the root's, no
///   user information, no `..` segment) is fetched: at most ``maximumLists`` per document, each
///   at most ``maximumBytes``, with the source's timeout. The answer is a `resource-lists`
///   document (RFC 4826 §3) or, for a node selector, its `list` element (RFC 4825 §6,
///   `application/xcap-el+xml`); its `entry` URIs are the members, nested lists included.
/// - A SIP URI is left for the lists the gateway serves (``GatewayServer``).
/// - Anything else (another host: a hostile or mistaken URI) is never fetched.
///
/// An anchor that cannot be resolved is logged and counted
/// (`gateway_xcap_external_lists_total{result="unresolved"}`); its condition then names nobody,
/// so the rule does not apply (docs/flows.md, "OMA's pres-rules extensions").
struct XCAPExternalLists: Sendable {
    static let maximumLists = 16
    static let maximumBytes = 1 << 20

    let root: String
    let resolvedCount: Counter
    let unresolvedCount: Counter

    init(root: String, factory: any MetricsFactory) {
        self.root = root
        let label = "gateway_xcap_external_lists_total"
        resolvedCount = Counter(label: label, dimensions: [("result", "resolved")], factory: factory)
        unresolvedCount = Counter(label: label, dimensions: [("result", "unresolved")], factory: factory)
    }

    /// `rules` with each anchor under the XCAP root fetched and resolved; the others unchanged.
    func resolve(_ rules: PresRules, client: XCAPClient, logger: Logger) async -> PresRules {
        var fetched: [String: [String]] = [:]
        var count = 0
        for anchor in rules.unresolvedExternalLists {
            guard Self.isSIP(anchor) == false else { continue }
            guard Self.isUnder(root: root, anchor) else {
                unresolvedCount.increment()
                logger.warning("external-list \(anchor): not under the XCAP root \(root); not fetched, names nobody")
                continue
            }
            count += 1
            guard count <= Self.maximumLists else {
                unresolvedCount.increment()
                logger.warning("external-list \(anchor): more than \(Self.maximumLists) lists; not fetched")
                continue
            }
            switch await members(anchor, client: client) {
            case .success(let list):
                resolvedCount.increment()
                fetched[anchor] = list
            case .failure(let reason):
                unresolvedCount.increment()
                logger.warning("external-list \(anchor): \(reason.message); the condition names nobody")
            }
        }
        return rules.resolvingExternalLists { fetched[$0] }
    }

    private struct Unresolved: Error { var message: String }

    private func members(_ anchor: String, client: XCAPClient) async -> Result<[String], Unresolved> {
        let answer = await client.document(
            anchor, accept: "application/xcap-el+xml, application/resource-lists+xml", etag: nil,
            maximumBytes: Self.maximumBytes)
        switch answer {
        case .document(let bytes, _):
            do { return .success(try Self.entries(bytes)) } catch {
                return .failure(Unresolved(message: "\(error.line):\(error.column): \(error.message)"))
            }
        case .absent: return .failure(Unresolved(message: "no such list (404)"))
        case .notModified: return .failure(Unresolved(message: "unexpected 304"))
        case .failed(let reason): return .failure(Unresolved(message: reason))
        case .refused(let reason): return .failure(Unresolved(message: "refused (\(reason))"))
        }
    }

    static let resourceLists = "urn:ietf:params:xml:ns:resource-lists"

    /// The `entry` URIs of a `resource-lists` document or of one `list` element (RFC 4826 §3.2),
    /// nested lists included (their depth bounded by the parser's limits).
    static func entries(_ bytes: [UInt8]) throws(XMLError) -> [String] {
        let root = try XMLParser.parse(bytes, limits: XMLLimits())
        guard root.name == XMLName(resourceLists, "resource-lists") || root.name == XMLName(resourceLists, "list")
        else {
            throw root.error("expected a resource-lists document or a list element (RFC 4826 §3), found \(root.name)")
        }
        var uris: [String] = []
        func collect(_ element: XMLElement) {
            for child in element.elements where child.name.namespace == resourceLists {
                if child.name.local == "entry", let uri = child[attribute: "uri"] { uris.append(uri) }
                if child.name.local == "list" { collect(child) }
            }
        }
        collect(root)
        return uris
    }

    static func isSIP(_ anchor: String) -> Bool {
        let lower = anchor.lowercased()
        return lower.hasPrefix("sip:") || lower.hasPrefix("sips:")
    }

    /// Whether `anchor` is an http(s) URI on the XCAP root's host and port, below its path.
    static func isUnder(root: String, _ anchor: String) -> Bool {
        guard let base = URLComponents(string: root), let uri = URLComponents(string: anchor),
            let scheme = uri.scheme?.lowercased(), scheme == base.scheme?.lowercased(),
            uri.host?.lowercased() == base.host?.lowercased(), uri.port == base.port,
            uri.user == nil, uri.password == nil
        else { return false }
        let path = uri.percentEncodedPath
        guard !path.split(separator: "/").contains(where: { $0 == ".." || $0.lowercased() == "%2e%2e" }) else {
            return false
        }
        let prefix = base.percentEncodedPath.hasSuffix("/") ? base.percentEncodedPath : base.percentEncodedPath + "/"
        return path.hasPrefix(prefix)
    }
}
