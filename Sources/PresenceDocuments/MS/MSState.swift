public import XMLBridge

/// The `state` category data ([MS-PRES] §2.2.2.7.1, schema §7.2).
///
/// ```
/// <state xsi:type="aggregateState" manual? startTime? uri? endpointId? lastActive? ...>
///   availability? activity* endpointLocation? extension? meetingSubject? meetingLocation?
///   [ct:delimiter timeZoneBias? timeZoneName? timeZoneAbbreviation? device? treatLocationAsProximate? ct:end?]
/// </state>
/// ```
public struct MSState: Hashable, Sendable {
    /// The mandatory `xsi:type`: an open vocabulary.
    public var type: StateType
    public var manual: Bool?
    /// unsignedInt availability ([MS-PRES] §2.2.2.7.1).
    public var availability: UInt32?
    public var activities: [MSActivity]
    /// The fields most states leave out, held out of line (nil when all are absent): a gateway
    /// keeps one state per watched presentity, and these would otherwise make every state
    /// 264 bytes inline.
    private var details: SharedFields<Details>?

    struct Details: RareFields {
        var startTime: String?
        var uri: String?
        var endpointID: String?
        var lastActive: String?
        var majorVersion: String?
        var minorVersion: String?
        var endpointLocation: String?
        var meetingSubject: String?
        var meetingLocation: String?
        var timeZoneBias: Int?
        var timeZoneName: String?
        var timeZoneAbbreviation: String?
        var device: String?
        var treatLocationAsProximate: Bool?
        var extensions: [XMLElement] = []

        var isEmpty: Bool {
            startTime == nil && uri == nil && endpointID == nil && lastActive == nil && majorVersion == nil
                && minorVersion == nil && endpointLocation == nil && meetingSubject == nil && meetingLocation == nil
                && timeZoneBias == nil && timeZoneName == nil && timeZoneAbbreviation == nil && device == nil
                && treatLocationAsProximate == nil && extensions.isEmpty
        }
    }

    public var startTime: String? {
        get { details?.value.startTime }
        set { details.update(emptying: newValue == nil) { $0.startTime = newValue } }
    }
    public var uri: String? {
        get { details?.value.uri }
        set { details.update(emptying: newValue == nil) { $0.uri = newValue } }
    }
    public var endpointID: String? {
        get { details?.value.endpointID }
        set { details.update(emptying: newValue == nil) { $0.endpointID = newValue } }
    }
    public var lastActive: String? {
        get { details?.value.lastActive }
        set { details.update(emptying: newValue == nil) { $0.lastActive = newValue } }
    }
    public var majorVersion: String? {
        get { details?.value.majorVersion }
        set { details.update(emptying: newValue == nil) { $0.majorVersion = newValue } }
    }
    public var minorVersion: String? {
        get { details?.value.minorVersion }
        set { details.update(emptying: newValue == nil) { $0.minorVersion = newValue } }
    }
    public var endpointLocation: String? {
        get { details?.value.endpointLocation }
        set { details.update(emptying: newValue == nil) { $0.endpointLocation = newValue } }
    }
    public var meetingSubject: String? {
        get { details?.value.meetingSubject }
        set { details.update(emptying: newValue == nil) { $0.meetingSubject = newValue } }
    }
    public var meetingLocation: String? {
        get { details?.value.meetingLocation }
        set { details.update(emptying: newValue == nil) { $0.meetingLocation = newValue } }
    }
    /// Minutes (xs:long) to add to local time to get UTC, as Windows TIME_ZONE_INFORMATION.Bias.
    public var timeZoneBias: Int? {
        get { details?.value.timeZoneBias }
        set { details.update(emptying: newValue == nil) { $0.timeZoneBias = newValue } }
    }
    public var timeZoneName: String? {
        get { details?.value.timeZoneName }
        set { details.update(emptying: newValue == nil) { $0.timeZoneName = newValue } }
    }
    public var timeZoneAbbreviation: String? {
        get { details?.value.timeZoneAbbreviation }
        set { details.update(emptying: newValue == nil) { $0.timeZoneAbbreviation = newValue } }
    }
    /// computer, deskphone, mobile, web (open list).
    public var device: String? {
        get { details?.value.device }
        set { details.update(emptying: newValue == nil) { $0.device = newValue } }
    }
    public var treatLocationAsProximate: Bool? {
        get { details?.value.treatLocationAsProximate }
        set { details.update(emptying: newValue == nil) { $0.treatLocationAsProximate = newValue } }
    }
    /// Elements not modelled above (including `extension`), kept verbatim.
    public var extensions: [XMLElement] {
        get { details?.value.extensions ?? [] }
        set { details.update(emptying: newValue.isEmpty) { $0.extensions = newValue } }
    }

    public init(
        type: StateType, manual: Bool? = nil, startTime: String? = nil, uri: String? = nil,
        endpointID: String? = nil, lastActive: String? = nil, majorVersion: String? = nil,
        minorVersion: String? = nil, availability: UInt32? = nil, activities: [MSActivity] = [],
        endpointLocation: String? = nil, meetingSubject: String? = nil, meetingLocation: String? = nil,
        timeZoneBias: Int? = nil, timeZoneName: String? = nil, timeZoneAbbreviation: String? = nil,
        device: String? = nil, treatLocationAsProximate: Bool? = nil, extensions: [XMLElement] = []
    ) {
        self.type = type
        self.manual = manual
        self.availability = availability
        self.activities = activities
        let details = Details(
            startTime: startTime, uri: uri, endpointID: endpointID, lastActive: lastActive, majorVersion: majorVersion,
            minorVersion: minorVersion, endpointLocation: endpointLocation, meetingSubject: meetingSubject,
            meetingLocation: meetingLocation, timeZoneBias: timeZoneBias, timeZoneName: timeZoneName,
            timeZoneAbbreviation: timeZoneAbbreviation, device: device,
            treatLocationAsProximate: treatLocationAsProximate,
            extensions: extensions)
        self.details = Optional(keeping: details)
    }
}

public struct StateType: Hashable, Sendable, RawRepresentable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    public static let machineState: StateType = "machineState"
    public static let userState: StateType = "userState"
    public static let aggregateState: StateType = "aggregateState"
    public static let aggregateMachineState: StateType = "aggregateMachineState"
    public static let calendarState: StateType = "calendarState"
    public static let phoneState: StateType = "phoneState"
    public static let presentingState: StateType = "presentingState"
}

/// An `activity` of a state ([MS-PRES] §2.2.2.7.1).
public struct MSActivity: Hashable, Sendable {
    public var token: MSActivityToken?
    public var minAvailability: UInt32?
    public var maxAvailability: UInt32?
    /// Free-text activities (`<custom LCID="1033">Interviewing</custom>`).
    public var custom: [CustomActivity]

    public struct CustomActivity: Hashable, Sendable {
        public var text: String
        public var lcid: String?
        public var updated: String?
        public init(_ text: String, lcid: String? = nil, updated: String? = nil) {
            self.text = text
            self.lcid = lcid
            self.updated = updated
        }
    }

    public init(
        token: MSActivityToken? = nil, minAvailability: UInt32? = nil, maxAvailability: UInt32? = nil,
        custom: [CustomActivity] = []
    ) {
        self.token = token
        self.minAvailability = minAvailability
        self.maxAvailability = maxAvailability
        self.custom = custom
    }
}

/// Activity tokens: an open vocabulary (schema §7.2).
public struct MSActivityToken: Hashable, Sendable, RawRepresentable, ExpressibleByStringLiteral, CustomStringConvertible
{
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    public static let onThePhone: MSActivityToken = "on-the-phone"
    public static let inAConference: MSActivityToken = "in-a-conference"
    public static let inAMeeting: MSActivityToken = "in-a-meeting"
    public static let outOfOffice: MSActivityToken = "out-of-office"
    public static let urgentInterruptionsOnly: MSActivityToken = "urgent-interruptions-only"
    public static let offWork: MSActivityToken = "off-work"
    public static let inPresentation: MSActivityToken = "in-presentation"
}

/// `legacyInterop` ([MS-PRES] §2.2.2.7.6, schema §7.7): in the categories namespace.
public struct LegacyInterop: Hashable, Sendable {
    public var availability: UInt32?
    public var token: MSActivityToken?
    public var dndState: Bool?
    public init(availability: UInt32? = nil, token: MSActivityToken? = nil, dndState: Bool? = nil) {
        self.availability = availability
        self.token = token
        self.dndState = dndState
    }
}
