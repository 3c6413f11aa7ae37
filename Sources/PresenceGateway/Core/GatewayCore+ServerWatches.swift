import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// The gateway's own subscriptions at the OMA side, which no watcher asked for: to the changes of
/// a presentity's pres-rules (`xcap-diff`, RFC 5875, `GatewayCore+XCAPDiff`) and to a linked
/// identity's watchers at the OMA presence server (`presence.winfo`, RFC 3857,
/// `GatewayCore+WatcherMirror`). Each is refreshed as RFC 6665 §4.1.2.2 says, made again when it
/// expires, is found gone at a refresh (481) or ends `deactivated`/`timeout`, and given up when
/// refused. They are not kept in the durable store: each start makes them anew.
extension GatewayCore {
    struct ServerWatch: Sendable {
        enum Purpose: Sendable, Hashable {
            /// The changes of `presentity`'s pres-rules document, by its URI (RFC 4825 §6: its
            /// `sel` in a NOTIFY is relative to the root).
            case xcapDiff(presentity: String, document: String)
            /// The watchers of a linked identity's OMA identity.
            case watcherList(GatewayConfiguration.LinkedIdentity)
        }
        var purpose: Purpose
        var subscription: SubscriberSubscription
        var closing = false
        /// The OMA peer its SUBSCRIBE was sent to (``GatewayCore/reached(_:for:)``): its NOTIFYs
        /// must come from there, and its refreshes go nowhere else.
        var peer: DialogPeer?

        /// What a NOTIFY of a watch told.
        enum News {
            case nothing
            /// The pres-rules document of `presentity` changed.
            case documentChanged(presentity: String)
            /// The watchers at the OMA presence server, full or partial.
            case watchers(WatcherInfo)
        }
    }

    /// Starts a watch with the subscription `subscription` describes.
    mutating func startServerWatch(_ purpose: ServerWatch.Purpose, _ subscription: SubscriberSubscription.Configuration)
        -> [Action]
    {
        let key = takeKey()
        let (started, actions) = SubscriberSubscription.start(subscription, callID: ids.callID(), localTag: ids.tag())
        serverWatches[key] = ServerWatch(purpose: purpose, subscription: started)
        dialogs.insert(DialogKey(callID: started.callID, localTag: started.localTag), .serverWatch(key))
        return legActions(actions, context: .serverWatch(key))
    }

    /// Makes a watch again (after it expired, was found gone or was deactivated).
    private mutating func restartServerWatch(_ purpose: ServerWatch.Purpose) -> [Action] {
        switch purpose {
        case .xcapDiff(let presentity, _): startXCAPDiffWatch(presentity)
        case .watcherList(let identity): startWatcherListWatch(identity)
        }
    }

    /// A watch ended for good (refused, or ended for another reason than the ones it is made
    /// again for): pres-rules are left to polling; a linked identity's mirrors are ended.
    private mutating func serverWatchGaveUp(_ purpose: ServerWatch.Purpose, now: NIODeadline) -> [Action] {
        switch purpose {
        case .xcapDiff: []
        case .watcherList(let identity): forgetMirroredList(identity.oma, now: now)
        }
    }

    /// Unsubscribes a watch (Expires 0); forgotten on its final NOTIFY, or 64·T1 later.
    mutating func endServerWatch(_ key: Int, now: NIODeadline) -> [Action] {
        guard var watch = serverWatches[key], !watch.closing else { return [] }
        let actions = watch.subscription.unsubscribe()
        watch.closing = true
        serverWatches[key] = watch
        if actions.contains(where: { if case .ended = $0 { true } else { false } }) {
            removeServerWatch(key)
            return []
        }
        return legActions(actions, context: .serverWatch(key)).filter { if case .schedule = $0 { false } else { true } }
            + [
                .cancel(.refresh(.serverWatch(key))),
                .schedule(.cleanup(.serverWatch(key)), at: now + Self.cleanupDelay),
            ]
    }

    mutating func removeServerWatch(_ key: Int) {
        guard let watch = serverWatches.removeValue(forKey: key) else { return }
        let subscription = watch.subscription
        dialogs.remove(DialogKey(callID: subscription.callID, localTag: subscription.localTag), .serverWatch(key))
    }

    /// The final response to a watch's SUBSCRIBE: a refusal gives the watch up; a refresh that
    /// found the subscription gone (481) makes it again.
    mutating func serverWatchResponse(_ key: Int, _ response: SIPResponse, request: SIPRequest, now: NIODeadline)
        -> [Action]
    {
        guard var watch = serverWatches[key] else { return [] }
        let actions = watch.subscription.receive(response, now: now, jitter: ids.jitter())
        serverWatches[key] = watch
        let ended = actions.contains { if case .ended = $0 { true } else { false } }
        if watch.closing {
            if ended || response.statusCode >= 300 { removeServerWatch(key) }
            return []
        }
        var out = legActions(actions, context: .serverWatch(key))
        if ended {
            removeServerWatch(key)
            // RFC 6665 §4.1.2.2: gone at a refresh, made again.
            if response.statusCode == 481, (try? request.headers.to)?.tag != nil {
                return out + restartServerWatch(watch.purpose)
            }
            return out + serverWatchGaveUp(watch.purpose, now: now)
        }
        if response.statusCode >= 300, let end = watch.subscription.expiresAt {
            out.append(.schedule(.expiry(.serverWatch(key)), at: end))
        }
        return out
    }

    /// A NOTIFY of a watch. Its body is read first: one that cannot be read is refused with 400
    /// and a Warning, and the dialog is left as it was; an accepted one is acted on.
    mutating func serverWatchNotify(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline)
        -> [Action]
    {
        guard var watch = serverWatches[key] else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
        let news: ServerWatch.News
        do {
            news = try Self.news(in: request.body, for: watch.purpose)
        } catch {
            let warning = "399 \(contacts[.oma]?.uri.host ?? "presence-gateway") \"\(error)\""
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 400, headers: [(.warning, warning)]))]
        }
        let actions = watch.subscription.receive(notify: request, now: now, jitter: ids.jitter())
        serverWatches[key] = watch
        var out: [Action] = []
        var accepted = true
        var ended: String?
        for action in actions {
            switch action {
            case .respond(let response):
                out.append(.respond(id, response))
                if response.statusCode != 200 { accepted = false }
            case .ended(let reason): ended = reason
            case .deliver: break
            default: out += legActions([action], context: .serverWatch(key))
            }
        }
        if accepted { out += act(on: news, watch: key, now: now) }
        guard let ended else { return out }
        removeServerWatch(key)
        if watch.closing { return out }
        if ended == "deactivated" || ended == "timeout" { return out + restartServerWatch(watch.purpose) }
        return out + serverWatchGaveUp(watch.purpose, now: now)
    }

    /// A NOTIFY body read (RFC 5874 for `xcap-diff`, RFC 3858 for `presence.winfo`); an empty
    /// one tells nothing (RFC 6665 §4.2.2: a NOTIFY may carry no body).
    private static func news(in body: [UInt8], for purpose: ServerWatch.Purpose) throws -> ServerWatch.News {
        guard !body.isEmpty else { return .nothing }
        switch purpose {
        case .xcapDiff(let presentity, let document):
            do {
                let diff = try XCAPDiff(bytes: body)
                let watched = XCAPDiff.decoded(document)
                return diff.documents.contains { diff.documentURI(of: $0) == watched }
                    ? .documentChanged(presentity: presentity) : .nothing
            } catch {
                throw NewsError(text: "xcap-diff: \(error)")
            }
        case .watcherList:
            do {
                return .watchers(try WatcherInfo(bytes: body))
            } catch {
                throw NewsError(text: "watcherinfo: \(error)")
            }
        }
    }

    private struct NewsError: Error, CustomStringConvertible {
        var text: String
        var description: String { text }
    }

    /// Acts on an accepted NOTIFY's news.
    private mutating func act(on news: ServerWatch.News, watch key: Int, now: NIODeadline) -> [Action] {
        switch news {
        case .nothing: []
        case .documentChanged(let presentity): [.xcapDocumentChanged(presentity: presentity)]
        case .watchers(let info): watchersListed(info, watch: key, now: now)
        }
    }

    /// The refresh timer of a watch.
    mutating func refreshServerWatch(_ key: Int, now: NIODeadline) -> [Action] {
        guard var watch = serverWatches[key], !watch.closing else { return [] }
        let actions = watch.subscription.refresh(now: now)
        serverWatches[key] = watch
        return legActions(actions, context: .serverWatch(key))
    }

    /// The granted time ran out without a successful refresh: made again.
    mutating func serverWatchExpired(_ key: Int, now: NIODeadline) -> [Action] {
        guard let watch = serverWatches[key], !watch.closing, let end = watch.subscription.expiresAt, end <= now
        else { return [] }
        removeServerWatch(key)
        return restartServerWatch(watch.purpose)
    }
}
