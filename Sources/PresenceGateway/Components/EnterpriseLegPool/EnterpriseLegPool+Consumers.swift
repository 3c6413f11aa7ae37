import MSPresenceEvents
import NIOCore
import PresenceDocuments
import SIPMessages
import SIPStack

/// The pool's consumers, in the shape of Kamailio's `pua_api_t` (a consumer asks for a
/// resource's state and later gives the request up; the pool keeps one subscription per
/// watcher and pool and its state per consumer): an OMA watch attaches to its enterprise
/// resource (``attach(_:contact:expires:ids:now:)``) and detaches from it
/// (``detach(_:from:now:)``); a leg whose last consumer left is unsubscribed (``end(_:now:)``)
/// and forgotten on its final NOTIFY (``close(_:)``). What a leg's dialog takes is reported per
/// resource (`EnterpriseLegPool+Notifications`); the coordinator hands each report to the
/// resource's consumer (`GatewayCore+OMAWatchers`).
extension EnterpriseLegPool {
    /// A consumer of one enterprise resource: an OMA watch, for its watcher.
    struct Consumer {
        /// The consumer's key (its OMA watch).
        var key: Int
        var watcher: String
        var watcherURI: SIPURI
        var resource: String
        var resourceURI: SIPURI
        /// The categories it asks for on a subscription of its own (a batch asks for
        /// ``GatewayCore/bridgedCategories``).
        var categories: [CategoryName]
        /// A subscription of its own rather than a share of a batch (a filtered watcher's).
        var single: Bool
        /// The watcher joins the resource's subscriber list ([MS-PRES] §3.6).
        var context: Bool
        var network: SourceNetwork
        /// Whether the watcher's peer was verified (a configured peer or a certificate).
        var verified: Bool
    }

    /// An attach's outcome: the leg serving the consumer now, the subscriber's actions to carry
    /// out, and the dialog a new leg opened.
    struct Attached {
        var leg: Int
        var actions: [BatchCategorySubscriber.Action]
        var output = ComponentOutput()
    }

    /// Serves `consumer` with the leg of its watcher toward the resource's known pool (the
    /// resource added to that batch dialog), or a new leg: a batch dialog, or a single
    /// subscription when the consumer or the enterprise asks for one (§3.4.5.1.1). A leg serves
    /// one consumer per resource.
    mutating func attach(
        _ consumer: Consumer, contact: SIPAddress, expires: UInt32, ids: inout IdentifierSource, now: NIODeadline
    ) -> Attached {
        let pool = pool(of: consumer.resource)
        if !consumer.single, let pool,
            let key = joinable(watcher: consumer.watcher, pool: pool, resource: consumer.resource)
        {
            let actions =
                modify(key) { leg -> [BatchCategorySubscriber.Action] in
                    leg.watches[consumer.resource] = consumer.key
                    return leg.subscriber.add([consumer.resource], context: consumer.context, now: now)
                } ?? []
            return Attached(leg: key, actions: actions)
        }
        let watcher = SIPAddress(uri: consumer.watcherURI)
        let key = ids.key()
        let single = consumer.single || (pool == nil && batchRefused)
        let (subscriber, actions): (BatchCategorySubscriber, [BatchCategorySubscriber.Action])
        if single {
            (subscriber, actions) = BatchCategorySubscriber.startSingle(
                watcher: watcher, resource: SIPAddress(uri: consumer.resourceURI), contact: contact,
                categories: consumer.categories, expires: expires, callID: ids.callID(), localTag: ids.tag(),
                context: consumer.context)
        } else {
            let target = pool.flatMap { try? SIPURI($0) } ?? consumer.resourceURI
            (subscriber, actions) = BatchCategorySubscriber.start(
                watcher: watcher, target: target, contact: contact, resources: [consumer.resource],
                categories: GatewayCore.bridgedCategories, expires: expires, callID: ids.callID(),
                localTag: ids.tag(), context: consumer.context)
        }
        var attached = Attached(leg: key, actions: actions)
        attached.output.dialog(.opened, .enterpriseLeg(key), subscriber.subscription.dialogKey)
        open(
            key,
            GatewayCore.EnterpriseLeg(
                watcher: consumer.watcher, pool: single ? nil : pool, single: single, subscriber: subscriber,
                watches: [consumer.resource: consumer.key], network: consumer.network, verified: consumer.verified))
        return attached
    }

    /// What a detach did to the leg.
    enum Detached {
        /// The resources left a batch still serving others: the subscriber's actions (an
        /// `unsubscribe` action, [MS-PRES] §3.4.5.1.3).
        case removed([BatchCategorySubscriber.Action])
        /// They were the leg's last: the leg ends (``end(_:now:)``).
        case ended(ComponentOutput)
    }

    /// The consumers of `resources` leave leg `key`; nil when the leg carried none of them.
    mutating func detach(_ resources: [String], from key: Int, now: NIODeadline) -> Detached? {
        let removed = modify(key) { leg -> [BatchCategorySubscriber.Action]? in
            let carried = resources.filter { leg.watches.removeValue(forKey: $0) != nil }
            guard !carried.isEmpty else { return nil }
            for resource in carried { leg.categories[resource] = nil }
            return leg.watches.isEmpty ? [] : leg.subscriber.remove(carried, now: now)
        }
        guard let actions = removed ?? nil else { return nil }
        if self[key]?.watches.isEmpty == true { return .ended(end(key, now: now)) }
        return .removed(actions)
    }

    /// Unsubscribes leg `key`; it is forgotten on its final NOTIFY (``close(_:)``), or 64·T1
    /// later (its cleanup timer). Nothing when it is ending already.
    mutating func end(_ key: Int, now: NIODeadline) -> ComponentOutput {
        guard self[key]?.closing == false,
            let (actions, ended) = modify(
                key,
                { leg in
                    let actions = leg.subscriber.unsubscribe()
                    leg.closing = true
                    return (actions, leg.subscriber.isTerminated)
                })
        else { return ComponentOutput() }
        if ended { return close(key) }
        let context = GatewayCore.Context.enterpriseLeg(key)
        let sends = GatewayCore.subscriberActions(
            actions.compactMap { if case .subscription(let a) = $0 { a } else { nil } }, context: context,
            to: .enterprise, trust: trust(of: key))
        return ComponentOutput(actions: GatewayCore.unsubscribing(sends, context, now: now))
    }

    /// Forgets leg `key` and its dialog.
    mutating func close(_ key: Int) -> ComponentOutput {
        var out = ComponentOutput()
        guard let leg = remove(key) else { return out }
        out.dialog(.closed, .enterpriseLeg(key), leg.subscriber.subscription.dialogKey)
        return out
    }

    /// The edge's marking of leg `key`'s requests (``edgeTrust(network:verified:)``);
    /// none for a watcher of the enterprise's own (the UPnP user of an enterprise identity):
    /// the edge marks only what comes from outside.
    func trust(of key: Int) -> String? {
        self[key].flatMap {
            $0.network == .sameEnterprise ? nil : Self.edgeTrust(network: $0.network, verified: $0.verified)
        }
    }

    /// The marking a Microsoft Access Edge gives federated traffic ([MS-PRES] §3.4.5.1.3: the
    /// server learns a watcher's network from the request's source-network information; the
    /// §4.6 and §4.3 examples carry it as `ms-source-network=federation` among the parameters of
    /// `ms-edge-proxy-message-trust`), for the requests the gateway sends into the enterprise on
    /// behalf of an OMA watcher, so the enterprise resolves the watcher as federated (or public
    /// cloud), never as one of its own:
    ///
    ///     ms-edge-proxy-message-trust: ms-source-network=federation|publiccloud;ms-source-verified-user=verified|unverified
    ///
    /// `verified` only when the watcher's request came from a configured peer or over mutual
    /// TLS. The examples' other parameters (`ms-source-type`, `ms-ep-fqdn`, `ms-remote-fqdn`) are
    /// left out: the enterprise's decision does not depend on them, and a batched category
    /// SUBSCRIBE must stay within the 1300 bytes RFC 3261 §18.1.1 allows over UDP.
    static func edgeTrust(network: SourceNetwork, verified: Bool) -> String {
        "ms-source-network=\(network == .publicCloud ? "publiccloud" : "federation");ms-source-verified-user=\(verified ? "verified" : "unverified")"
    }
}
