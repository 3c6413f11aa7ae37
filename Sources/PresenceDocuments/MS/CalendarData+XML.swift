public import XMLBridge

extension CalendarData {
    /// Reads the element from a tree: replayed as events into ``init(cursor:)``, the one decoder.
    public init(xml: XMLElement) throws(XMLError) {
        try self.init(cursor: XMLEvents(replaying: xml).root)
    }

    /// Reads `calendarData` ([MS-PRES] §2.2.2.7.8, schema §7.8);
    /// the `workingHours` category uses the same element (§2.2.2.7.9).
    ///
    /// ```
    /// <calendarData mailboxID majorVersion? minorVersion?>
    ///   ( ex:WorkingHours | freeBusy startTime granularity encodingVersion )?
    /// </calendarData>
    /// ```
    ///
    /// Lenient: `mailboxID` may be missing (§4.3.3 examples); `WorkingHours`
    /// (Exchange types namespace) is kept verbatim, as its recorded events; the free/busy base64 text is
    /// trimmed; other elements go to `extensions`.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName(NS.calendarData, "calendarData"))
        try self.init(calendarDataElement: xml)
    }

    /// ``init(cursor:)`` for an element whose name is known to be right (the decoder of the
    /// enclosing element has matched it), without testing it again.
    init(calendarDataElement xml: XMLCursor) throws(XMLError) {
        // The parts are gathered in locals and the data made once at the end: made first and
        // filled in by the closure, it was built aside and copied into place (a retain and a
        // release of each of its references).
        var workingHours: VerbatimElement?
        var freeBusy: FreeBusy?
        var extensions: [XMLElement] = []
        xml.forEachElement { child in
            // Each child's name looked up in the recording, not copied out to be compared.
            switch child.match(in: Self.childNames) {
            case .workingHours? where workingHours == nil:
                workingHours = .recorded(child.detached)
            case .freeBusy? where freeBusy == nil:
                freeBusy = FreeBusy(
                    startTime: child[attribute: "startTime"], granularity: child[attribute: "granularity"],
                    encodingVersion: child[attribute: "encodingVersion"], data: child.trimmedText)
            case .delimiter?, .end?:
                break
            default:
                extensions.append(child.subtree)
            }
        }
        // The attributes read in one pass, names compared in the recording (a lookup by name
        // walked them all, once per attribute); the first of a repeated name counts, as with a lookup.
        var mailboxID: String?
        var majorVersion: String?
        var minorVersion: String?
        xml.forEachAttributeValue(in: Self.attributeNames) { attribute, value in
            switch attribute {
            case .mailboxID?: if mailboxID == nil { mailboxID = xml.string(value) }
            case .majorVersion?: if majorVersion == nil { majorVersion = xml.string(value) }
            case .minorVersion?: if minorVersion == nil { minorVersion = xml.string(value) }
            case nil: break
            }
        }
        self.init(
            mailboxID: consume mailboxID, majorVersion: consume majorVersion, minorVersion: consume minorVersion,
            workingHoursContent: consume workingHours, freeBusy: consume freeBusy, extensions: consume extensions)
    }

    /// The attributes the decoder reads, named by their raw values.
    private enum Attribute: String, CaseIterable { case mailboxID, majorVersion, minorVersion }
    private static let attributeNames = XMLNameCases<Attribute>()

    /// The children the decoder reads.
    private enum Child: CaseIterable { case workingHours, freeBusy, delimiter, end }
    private static let childNames = XMLNameCases<Child> {
        switch $0 {
        case .workingHours: XMLName(NS.exchangeTypes, "WorkingHours")
        case .freeBusy: XMLName(NS.calendarData, "freeBusy")
        case .delimiter: .ctDelimiter
        case .end: .ctEnd
        }
    }
}
