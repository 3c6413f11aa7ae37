import XMLBridge

/// A backend that keeps everything in memory: the user's presence, the contacts' presence as set
/// by ``setContactPresence(_:_:)``, registrations and authorizations. For tests, the demo
/// executable, and as the reference of what the bridge to SIP has to do.
public actor InMemoryPresenceBackend: PresenceServiceBackend {
    public nonisolated let changes: AsyncStream<EventedChange>
    private let continuation: AsyncStream<EventedChange>.Continuation
    private var userPresence: String
    private var contactPresence: [String: String] = [:]
    private var contactUpdates: [String] = []
    private var values: [EventedVariable: String] = [:]
    /// Registrations (contact → seconds), authorizations, in the order made.
    public private(set) var registrations: [(contact: String, expire: Int32)] = []
    public private(set) var authorizations: [String] = []

    public init(userPresence: String = "<presence/>") {
        self.userPresence = userPresence
        (changes, continuation) = AsyncStream.makeStream(of: EventedChange.self, bufferingPolicy: .bufferingNewest(256))
        values[.userPresenceInfo] = userPresence
    }

    public func getPresence() -> String { userPresence }

    public func updatePresence(_ userPresence: String) {
        self.userPresence = userPresence
        report(EventedChange(.userPresenceInfo, userPresence))
    }

    public func getContactPresence(targetContact: String) throws -> String {
        guard let presence = contactPresence[targetContact] else {
            throw UPnPFault(code: 600, description: "Argument Value Invalid")
        }
        return presence
    }

    public func getPresenceOfContactsUpdate() -> String {
        let list = "<contacts>" + contactUpdates.joined() + "</contacts>"
        contactUpdates.removeAll()
        return list
    }

    public func registerForContactPresence(contact: String, expire: Int32, controlPoint: String) -> String {
        registrations.append((contact, expire))
        return empty("registration", ["contact": contact, "expires": String(expire), "result": "ok"])
    }

    public func authorizePresenceReactive(contact: String, expire: Int32, userPresenceInfo: String) {
        authorizations.append("reactive " + contact)
        report(
            EventedChange(
                .watcher, "<watchers>" + empty("watcher", ["contact": contact, "state": "active"]) + "</watchers>"))
    }

    public func authorizePresenceProactive(userPresenceInfo: String, expire: Int32, watcherList: String) {
        authorizations.append("proactive")
        report(EventedChange(.watcher, watcherList))
    }

    public func eventedValues() -> [EventedVariable: String] { values }

    /// Sets a contact's presence (as the bridge would on a SIP NOTIFY) and reports the update.
    public func setContactPresence(_ contact: String, _ presence: String) {
        contactPresence[contact] = presence
        contactUpdates.append(presence)
        report(EventedChange(.presenceOfContactsUpdate, "<contacts>" + presence + "</contacts>"))
    }

    private func report(_ change: EventedChange) {
        values[change.variable] = change.value
        continuation.yield(change)
    }

    /// `<local a="v" …/>`, attribute values escaped by the project's writer.
    private func empty(_ local: String, _ attributes: KeyValuePairs<String, String>) -> String {
        let element = XMLElement(
            XMLName("", local), attributes: attributes.map { XMLAttribute(XMLName("", $0.key), $0.value) })
        return String(decoding: XMLWriter(indent: nil, declaration: false).bytes(element), as: UTF8.self)
    }
}
