import PresenceDocuments
import UPnPDevice

/// The service's documents as the component reads and writes them (docs/upnp-payloads.md, the
/// project's provisional schema): what the actions that touch no other flow answer, the
/// evented values, and the registrations' limits. A payload that does not parse is refused with
/// UPnP error 600 (Argument Value Invalid, UDA 1.1 §3.2.2).
extension UPnPPresenceBridge {
    /// GetPresence (ISO/IEC 29341-26-16 §5.5.1): the user's presence as last set, a PIDF
    /// document; empty before the first UpdatePresence.
    var presenceText: String { presence.map { Self.text($0.serialized()) } ?? "" }

    /// GetContactPresence (§5.5.3): the registered contact `targetContact` names (a ContactId
    /// document), as a one-contact PresenceOfContactsList; error 600 for a contact not
    /// registered.
    func contactPresence(_ targetContact: String) throws(UPnPFault) -> String {
        let contact = try Self.contact(targetContact)
        guard let key = key(of: contact), let registration = self[key] else {
            throw UPnPFault(code: 600, description: "Argument Value Invalid: \(contact) is not registered")
        }
        return Self.text(UPnPContactPresenceList(contacts: [registration.shown]).serialized())
    }

    /// GetPresenceOfContactsUpdate (§5.5.4): the contacts whose presence changed since the last
    /// call.
    mutating func takeUpdatesText() -> String { Self.text(takeUpdates().serialized()) }

    /// The evented variables as they are now, for a new GENA subscriber's initial event
    /// (UDA 1.1 §4.3.2).
    var eventedValues: [EventedVariable: String] {
        [
            .userPresenceInfo: presenceText,
            .watcher: Self.text(UPnPWatcherList(watchers: watcherList).serialized()),
        ]
    }

    /// Why a new registration from `controlPoint` is refused (UPnP 501): the device holds
    /// `limits.maxRegistrations`, or the control point its `maxRegistrationsPerControlPoint`;
    /// nil when it may be made.
    func refusal(from controlPoint: String, limits: GatewayConfiguration.UPnP) -> UPnPFault? {
        if count >= limits.maxRegistrations {
            return UPnPFault(code: 501, description: "Action Failed: \(limits.maxRegistrations) registrations held")
        }
        if count(of: controlPoint) >= limits.maxRegistrationsPerControlPoint {
            return UPnPFault(
                code: 501,
                description:
                    "Action Failed: \(limits.maxRegistrationsPerControlPoint) registrations held for \(controlPoint)")
        }
        return nil
    }

    /// A UserPresenceInfo payload: a PIDF document (RFC 3863); error 600 otherwise.
    static func pidf(_ payload: String) throws(UPnPFault) -> PIDFDocument {
        do {
            return try PIDFDocument(bytes: Array(payload.utf8))
        } catch {
            throw UPnPFault(code: 600, description: "Argument Value Invalid: \(error)")
        }
    }

    /// A ContactId document's contact as an address of record; error 600 otherwise.
    static func contact(_ document: String) throws(UPnPFault) -> String {
        let id: UPnPContactID
        do {
            id = try UPnPContactID(bytes: Array(document.utf8))
        } catch {
            throw UPnPFault(code: 600, description: "Argument Value Invalid: \(error)")
        }
        guard let contact = WatcherIdentity.addressOfRecord(id.uri) else {
            throw UPnPFault(code: 600, description: "Argument Value Invalid: \(id.uri) is no address of record")
        }
        return contact
    }

    /// A RegistrationResult document.
    static func registration(
        _ contact: String, _ result: UPnPRegistrationResult.Result, expires: Int32? = nil, status: Int? = nil
    ) -> String {
        text(
            UPnPRegistrationResult(uri: contact, result: result, status: status, expires: expires.map(Int.init))
                .serialized())
    }
}
