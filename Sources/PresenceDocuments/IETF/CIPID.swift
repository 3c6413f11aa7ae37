/// Contact information (RFC 4482 §3): each element may appear in a person,
/// a tuple or (Microsoft) directly under `presence`.
///
/// The elements are held out of line in one copy-on-write box, none when all are absent (as
/// ``RPID``'s): most tuples and persons carry no CIPID, and copying one that does costs a retain.
public struct CIPID: Hashable, Sendable {
    /// The elements; nil when none is present (never an empty box).
    var box: SharedFields<Fields>?

    struct Fields: RareFields {
        var displayNames: [PIDFNote] = []
        var card: String?
        var homepage: String?
        var icon: String?
        var map: String?
        var sound: String?

        var isEmpty: Bool {
            displayNames.isEmpty && absent(card) && absent(homepage) && absent(icon) && absent(map) && absent(sound)
        }
    }

    /// `<display-name>` elements, one per language.
    public var displayNames: [PIDFNote] {
        get { box?.value.displayNames ?? [] }
        set { box.update(emptying: newValue.isEmpty) { $0.displayNames = newValue } }
    }
    public var card: String? {
        get { box?.value.card }
        set { box.update(emptying: absent(newValue)) { $0.card = newValue } }
    }
    public var homepage: String? {
        get { box?.value.homepage }
        set { box.update(emptying: absent(newValue)) { $0.homepage = newValue } }
    }
    public var icon: String? {
        get { box?.value.icon }
        set { box.update(emptying: absent(newValue)) { $0.icon = newValue } }
    }
    public var map: String? {
        get { box?.value.map }
        set { box.update(emptying: absent(newValue)) { $0.map = newValue } }
    }
    public var sound: String? {
        get { box?.value.sound }
        set { box.update(emptying: absent(newValue)) { $0.sound = newValue } }
    }

    public init(
        displayNames: [PIDFNote] = [], card: String? = nil, homepage: String? = nil, icon: String? = nil,
        map: String? = nil, sound: String? = nil
    ) {
        box = Optional(
            keeping: Fields(
                displayNames: displayNames, card: card, homepage: homepage, icon: icon, map: map, sound: sound))
    }

    /// The elements a decoder gathered, boxed once (none when there is none).
    init(_ fields: consuming Fields) { box = Optional(keeping: fields) }

    /// True when no element is present: there is no box.
    public var isEmpty: Bool { absent(box) }
}
