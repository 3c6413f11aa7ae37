public import PresenceDocuments
public import SIPStack
import _GatewayInternals

extension CategoryName: Codable {
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

extension BatchCategorySubscription {
    /// A batched category subscription as the durable store keeps it (docs/state.md): the
    /// notifier-side dialog and each resource with the categories subscribed for it, in order
    /// ([MS-PRES] §3.4.5.1).
    public struct Record: Codable, Sendable, Hashable {
        public struct Resource: Codable, Sendable, Hashable {
            public var uri: String
            public var categories: [CategoryName]
        }

        public var subscription: NotifierSubscription.Record
        public var resources: [Resource]
        public var watcher: String
    }

    public func record(clock: WallClock) -> Record {
        Record(
            subscription: subscription.record(clock: clock),
            resources: resources.map { Record.Resource(uri: $0.key, categories: $0.value) }, watcher: watcher)
    }

    /// The subscription a record describes (see ``NotifierSubscription/init(record:clock:reservedSequences:)``).
    public init(record: Record, clock: WallClock, reservedSequences: UInt32 = 0) throws(SIPStackError) {
        var resources: SmallMap<String, [CategoryName]> = [:]
        for resource in record.resources { resources[resource.uri] = Self.categoryLists.interned(resource.categories) }
        self.init(
            subscription: try NotifierSubscription(
                record: record.subscription, clock: clock,
                reservedSequences: reservedSequences),
            resources: resources, watcher: record.watcher)
    }
}
