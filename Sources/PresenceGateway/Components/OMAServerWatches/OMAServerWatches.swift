import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// The gateway's own subscriptions at the OMA side, which no watcher asked for: to the changes of
/// a presentity's pres-rules (`xcap-diff`, RFC 5875, `GatewayCore+XCAPDiff`) and to a linked
/// identity's watchers at the OMA presence server (`presence.winfo`, RFC 3857,
/// `GatewayCore+WatcherMirror`), with the watcher tables the latter keep (RFC 3858 §4.4). Each
/// is refreshed as RFC 6665 §4.1.2.2 says, made again when it expires, is found gone at a refresh
/// (481) or ends `deactivated`/`timeout`, and given up when refused. They are not kept in the
/// durable store: each start makes them anew.
///
/// Its tables are its own. It returns what the coordinator (`GatewayCore+ServerWatches`) acts on:
/// the dialogs it opened and closed (``DialogChange``; the gateway's own, charged to no peer), the
/// messages to send, and what ended a watch (``Ending``) or a NOTIFY told (``Watch/News``).
struct OMAServerWatches: Sendable {
    struct Watch: Sendable {
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

        var dialogKey: SIPDialogKey { SIPDialogKey(callID: subscription.callID, localTag: subscription.localTag) }
    }

    /// How a watch that ended goes on.
    enum Ending {
        /// Made again (it expired, was found gone at a refresh, or was deactivated).
        case restart(Watch.Purpose)
        /// Ended for good (refused, or for another reason).
        case gaveUp(Watch.Purpose)
    }

    /// The watchers the OMA presence server lists for one OMA identity (RFC 3858 §4.4: a
    /// subscriber's table, by watcher id).
    struct MirroredList: Sendable {
        var version: UInt64
        var watchers: [String: (uri: String, status: WatcherInfo.Status)] = [:]
    }

    private var watches: [Int: Watch] = [:]
    /// The tables of the `presence.winfo` watches, by OMA identity.
    private var lists: [String: MirroredList] = [:]

    subscript(key: Int) -> Watch? { watches[key] }

    var keys: [Int] { watches.keys.sorted() }

    /// Starts a watch under `key` with the subscription `configuration` describes.
    mutating func start(
        _ purpose: Watch.Purpose, _ configuration: SubscriberSubscription.Configuration, key: Int,
        ids: inout IdentifierSource
    ) -> ComponentOutput {
        let (started, actions) = SubscriberSubscription.start(configuration, callID: ids.callID(), localTag: ids.tag())
        let watch = Watch(purpose: purpose, subscription: started)
        watches[key] = watch
        return ComponentOutput(
            actions: Self.actions(actions, key), dialogs: [DialogChange(.opened, .serverWatch(key), watch.dialogKey)])
    }

    /// Unsubscribes a watch (Expires 0); forgotten on its final NOTIFY, or 64·T1 later.
    mutating func end(_ key: Int, now: NIODeadline) -> ComponentOutput {
        guard var watch = watches[key], !watch.closing else { return ComponentOutput() }
        let actions = watch.subscription.unsubscribe()
        watch.closing = true
        watches[key] = watch
        if actions.contains(where: { if case .ended = $0 { true } else { false } }) { return remove(key) }
        return ComponentOutput(
            actions: GatewayCore.unsubscribing(Self.actions(actions, key), .serverWatch(key), now: now))
    }

    /// Forgets a watch: the dialog it closed.
    mutating func remove(_ key: Int) -> ComponentOutput {
        guard let watch = watches.removeValue(forKey: key) else { return ComponentOutput() }
        return ComponentOutput(dialogs: [DialogChange(.closed, .serverWatch(key), watch.dialogKey)])
    }

    /// The final response to a watch's SUBSCRIBE: a refusal gives the watch up; a refresh that
    /// found the subscription gone (481) makes it again (RFC 6665 §4.1.2.2).
    mutating func receive(
        _ response: SIPResponse, to request: SIPRequest, key: Int, now: NIODeadline, jitter: Double
    ) -> (output: ComponentOutput, ending: Ending?) {
        guard var watch = watches[key] else { return (ComponentOutput(), nil) }
        let actions = watch.subscription.receive(response, now: now, jitter: jitter)
        watches[key] = watch
        let ended = actions.contains { if case .ended = $0 { true } else { false } }
        if watch.closing {
            return (ended || response.statusCode >= 300 ? remove(key) : ComponentOutput(), nil)
        }
        var output = ComponentOutput(actions: Self.actions(actions, key))
        if ended {
            output.dialogs += remove(key).dialogs
            let gone = response.statusCode == 481 && (try? request.headers.to)?.tag != nil
            return (output, gone ? .restart(watch.purpose) : .gaveUp(watch.purpose))
        }
        if response.statusCode >= 300, let end = watch.subscription.expiresAt {
            output.actions.append(.schedule(.expiry(.serverWatch(key)), at: end))
        }
        return (output, nil)
    }

    /// A NOTIFY of a watch whose body was read (`news`): answered, and whether the news is to be
    /// acted on (the NOTIFY was accepted) and how the watch goes on if the NOTIFY ended it.
    mutating func receive(
        notify request: SIPRequest, id: GatewayCore.ServerRequestID, key: Int, now: NIODeadline, jitter: Double
    )
        -> (output: ComponentOutput, accepted: Bool, ending: Ending?)
    {
        guard var watch = watches[key] else {
            return (
                ComponentOutput(actions: [.respond(id, SIPResponse(replyingTo: request, statusCode: 481))]), false, nil
            )
        }
        let actions = watch.subscription.receive(notify: request, now: now, jitter: jitter)
        watches[key] = watch
        var output = ComponentOutput()
        var accepted = true
        var ended: String?
        for action in actions {
            switch action {
            case .respond(let response):
                output.actions.append(.respond(id, response))
                if response.statusCode != 200 { accepted = false }
            case .ended(let reason): ended = reason
            case .deliver: break
            default: output.actions += Self.actions([action], key)
            }
        }
        guard let ended else { return (output, accepted, nil) }
        output.dialogs += remove(key).dialogs
        if watch.closing { return (output, accepted, nil) }
        let again = ended == "deactivated" || ended == "timeout"
        return (output, accepted, again ? .restart(watch.purpose) : .gaveUp(watch.purpose))
    }

    /// The refresh timer of a watch.
    mutating func refresh(_ key: Int, now: NIODeadline) -> [GatewayCore.Action] {
        guard var watch = watches[key], !watch.closing else { return [] }
        let actions = watch.subscription.refresh(now: now)
        watches[key] = watch
        return Self.actions(actions, key)
    }

    /// The granted time ran out without a successful refresh: the watch is forgotten, to be made
    /// again.
    mutating func expire(_ key: Int, now: NIODeadline) -> (output: ComponentOutput, ending: Ending?) {
        guard let watch = watches[key], !watch.closing, let end = watch.subscription.expiresAt, end <= now else {
            return (ComponentOutput(), nil)
        }
        return (remove(key), .restart(watch.purpose))
    }

    /// The peer a watch's SUBSCRIBE reached.
    mutating func reached(_ peer: DialogPeer?, key: Int) { watches[key]?.peer = peer }

    /// The watch's SUBSCRIBE went out again as `request`, with credentials and CSeq one higher
    /// (RFC 3261 §22.2; `GatewayCore.resent(_:for:)`). False: no such watch, or nothing
    /// outstanding.
    mutating func resent(_ request: SIPRequest, key: Int) -> Bool {
        watches[key]?.subscription.resent(request) ?? false
    }

    /// Every watch's peer after a reload.
    mutating func carryPeers(_ carried: (DialogPeer?) -> DialogPeer?) {
        for key in keys {
            let peer = carried(watches[key]?.peer)
            watches[key]?.peer = peer
        }
    }

    private static func actions(_ actions: [SubscriberSubscription.Action], _ key: Int) -> [GatewayCore.Action] {
        GatewayCore.subscriberActions(actions, context: .serverWatch(key), to: .oma)
    }

    // MARK: - Watcher tables

    func list(of identity: String) -> MirroredList? { lists[identity] }

    mutating func setList(_ list: MirroredList?, of identity: String) { lists[identity] = list }

    /// A watcher information document of a `presence.winfo` watch (RFC 3858 §4.4): a full one
    /// replaces the table, a partial one updates it by watcher id; one older than the table is
    /// discarded (nil), and a partial one that skips a version (or comes first) is applied. After
    /// a partial one that went back or skipped, full state is asked for with a refresh (a full one
    /// that went back is only discarded, so that a server whose versions keep going back is not
    /// refreshed in a loop). At most `limit` rows are kept.
    mutating func listed(_ info: WatcherInfo, key: Int, limit: Int, now: NIODeadline)
        -> (refresh: [GatewayCore.Action], identity: GatewayConfiguration.LinkedIdentity?)
    {
        guard var watch = watches[key], case .watcherList(let identity) = watch.purpose else { return ([], nil) }
        var refresh: [GatewayCore.Action] = []
        let list = lists[identity.oma]
        let old = list.map { info.version <= $0.version } ?? false
        if info.state == .partial, old || list.map({ info.version > $0.version + 1 }) ?? true {
            refresh = Self.actions(watch.subscription.refresh(now: now), key)
            watches[key] = watch
        }
        if old { return (refresh, nil) }
        var table = info.state == .full || list == nil ? [:] : list?.watchers ?? [:]
        let resource = WatcherIdentity.addressOfRecord(identity.oma)
        for watcherList in info.lists
        where watcherList.package == "presence" && WatcherIdentity.addressOfRecord(watcherList.resource) == resource {
            for watcher in watcherList.watchers {
                if watcher.status == .terminated {
                    table[watcher.id] = nil
                } else if table[watcher.id] != nil || table.count < limit {
                    table[watcher.id] = (watcher.uri, watcher.status)
                }
            }
        }
        lists[identity.oma] = MirroredList(version: info.version, watchers: table)
        return (refresh, identity)
    }
}
