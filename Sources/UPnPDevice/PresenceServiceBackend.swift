/// The seam between the UPnP device and what gives presence its meaning (the bridge to SIP).
///
/// The device calls one method per action of ISO/IEC 29341-26-16 §5.5 after it has checked the
/// SOAP envelope, the argument names and their order, the i4 value of `Expire` and the
/// well-formedness of the XML arguments. The payloads are strings (the XML documents of
/// ISO/IEC 29341-26-16 §5.3, Annex B), opaque here. A method throws a ``UPnPFault`` (a
/// service code of §5.5.8, or 501 Action Failed); any other error becomes 501.
///
/// Changes of the evented variables come through ``changes``: the device reads it once, for as
/// long as it runs, and moderates and fans them out to the GENA subscribers.
public protocol PresenceServiceBackend: Sendable {
    /// §5.5.1: the user's own presence (out `UserPresence`).
    func getPresence() async throws -> String
    /// §5.5.2: sets the user's presence (in `UpdatedUserPresence`).
    func updatePresence(_ userPresence: String) async throws
    /// §5.5.3: the presence of one contact (out `ContactPresence`).
    func getContactPresence(targetContact: String) async throws -> String
    /// §5.5.4: the contacts whose presence changed (out `ContactPresenceUpdate`).
    func getPresenceOfContactsUpdate() async throws -> String
    /// §5.5.5: watches a contact for `expire` seconds (out `RegistrationResult`). `controlPoint`
    /// is the address the request came from, for limits per control point.
    func registerForContactPresence(contact: String, expire: Int32, controlPoint: String) async throws -> String
    /// §5.5.6: answers a contact's request to watch the user.
    func authorizePresenceReactive(contact: String, expire: Int32, userPresenceInfo: String) async throws
    /// §5.5.7: allows watchers before they ask.
    func authorizePresenceProactive(userPresenceInfo: String, expire: Int32, watcherList: String) async throws

    /// The current values of the evented variables, for the initial event message of a new
    /// subscription (UDA 1.1 §4.3.2). A variable missing here is sent empty.
    func eventedValues() async -> [EventedVariable: String]
    /// The changes of the evented variables, in order. Read by one device only.
    var changes: AsyncStream<EventedChange> { get }
}
