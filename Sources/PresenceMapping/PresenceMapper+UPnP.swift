public import PresenceDocuments

extension PresenceMapper {
    /// The band of the UPnP Presence:1 payloads (`contacts/contact/@band`) for an [MS-PRES]
    /// availability: the `upnp-bands.tsv` row whose range holds it; nil for the Unknown class
    /// (0 to 2999, [MS-PRES] §2.2.2.7.1), which gives no band.
    public func upnpBand(availability: UInt32) -> String? {
        for row in tables.upnpBands where row.range.contains(availability, nil) { return row.band }
        return nil
    }

    /// The band of a contact's PIDF document: the availability the PIDF → categories
    /// conversion gives it (``state(from:)``, `pidf-availability.tsv` and the OMA read rows),
    /// then ``upnpBand(availability:)``. nil when that conversion finds no availability or one
    /// in the Unknown class (a PIDF without a usable `<basic>`).
    public func upnpBand(of pidf: PIDFDocument) -> String? {
        state(from: pidf).availability.flatMap { upnpBand(availability: $0) }
    }
}
