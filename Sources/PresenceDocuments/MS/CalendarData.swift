public import XMLBridge

/// The `calendarData` category data ([MS-PRES] §2.2.2.7.8, schema §7.8).
public struct CalendarData: Hashable, Sendable {
    /// Required by the schema, missing in some spec examples (parsed leniently).
    public var mailboxID: String?
    public var majorVersion: String?
    public var minorVersion: String?
    /// Exchange `WorkingHours`, kept verbatim (Exchange types namespace).
    ///
    /// A decoded document keeps it as the recorded parse events it came from
    /// (the gateway passes it through or drops it, and never looks inside);
    /// reading this property builds the tree.
    public var workingHours: XMLElement? {
        get { workingHoursContent?.tree }
        set { workingHoursContent = newValue.map(VerbatimElement.tree) }
    }
    /// `WorkingHours` as held: a tree, or recorded events.
    var workingHoursContent: VerbatimElement?
    /// True when the data holds a `WorkingHours` element (without building its tree).
    public var hasWorkingHours: Bool { workingHoursContent != nil }
    public var freeBusy: FreeBusy?
    public var extensions: [XMLElement]

    /// `freeBusy` ([MS-PRES] §2.2.2.7.8): base64 slots from `startTime`,
    /// each `granularity` (xs:duration, e.g. PT15M) long.
    public struct FreeBusy: Hashable, Sendable {
        public var startTime: String?
        public var granularity: String?
        public var encodingVersion: String?
        /// The base64 text as written (often empty in the spec's examples).
        public var data: String
        public init(
            startTime: String? = nil, granularity: String? = nil, encodingVersion: String? = nil, data: String = ""
        ) {
            self.startTime = startTime
            self.granularity = granularity
            self.encodingVersion = encodingVersion
            self.data = data
        }
    }

    public init(
        mailboxID: String? = nil, majorVersion: String? = nil, minorVersion: String? = nil,
        workingHours: XMLElement? = nil, freeBusy: FreeBusy? = nil, extensions: [XMLElement] = []
    ) {
        self.mailboxID = mailboxID
        self.majorVersion = majorVersion
        self.minorVersion = minorVersion
        self.workingHoursContent = workingHours.map(VerbatimElement.tree)
        self.freeBusy = freeBusy
        self.extensions = extensions
    }

    /// The same with `WorkingHours` as held (the decoder keeps it as recorded events).
    init(
        mailboxID: String?, majorVersion: String?, minorVersion: String?, workingHoursContent: VerbatimElement?,
        freeBusy: FreeBusy?, extensions: [XMLElement]
    ) {
        self.mailboxID = mailboxID
        self.majorVersion = majorVersion
        self.minorVersion = minorVersion
        self.workingHoursContent = workingHoursContent
        self.freeBusy = freeBusy
        self.extensions = extensions
    }

    /// Equal when every field is, `WorkingHours` compared as an element
    /// (``XMLElement`` equality: names, attributes in any order, content).
    public static func == (a: CalendarData, b: CalendarData) -> Bool {
        a.mailboxID == b.mailboxID && a.majorVersion == b.majorVersion && a.minorVersion == b.minorVersion
            && a.freeBusy == b.freeBusy && a.extensions == b.extensions && a.workingHours == b.workingHours
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(mailboxID)
        hasher.combine(majorVersion)
        hasher.combine(minorVersion)
        hasher.combine(freeBusy)
        hasher.combine(extensions)
        hasher.combine(workingHours)
    }
}
