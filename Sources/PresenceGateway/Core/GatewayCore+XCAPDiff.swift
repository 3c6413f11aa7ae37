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
/// polling; one that expires or ends `deactivated`/`timeout` is made again. The subscriptions
/// are not kept in the durable store: each start makes them anew.
extension GatewayCore {
    struct XCAPDiffWatch: Sendable {
        var presentity: String
        /// The document watched (RFC 4825 §6: its URI; its `sel` in a NOTIFY is relative to the root).
        var document: String
        var subscription: SubscriberSubscription
        var closing = false
    }

    /// The event package of RFC 5875 §4.
    static let xcapDiffPackage = SIPEventPackage(
        name: "xcap-diff", bodyTypes: [xcapDiffType], defaultBodyType: xcapDiffType, defaultExpires: 3600,
        minimumExpires: 60, maximumExpires: 86_400)
    static let xcapDiffType = "application/xcap-diff+xml"

    /// Subscribes to the changes of every XCAP presentity's document not watched yet, and ends the
    /// watches of presentities whose pres-rules no longer come from XCAP (at start and after a reload).
    mutating func watchXCAPDocuments(now: NIODeadline) -> [Action] {
        var out: [Action] = []
        let wanted = configuration.xcap?.xcapDiff == true ? configuration.xcapPresentities : []
        for (key, watch) in xcapDiffWatches.sorted(by: { $0.key < $1.key })
        where !watch.closing && !wanted.contains(watch.presentity) {
            out += endXCAPDiffWatch(key, now: now)
        }
        let watched = Set(xcapDiffWatches.values.filter { !$0.closing }.map(\.presentity))
        for presentity in wanted.sorted() where !watched.contains(presentity) {
            out += startXCAPDiffWatch(presentity)
        }
        return out
    }

    private mutating func startXCAPDiffWatch(_ presentity: String) -> [Action] {
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
        let key = takeKey()
        let (subscription, actions) = SubscriberSubscription.start(
            configuration, callID: ids.callID(), localTag: ids.tag())
        xcapDiffWatches[key] = XCAPDiffWatch(presentity: presentity, document: document, subscription: subscription)
        dialogs.insert(DialogKey(callID: subscription.callID, localTag: subscription.localTag), .xcapDiff(key))
        return legActions(actions, context: .xcapDiff(key))
    }

    /// Unsubscribes a watch (Expires 0); forgotten on its final NOTIFY, or 64·T1 later.
    mutating func endXCAPDiffWatch(_ key: Int, now: NIODeadline) -> [Action] {
        guard var watch = xcapDiffWatches[key], !watch.closing else { return [] }
        let actions = watch.subscription.unsubscribe()
        watch.closing = true
        xcapDiffWatches[key] = watch
        if actions.contains(where: { if case .ended = $0 { true } else { false } }) {
            removeXCAPDiffWatch(key)
            return []
        }
        return legActions(actions, context: .xcapDiff(key)).filter { if case .schedule = $0 { false } else { true } }
            + [.cancel(.refresh(.xcapDiff(key))), .schedule(.cleanup(.xcapDiff(key)), at: now + Self.cleanupDelay)]
    }

    mutating func removeXCAPDiffWatch(_ key: Int) {
        guard let watch = xcapDiffWatches.removeValue(forKey: key) else { return }
        let subscription = watch.subscription
        dialogs.remove(DialogKey(callID: subscription.callID, localTag: subscription.localTag), .xcapDiff(key))
    }

    /// The final response to a watch's SUBSCRIBE: a refusal leaves the presentity to polling; a
    /// refresh that found the subscription gone (481) makes it again.
    mutating func xcapDiffResponse(_ key: Int, _ response: SIPResponse, request: SIPRequest, now: NIODeadline)
        -> [Action]
    {
        guard var watch = xcapDiffWatches[key] else { return [] }
        let actions = watch.subscription.receive(response, now: now, jitter: ids.jitter())
        xcapDiffWatches[key] = watch
        let ended = actions.contains { if case .ended = $0 { true } else { false } }
        if watch.closing {
            if ended || response.statusCode >= 300 { removeXCAPDiffWatch(key) }
            return []
        }
        var out = legActions(actions, context: .xcapDiff(key))
        if ended {
            removeXCAPDiffWatch(key)
            // RFC 6665 §4.1.2.2: gone at a refresh, made again; refused, polling goes on alone.
            if response.statusCode == 481, (try? request.headers.to)?.tag != nil {
                out += startXCAPDiffWatch(watch.presentity)
            }
            return out
        }
        if response.statusCode >= 300, let end = watch.subscription.expiresAt {
            out.append(.schedule(.expiry(.xcapDiff(key)), at: end))
        }
        return out
    }

    /// A NOTIFY of a watch (RFC 5875 §4.3). A body that is not a readable xcap-diff document is
    /// refused with 400 and a Warning; one naming the watched document (by `sel`, RFC 5874 §3)
    /// has it fetched now.
    mutating func xcapDiffNotify(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline)
        -> [Action]
    {
        guard var watch = xcapDiffWatches[key] else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
        var changed = false
        if !request.body.isEmpty {
            do {
                let diff = try XCAPDiff(bytes: request.body)
                let watched = XCAPDiff.decoded(watch.document)
                changed = diff.documents.contains { diff.documentURI(of: $0) == watched }
            } catch {
                let warning = "399 \(contacts[.oma]?.uri.host ?? "presence-gateway") \"xcap-diff: \(error)\""
                return [
                    .respond(id, SIPResponse(replyingTo: request, statusCode: 400, headers: [(.warning, warning)]))
                ]
            }
        }
        let actions = watch.subscription.receive(notify: request, now: now, jitter: ids.jitter())
        xcapDiffWatches[key] = watch
        var out: [Action] = []
        var ended: String?
        for action in actions {
            switch action {
            case .respond(let response):
                out.append(.respond(id, response))
                if response.statusCode != 200 { changed = false }
            case .ended(let reason): ended = reason
            case .deliver: break
            default: out += legActions([action], context: .xcapDiff(key))
            }
        }
        if changed { out.append(.xcapDocumentChanged(presentity: watch.presentity)) }
        if let ended {
            removeXCAPDiffWatch(key)
            if !watch.closing, ended == "deactivated" || ended == "timeout" {
                out += startXCAPDiffWatch(watch.presentity)
            }
        }
        return out
    }

    /// The refresh timer of a watch.
    mutating func refreshXCAPDiffWatch(_ key: Int, now: NIODeadline) -> [Action] {
        guard var watch = xcapDiffWatches[key], !watch.closing else { return [] }
        let actions = watch.subscription.refresh(now: now)
        xcapDiffWatches[key] = watch
        return legActions(actions, context: .xcapDiff(key))
    }

    /// The granted time ran out without a successful refresh: made again.
    mutating func xcapDiffExpired(_ key: Int, now: NIODeadline) -> [Action] {
        guard let watch = xcapDiffWatches[key], !watch.closing, let end = watch.subscription.expiresAt, end <= now
        else { return [] }
        removeXCAPDiffWatch(key)
        return startXCAPDiffWatch(watch.presentity)
    }
}
