// Optional stored properties are declared `Optional<T>`, not `T?`: a `var x: T?`
// starts out nil, so the initializer's `self.x = x` assigns it a second time,
// and the optimizer then builds the whole value aside and copies it into place
// (a retain and a release per field on every value made). `Optional<T>` has no
// implicit initial value: the initializer's assignment is the only one.

/// Contact information (RFC 4482 §3): each element may appear in a person,
/// a tuple or (Microsoft) directly under `presence`.
public struct CIPID: Hashable, Sendable {
    /// `<display-name>` elements, one per language.
    public var displayNames: [PIDFNote]
    public var card: Optional<String>
    public var homepage: Optional<String>
    public var icon: Optional<String>
    public var map: Optional<String>
    public var sound: Optional<String>

    public init(
        displayNames: [PIDFNote] = [], card: String? = nil, homepage: String? = nil, icon: String? = nil,
        map: String? = nil, sound: String? = nil
    ) {
        self.displayNames = displayNames
        self.card = card
        self.homepage = homepage
        self.icon = icon
        self.map = map
        self.sound = sound
    }

    /// True when no element is present (tested one by one: comparing with an empty value
    /// made one and compared every field).
    public var isEmpty: Bool {
        displayNames.isEmpty && card == nil && homepage == nil && icon == nil && map == nil && sound == nil
    }
}
