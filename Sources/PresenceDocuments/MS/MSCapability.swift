/// A capability element of `services` or `device` (`<text render="true" capture="true"/>`).
public struct MSCapability: Hashable, Sendable {
    /// The element's local name: text, voice, video, calendar, gifInk, isfInk, applicationSharing, ...
    public var name: String
    /// The attributes sorted by key, each key once: how they are held and written. A capability
    /// has a few attributes; a dictionary cost a hash per attribute and a table per element.
    public internal(set) var sortedAttributes: [Attribute]

    /// One attribute: keyed by its local name, or `{namespace}local` when it has a namespace.
    public struct Attribute: Hashable, Sendable {
        public var key: String
        public var value: String
        public init(_ key: String, _ value: String) {
            self.key = key
            self.value = value
        }
    }

    public init(name: String, attributes: [String: String] = [:]) {
        self.name = name
        self.sortedAttributes = attributes.map { Attribute($0.key, $0.value) }.sorted { $0.key < $1.key }
    }

    /// A capability with attributes already sorted by key, each key once (checked in debug builds).
    public init(name: String, sortedAttributes: [Attribute]) {
        assert(zip(sortedAttributes, sortedAttributes.dropFirst()).allSatisfy { $0.key < $1.key })
        self.name = name
        self.sortedAttributes = sortedAttributes
    }

    /// The attributes by key.
    public var attributes: [String: String] {
        get { Dictionary(uniqueKeysWithValues: sortedAttributes.lazy.map { ($0.key, $0.value) }) }
        set { sortedAttributes = newValue.map { Attribute($0.key, $0.value) }.sorted { $0.key < $1.key } }
    }

    /// The value of the attribute keyed `key`.
    @inlinable
    public subscript(attribute key: String) -> String? {
        sortedAttributes.first { $0.key == key }?.value
    }

    /// Sets the attribute keyed `key`, in its place in key order (replacing one with that key).
    public mutating func setAttribute(_ key: String, _ value: String) {
        var i = sortedAttributes.endIndex
        while i > 0, key < sortedAttributes[i - 1].key { i -= 1 }
        if i > 0, sortedAttributes[i - 1].key == key {
            sortedAttributes[i - 1].value = value
        } else {
            sortedAttributes.insert(Attribute(key, value), at: i)
        }
    }

    /// Removes the attribute keyed `key`, if present.
    public mutating func removeAttribute(_ key: String) {
        sortedAttributes.removeAll { $0.key == key }
    }

    // Inlinable: called from another module (the mapper) on a capability in its array, a
    // getter took a copy of the whole capability; inlined, it reads the attributes in place.
    @inlinable
    public var render: Bool? { self[attribute: "render"].flatMap(Bool.init(xsd:)) }
    @inlinable
    public var capture: Bool? { self[attribute: "capture"].flatMap(Bool.init(xsd:)) }
}
