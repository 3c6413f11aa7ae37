import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// The gateway's own subscriptions at the OMA side as the coordinator composes them: the
/// ``OMAServerWatches`` component keeps the watches and their watcher tables; here they are
/// started for what the configuration asks (`GatewayCore+XCAPDiff`, `GatewayCore+WatcherMirror`),
/// their dialogs applied (``dialogsChanged(_:)``), and what a NOTIFY told acted on.
extension GatewayCore {
    typealias ServerWatch = OMAServerWatches.Watch

    /// Starts a watch with the subscription `subscription` describes.
    mutating func startServerWatch(_ purpose: ServerWatch.Purpose, _ subscription: SubscriberSubscription.Configuration)
        -> [Action]
    {
        let key = takeKey()
        return apply(serverWatches.start(purpose, subscription, key: key, ids: &ids))
    }

    /// How a watch that ended goes on: made again, or given up (pres-rules are left to polling;
    /// a linked identity's mirrors are ended).
    private mutating func serverWatchEnded(_ ending: OMAServerWatches.Ending?, now: NIODeadline) -> [Action] {
        switch ending {
        case .restart(.xcapDiff(let presentity, _)): startXCAPDiffWatch(presentity)
        case .restart(.watcherList(let identity)): startWatcherListWatch(identity)
        case .gaveUp(.xcapDiff), nil: []
        case .gaveUp(.watcherList(let identity)): forgetMirroredList(identity.oma, now: now)
        }
    }

    /// Unsubscribes a watch (Expires 0); forgotten on its final NOTIFY, or 64·T1 later.
    mutating func endServerWatch(_ key: Int, now: NIODeadline) -> [Action] {
        apply(serverWatches.end(key, now: now))
    }

    mutating func removeServerWatch(_ key: Int) {
        dialogsChanged(serverWatches.remove(key).dialogs)
    }

    /// The final response to a watch's SUBSCRIBE.
    mutating func serverWatchResponse(_ key: Int, _ response: SIPResponse, request: SIPRequest, now: NIODeadline)
        -> [Action]
    {
        let (output, ending) = serverWatches.receive(response, to: request, key: key, now: now, jitter: ids.jitter())
        return apply(output) + serverWatchEnded(ending, now: now)
    }

    /// A NOTIFY of a watch. Its body is read first: one that cannot be read is refused with 400
    /// and a Warning, and the dialog is left as it was; an accepted one is acted on.
    mutating func serverWatchNotify(_ key: Int, _ request: SIPRequest, id: ServerRequestID, now: NIODeadline)
        -> [Action]
    {
        guard let watch = serverWatches[key] else {
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]
        }
        let news: ServerWatch.News
        do {
            news = try Self.news(in: request.body, for: watch.purpose)
        } catch {
            let warning = "399 \(contacts[.oma]?.uri.host ?? "presence-gateway") \"\(error)\""
            return [.respond(id, SIPResponse(replyingTo: request, statusCode: 400, headers: [(.warning, warning)]))]
        }
        let (output, accepted, ending) = serverWatches.receive(
            notify: request, id: id, key: key, now: now, jitter: ids.jitter())
        var out = apply(output)
        if accepted { out += act(on: news, watch: key, now: now) }
        return out + serverWatchEnded(ending, now: now)
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
        serverWatches.refresh(key, now: now)
    }

    /// The granted time ran out without a successful refresh: made again.
    mutating func serverWatchExpired(_ key: Int, now: NIODeadline) -> [Action] {
        let (output, ending) = serverWatches.expire(key, now: now)
        return apply(output) + serverWatchEnded(ending, now: now)
    }
}
