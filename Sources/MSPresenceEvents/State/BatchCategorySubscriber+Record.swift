public import NIOCore
public import PresenceDocuments
public import SIPStack

extension BatchCategorySubscriber {
    /// A batched (or single) category subscription toward the enterprise as the durable store keeps
    /// it (docs/state.md): the subscriber-side subscription, its resources and categories, and the
    /// additions or removals waiting to be sent ([MS-PRES] §4.5).
    public struct Record: Codable, Sendable, Hashable {
        public struct Queued: Codable, Sendable, Hashable {
            public var kind: String
            public var resources: [String]
            public var categories: [CategoryName]
        }

        public var subscription: SubscriberSubscription.Record
        public var resources: [String]
        public var categories: [CategoryName]
        public var queued: [Queued]
    }

    public func record(clock: WallClock) -> Record {
        Record(
            subscription: subscription.record(clock: clock), resources: resources, categories: categories,
            queued: queued.map {
                Record.Queued(kind: $0.kind.rawValue, resources: $0.resources.map(\.uri), categories: $0.categories)
            })
    }

    public init(record: Record, clock: WallClock) throws(SIPStackError) {
        self.init(
            subscription: try SubscriberSubscription(record: record.subscription, clock: clock),
            resources: record.resources, categories: record.categories)
        for action in record.queued {
            guard let kind = BatchSubscribe.Action.Kind(rawValue: action.kind) else {
                throw SIPStackError(.invalidRecord, "queued action \(action.kind): not subscribe or unsubscribe")
            }
            queued.append(
                BatchSubscribe.Action(
                    kind: kind, resources: action.resources.map { .init(uri: $0) },
                    categories: action.categories))
        }
    }

    /// After a restart, for a dialog that was being ended: the unsubscribe again
    /// (``SubscriberSubscription/unsubscribeAgain()``).
    public mutating func unsubscribeAgain() -> [Action] { wrap(subscription.unsubscribeAgain()) }

    /// Whether additions or removals wait for the outstanding SUBSCRIBE's response.
    public var hasQueued: Bool { !queued.isEmpty }

    /// What a restored subscription sends first: one SUBSCRIBE in its dialog with the additions
    /// and removals that were waiting and every resource it holds, so the notifier's state and
    /// this side's agree again and the current state comes back ([MS-PRES] §4.5: the 200 OK
    /// carries it). Nothing before the dialog exists or after it ended.
    public mutating func resume(now: NIODeadline) -> [Action] {
        let all = BatchSubscribe.Action(
            kind: .subscribe, resources: resources.map { .init(uri: $0) }, categories: categories)
        let pending = queued
        queued = []
        return wrap(
            subscription.resubscribe(body: Self.body(subscription.configuration.from, pending + [all]), now: now))
    }
}
