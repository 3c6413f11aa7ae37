public import PresenceDocuments
public import SIPMessages
public import SIPStack

extension CategoryPublisher {
    /// A SERVICE category publisher as the durable store keeps it (docs/state.md): its identity,
    /// dialog identifiers, last CSeq and the server versions it knows of each published instance
    /// ([MS-PRES] §3.2.5.1.2: a publish names the version it replaces). A SERVICE in flight is not
    /// kept; the owner publishes its current state again after a restart.
    public struct Record: Codable, Sendable, Hashable {
        public struct Version: Codable, Sendable, Hashable {
            public var container: UInt32
            public var category: CategoryName
            public var instance: UInt32
            public var version: UInt32
        }

        public var publisher: String
        public var contact: String?
        public var maxConflictRounds: Int
        public var extraHeaders: [[String]]
        public var callID: String
        public var localTag: String
        public var cseq: UInt32
        public var versions: [Version]
    }

    public var record: Record {
        Record(
            publisher: configuration.publisher.description, contact: configuration.contact?.description,
            maxConflictRounds: configuration.maxConflictRounds,
            extraHeaders: configuration.extraHeaders.map { [$0.name.displayName, $0.value] }, callID: callID,
            localTag: localTag, cseq: cseq,
            versions: versions.map {
                Record.Version(
                    container: $0.key.container, category: $0.key.categoryName,
                    instance: $0.key.instance, version: $0.value)
            }
            .sorted {
                ($0.container, $0.category.rawValue, $0.instance) < ($1.container, $1.category.rawValue, $1.instance)
            })
    }

    public init(record: Record) throws(SIPStackError) {
        var headers = SIPHeaders()
        for pair in record.extraHeaders {
            guard pair.count == 2 else {
                throw SIPStackError(.invalidRecord, "extra header \(pair): not a name and a value")
            }
            headers.append(SIPHeaderName(pair[0]), pair[1])
        }
        let publisher: SIPAddress
        var contact: SIPAddress?
        do {
            publisher = try SIPAddress(record.publisher)
            if let text = record.contact { contact = try SIPAddress(text) }
        } catch {
            throw SIPStackError(.invalidRecord, "publisher or contact: \(error)")
        }
        self.init(
            Configuration(
                publisher: publisher, contact: contact, maxConflictRounds: record.maxConflictRounds,
                extraHeaders: headers),
            callID: record.callID, localTag: record.localTag)
        cseq = record.cseq
        for version in record.versions {
            versions[
                ItemKey(container: version.container, categoryName: version.category, instance: version.instance)] =
                version.version
        }
    }
}
