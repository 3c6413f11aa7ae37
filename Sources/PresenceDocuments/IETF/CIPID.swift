/// Contact information (RFC 4482 §3): each element may appear in a person,
/// a tuple or (Microsoft) directly under `presence`.
public struct CIPID: Hashable, Sendable {
    /// `<display-name>` elements, one per language.
    public var displayNames: [PIDFNote]
    public var card: String?
    public var homepage: String?
    public var icon: String?
    public var map: String?
    public var sound: String?

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
