public import XMLBridge

/// Rich presence elements (RFC 4480 §3), as found in a person, tuple, device
/// or (pre-RFC, Microsoft) tuple status.
///
/// The elements are held out of line in one copy-on-write box (none when all
/// are absent): most tuples, statuses and devices carry no RPID, and a person
/// carries a few, so a person or tuple stays small and copying one costs a
/// retain instead of copying a dozen optional elements.
public struct RPID: Hashable, Sendable {
    /// The elements; nil when none is present (never an empty box).
    var box: Box?

    struct Fields: RareFields {
        var activities: [RPIDTokens] = []
        var mood: RPIDTokens?
        var placeType: RPIDTokens?
        var placeIs: RPIDPlaceIs?
        var privacy: RPIDTokens?
        var relationship: RPIDTokens?
        var serviceClass: RPIDTokens?
        var sphere: RPIDTokens?
        var statusIcon: RPIDStatusIcon?
        var timeOffsets: [RPIDTimeOffset] = []
        var userInput: RPIDUserInput?
        var `class`: String?
        var legacyActivities: [String] = []

        /// True when no element is present.
        var isEmpty: Bool {
            activities.isEmpty && absent(mood) && absent(placeType) && absent(placeIs) && absent(privacy)
                && absent(relationship) && absent(serviceClass) && absent(sphere) && absent(statusIcon)
                && timeOffsets.isEmpty && absent(userInput) && absent(`class`) && legacyActivities.isEmpty
        }
    }

    /// The elements' storage, never changed: a change makes a new box (`Optional.update`).
    typealias Box = SharedFields<Fields>

    /// `<activities>` (§3.2); RFC 4480 allows several, distinguished by from/until.
    public var activities: [RPIDTokens] {
        get { box?.value.activities ?? [] }
        set { box.update(emptying: newValue.isEmpty) { $0.activities = newValue } }
    }
    /// `<mood>` (§3.5).
    public var mood: RPIDTokens? {
        get { box?.value.mood }
        set { box.update(emptying: absent(newValue)) { $0.mood = newValue } }
    }
    /// `<place-type>` (§3.8); tokens are RFC 4589 location types.
    public var placeType: RPIDTokens? {
        get { box?.value.placeType }
        set { box.update(emptying: absent(newValue)) { $0.placeType = newValue } }
    }
    /// `<place-is>` (§3.7).
    public var placeIs: RPIDPlaceIs? {
        get { box?.value.placeIs }
        set { box.update(emptying: absent(newValue)) { $0.placeIs = newValue } }
    }
    /// `<privacy>` (§3.9).
    public var privacy: RPIDTokens? {
        get { box?.value.privacy }
        set { box.update(emptying: absent(newValue)) { $0.privacy = newValue } }
    }
    /// `<relationship>` (§3.10).
    public var relationship: RPIDTokens? {
        get { box?.value.relationship }
        set { box.update(emptying: absent(newValue)) { $0.relationship = newValue } }
    }
    /// `<service-class>` (§3.11).
    public var serviceClass: RPIDTokens? {
        get { box?.value.serviceClass }
        set { box.update(emptying: absent(newValue)) { $0.serviceClass = newValue } }
    }
    /// `<sphere>` (§3.12): one of work, home, unknown as a token, or free text in `other`.
    public var sphere: RPIDTokens? {
        get { box?.value.sphere }
        set { box.update(emptying: absent(newValue)) { $0.sphere = newValue } }
    }
    /// `<status-icon>` (§3.13).
    public var statusIcon: RPIDStatusIcon? {
        get { box?.value.statusIcon }
        set { box.update(emptying: absent(newValue)) { $0.statusIcon = newValue } }
    }
    /// `<time-offset>` (§3.14); several with different from/until are allowed.
    public var timeOffsets: [RPIDTimeOffset] {
        get { box?.value.timeOffsets ?? [] }
        set { box.update(emptying: newValue.isEmpty) { $0.timeOffsets = newValue } }
    }
    /// `<user-input>` (§3.15).
    public var userInput: RPIDUserInput? {
        get { box?.value.userInput }
        set { box.update(emptying: absent(newValue)) { $0.userInput = newValue } }
    }
    /// `<class>` (§3.3).
    public var `class`: String? {
        get { box?.value.`class` }
        set { box.update(emptying: absent(newValue)) { $0.`class` = newValue } }
    }
    /// Pre-RFC `rpid-status` activity strings (`<ep:activities><ep:activity>away</ep:activity>`),
    /// as Microsoft servers write them ([MS-PRES] §2.2.2.8.1).
    public var legacyActivities: [String] {
        get { box?.value.legacyActivities ?? [] }
        set { box.update(emptying: newValue.isEmpty) { $0.legacyActivities = newValue } }
    }

    /// No RPID element (nothing allocated).
    public init() { box = nil }

    /// The elements a decoder gathered, boxed once (none when there is none).
    init(_ fields: consuming Fields) { box = Optional(keeping: fields) }

    public init(
        activities: [RPIDTokens] = [], mood: RPIDTokens? = nil, placeType: RPIDTokens? = nil,
        placeIs: RPIDPlaceIs? = nil, privacy: RPIDTokens? = nil, relationship: RPIDTokens? = nil,
        serviceClass: RPIDTokens? = nil, sphere: RPIDTokens? = nil, statusIcon: RPIDStatusIcon? = nil,
        timeOffsets: [RPIDTimeOffset] = [], userInput: RPIDUserInput? = nil, class: String? = nil,
        legacyActivities: [String] = []
    ) {
        let fields = Fields(
            activities: activities, mood: mood, placeType: placeType, placeIs: placeIs, privacy: privacy,
            relationship: relationship, serviceClass: serviceClass, sphere: sphere, statusIcon: statusIcon,
            timeOffsets: timeOffsets, userInput: userInput, class: `class`, legacyActivities: legacyActivities)
        box = Optional(keeping: fields)
    }

    /// True when no RPID element is present: there is no box.
    public var isEmpty: Bool { absent(box) }

    // Reads of one part of an element, made in the box: an element's getter
    // above copies the whole element out (a retain and a release for each of
    // its strings and arrays) only for the caller to test it or read one part.

    // The presence tests match the case: `!= nil` took the `Equatable`
    // comparison, which copied the element and destroyed it again.

    /// True when `<mood>` is present.
    public var hasMood: Bool { if case .some = box?.value.mood { true } else { false } }
    /// True when `<sphere>` is present.
    public var hasSphere: Bool { if case .some = box?.value.sphere { true } else { false } }
    /// True when `<privacy>` is present.
    public var hasPrivacy: Bool { if case .some = box?.value.privacy { true } else { false } }
    /// `userInput?.value`.
    public var userInputValue: RPIDUserInput.Value? { box?.value.userInput?.value }
    /// `placeType?.values.first`.
    public var firstPlaceTypeValue: RPIDValue? { box?.value.placeType?.values.first }
    /// `placeIs?.notes.first?.text`.
    public var firstPlaceIsNoteText: String? { box?.value.placeIs?.notes.first?.text }
}

/// An RPID element whose content is a set of empty token elements plus an
/// optional `<other>` text (activities, mood, place-type, privacy,
/// relationship, service-class, sphere), with the common attributes.
///
/// ```
/// <activities id? from? until?> note* ( <unknown/> | (token | <other>text</other>)+ ) </activities>
/// ```
public struct RPIDTokens: Hashable, Sendable {
    public var id: String?
    /// `from` / `until` as written (xs:dateTime, RFC 4480 §3.1).
    public var from: String?
    public var until: String?
    public var notes: [PIDFNote]
    /// Token values in document order: RPID tokens are the element local
    /// names (e.g. "on-the-phone"); place-type tokens carry their namespace.
    public var values: [RPIDValue]

    public init(
        id: String? = nil, from: String? = nil, until: String? = nil, notes: [PIDFNote] = [], values: [RPIDValue] = []
    ) {
        self.id = id
        self.from = from
        self.until = until
        self.notes = notes
        self.values = values
    }

    /// The token names, without `other` texts and foreign elements.
    public var tokens: [String] {
        values.compactMap { if case .token(let t, _) = $0 { t } else { nil } }
    }
}

/// One value inside an ``RPIDTokens`` element.
public enum RPIDValue: Hashable, Sendable {
    /// An empty element: its local name, and its namespace when it is not RPID's.
    case token(String, namespace: String? = nil)
    /// `<other>` free text (with xml:lang when given).
    case other(String, lang: String? = nil)
    /// Sphere's plain-text content (RFC 4480 §3.12 allows text instead of a token).
    case text(String)
    /// An element from another namespace, kept verbatim.
    case extensionElement(XMLElement)

    /// True when this is `.token(name)` in RPID's namespace. Compared in place: matching a
    /// value read out of an array copied its payload first.
    public func isToken(_ name: String) -> Bool {
        if case .token(let token, nil) = self { token == name } else { false }
    }

    /// True when this is `.other(text)` without a language, compared in place as ``isToken(_:)``.
    public func isOther(_ text: String) -> Bool {
        if case .other(let other, nil) = self { other == text } else { false }
    }

    /// The name when this is `.token(name)` in RPID's namespace, read in place: a `switch`
    /// binding it copied the whole value out of its array and destroyed it again.
    public var rpidToken: String? {
        if case .token(let token, nil) = self { token } else { nil }
    }

    /// The text when this is `.other(text)`, in any language, read in place as ``rpidToken``.
    public var otherText: String? {
        if case .other(let text, _) = self { text } else { nil }
    }
}

/// `<place-is>` (RFC 4480 §3.7).
public struct RPIDPlaceIs: Hashable, Sendable {
    public var id: String?
    public var from: String?
    public var until: String?
    public var notes: [PIDFNote]
    /// `<audio>` token: noisy, ok, quiet, unknown.
    public var audio: String?
    /// `<video>` token: toobright, ok, dark, unknown.
    public var video: String?
    /// `<text>` token: uncomfortable, inappropriate, ok, unknown.
    public var text: String?

    public init(
        id: String? = nil, from: String? = nil, until: String? = nil, notes: [PIDFNote] = [],
        audio: String? = nil, video: String? = nil, text: String? = nil
    ) {
        self.id = id
        self.from = from
        self.until = until
        self.notes = notes
        self.audio = audio
        self.video = video
        self.text = text
    }
}

/// `<time-offset>` (RFC 4480 §3.14): minutes from UTC.
public struct RPIDTimeOffset: Hashable, Sendable {
    public var id: String?
    public var from: String?
    public var until: String?
    public var description: String?
    public var minutes: Int

    public init(minutes: Int, description: String? = nil, id: String? = nil, from: String? = nil, until: String? = nil)
    {
        self.minutes = minutes
        self.description = description
        self.id = id
        self.from = from
        self.until = until
    }
}

/// `<user-input>` (RFC 4480 §3.15).
public struct RPIDUserInput: Hashable, Sendable {
    public enum Value: String, Hashable, Sendable { case active, idle }
    public var id: String?
    public var idleThreshold: Int?
    public var lastInput: String?
    public var value: Value

    public init(_ value: Value, idleThreshold: Int? = nil, lastInput: String? = nil, id: String? = nil) {
        self.value = value
        self.idleThreshold = idleThreshold
        self.lastInput = lastInput
        self.id = id
    }
}

/// `<status-icon>` (RFC 4480 §3.13).
public struct RPIDStatusIcon: Hashable, Sendable {
    public var id: String?
    public var from: String?
    public var until: String?
    public var uri: String

    public init(uri: String, id: String? = nil, from: String? = nil, until: String? = nil) {
        self.uri = uri
        self.id = id
        self.from = from
        self.until = until
    }
}
