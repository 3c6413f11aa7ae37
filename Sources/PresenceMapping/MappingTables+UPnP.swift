public import PresenceDocuments

extension MappingTables {
    /// A row of `upnp-bands.tsv`: an availability range and the band of the UPnP Presence:1
    /// payloads it gives (`contacts/contact/@band`, docs/upnp-payloads.md); the bands are the
    /// availability classes of [MS-PRES] §2.2.2.7.1, Away split at 15000 as §3.7.5.4 splits it.
    public struct UPnPBandRow: Sendable, Hashable {
        public var range: Range
        /// The band token; nil for a range that gives none (the Unknown class, 0 to 2999).
        public var band: String?
        public var source: String
    }

    /// The `band` field of a `upnp-bands.tsv` row: `-` (none) or a token of the form the
    /// payload schema's `Band` type admits (``UPnPPresencePayload/isBandToken(_:)``).
    static func upnpBand(_ row: TSVTable.Row) throws(MappingError) -> String? {
        guard let band = row.optional("band") else { return nil }
        guard UPnPPresencePayload.isBandToken(band) else {
            throw row.error("band", "\"\(band)\" is not a band token (lower-case words joined by -)")
        }
        return band
    }
}
