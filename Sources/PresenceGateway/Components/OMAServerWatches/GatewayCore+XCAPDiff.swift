import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack
import XMLBridge

/// Pres-rules changes announced by the OMA domain (RFC 5875; docs/flows.md, "Policy from
/// XCAP"): with `xcap: { xcap-diff: true }`, the gateway subscribes to the `xcap-diff` event of
/// each presentity whose pres-rules come from XCAP, naming that document in the SUBSCRIBE's
/// resource list (RFC 5875 §4.1). A NOTIFY whose `application/xcap-diff+xml` body (RFC 5874)
/// names the document, with a new ETag or none, has it fetched at once
/// (``Action/xcapDocumentChanged(presentity:)``) instead of at the next poll, which goes on as
/// before. A subscription the OMA side refuses, or ends for good, leaves that presentity to
/// polling (the subscriptions' life: `GatewayCore+ServerWatches`).
extension GatewayCore {
    /// The event package of RFC 5875 §4.
    static let xcapDiffPackage = SIPEventPackage(
        name: "xcap-diff", bodyTypes: [xcapDiffType], defaultBodyType: xcapDiffType, defaultExpires: 3600,
        minimumExpires: 60, maximumExpires: 86_400)
    static let xcapDiffType = "application/xcap-diff+xml"

    /// Subscribes to the changes of every XCAP presentity's document not watched yet, and ends the
    /// watches of presentities whose pres-rules no longer come from XCAP (at start and after a reload).
    mutating func watchXCAPDocuments(now: NIODeadline) -> [Action] {
        var out: [Action] = []
        let wanted = runsNodeWideWork && configuration.xcap?.xcapDiff == true ? configuration.xcapPresentities : []
        var watched: Set<String> = []
        for key in serverWatches.keys {
            guard let watch = serverWatches[key], !watch.closing, case .xcapDiff(let presentity, _) = watch.purpose
            else { continue }
            if wanted.contains(presentity) { watched.insert(presentity) } else { out += endServerWatch(key, now: now) }
        }
        for presentity in wanted.sorted() where !watched.contains(presentity) {
            out += startXCAPDiffWatch(presentity)
        }
        return out
    }

    mutating func startXCAPDiffWatch(_ presentity: String) -> [Action] {
        guard let xcap = configuration.xcap, let uri = try? SIPURI(presentity), let contact = contacts[.oma] else {
            return []
        }
        let document = xcap.documentURI(of: presentity)
        // RFC 5875 §4.1: the documents of interest as a resource list (RFC 4826 §3).
        let ns = GatewayConfiguration.resourceListsNamespace
        let entry = XMLElement(XMLName(ns, "entry"), attributes: [XMLAttribute(XMLName("", "uri"), document)])
        let list = XMLElement(XMLName(ns, "list"), children: [.element(entry)])
        let lists = XMLElement(XMLName(ns, "resource-lists"), children: [.element(list)])
        let configuration = SubscriberSubscription.Configuration(
            target: uri, from: SIPAddress(uri: uri), to: SIPAddress(uri: uri), contact: contact,
            package: Self.xcapDiffPackage, accept: [Self.xcapDiffType],
            expires: self.configuration.subscriptions.defaultExpires, body: XMLWriter().bytes(lists),
            bodyType: "application/resource-lists+xml")
        return startServerWatch(.xcapDiff(presentity: presentity, document: document), configuration)
    }
}
