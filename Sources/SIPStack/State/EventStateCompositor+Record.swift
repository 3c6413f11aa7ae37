public import NIOCore

extension EventStateCompositor.Publication {
    /// A publication the compositor holds, as the durable store keeps it (docs/state.md): its
    /// entity-tag, resource, body and expiry (milliseconds since the Unix epoch) (RFC 3903 §6).
    public struct Record: Codable, Sendable, Hashable {
        public var entityTag: String
        public var resource: String
        public var contentType: String
        public var body: StoredBytes
        public var expiresAt: Int64
        public var sequence: UInt64
    }

    public func record(clock: WallClock) -> Record {
        Record(
            entityTag: entityTag, resource: resource, contentType: contentType, body: StoredBytes(body),
            expiresAt: clock.milliseconds(expiresAt), sequence: sequence)
    }

    public init(record: Record, clock: WallClock) {
        self.init(
            entityTag: record.entityTag, resource: record.resource, contentType: record.contentType,
            body: record.body.bytes, expiresAt: clock.deadline(milliseconds: record.expiresAt),
            sequence: record.sequence)
    }
}

extension EventStateCompositor {
    /// Takes back publications held before a restart, in the order they were first published;
    /// returns their expiry timers (one already past fires at once, RFC 3903 §6).
    public mutating func restore(_ restored: [Publication]) -> [Action] {
        var actions: [Action] = []
        for publication in restored.sorted(by: { $0.sequence < $1.sequence })
        where publications[publication.entityTag] == nil {
            publications[publication.entityTag] = publication
            byResource[publication.resource, default: []].append(publication.entityTag)
            nextSequence = max(nextSequence, publication.sequence)
            actions.append(.scheduleExpiry(entityTag: publication.entityTag, at: publication.expiresAt))
        }
        return actions
    }
}
