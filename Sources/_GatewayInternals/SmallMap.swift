/// A map for the few entries one long-lived subscription holds (usually one resource): one entry
/// inline, a few as a short array of pairs searched in order, a dictionary past
/// ``SmallMap/arrayLimit`` entries. A dictionary allocates its hash table even for one entry
/// (about 120 bytes for a `[String: Int]`), and the gateway keeps several such maps per bridged
/// pair for hours.
///
/// Internal to the package: public only because `BatchCategorySubscription.resources` (MS dialect module) is one.
public struct SmallMap<Key: Hashable & Sendable, Value: Sendable>: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public typealias Element = (key: Key, value: Value)

    private enum Storage: Sendable {
        /// The usual case, one resource per leg: inline, no allocation.
        case one(Key, Value)
        case pairs([Element])
        case table([Key: Value])
    }

    /// Entries kept as an array up to this many (linear search is cheaper than hashing here).
    public static var arrayLimit: Int { 8 }

    private var storage: Storage = .pairs([])

    public init() {}

    public init(dictionaryLiteral elements: (Key, Value)...) {
        self.init()
        for (key, value) in elements { self[key] = value }
    }

    public var isEmpty: Bool {
        switch storage {
        case .one: false
        case .pairs(let pairs): pairs.isEmpty
        case .table(let table): table.isEmpty
        }
    }

    public var count: Int {
        switch storage {
        case .one: 1
        case .pairs(let pairs): pairs.count
        case .table(let table): table.count
        }
    }

    public subscript(key: Key) -> Value? {
        get {
            switch storage {
            case .one(let k, let v): k == key ? v : nil
            case .pairs(let pairs): pairs.first { $0.key == key }?.value
            case .table(let table): table[key]
            }
        }
        set {
            switch storage {
            case .one(let k, let v):
                if k == key {
                    storage = newValue.map { .one(key, $0) } ?? .pairs([])
                } else if let newValue {
                    storage = .pairs([(k, v), (key, newValue)])
                }
            case .pairs(var pairs):
                storage = .pairs([])  // `pairs` is then the only reference: changed in place
                if let index = pairs.firstIndex(where: { $0.key == key }) {
                    if let newValue { pairs[index].value = newValue } else { pairs.remove(at: index) }
                } else if let newValue {
                    pairs.append((key, newValue))
                }
                if pairs.count == 1, let only = pairs.first {
                    storage = .one(only.key, only.value)
                } else if pairs.count > Self.arrayLimit {
                    storage = .table(
                        Dictionary(pairs.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last }))
                } else {
                    storage = .pairs(pairs)
                }
            case .table(var table):
                storage = .pairs([])
                table[key] = newValue
                storage = .table(table)
            }
        }
    }

    @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        let old = self[key]
        if old != nil { self[key] = nil }
        return old
    }

    public var keys: [Key] { map(\.key) }
    public var values: [Value] { map(\.value) }

    /// The first key, in the map's order, that satisfies `predicate`: the map's own copy (a string
    /// key then shares its storage), found without building the array of keys.
    public func firstKey(where predicate: (Key) throws -> Bool) rethrows -> Key? {
        switch storage {
        case .one(let key, _): try predicate(key) ? key : nil
        case .pairs(let pairs): try pairs.first { try predicate($0.key) }?.key
        case .table(let table): try table.keys.first(where: predicate)
        }
    }

    public func makeIterator() -> IndexingIterator<[Element]> {
        switch storage {
        case .one(let key, let value): [(key: key, value: value)].makeIterator()
        case .pairs(let pairs): pairs.makeIterator()
        case .table(let table): table.map { (key: $0.key, value: $0.value) }.makeIterator()
        }
    }
}

extension SmallMap: Equatable where Value: Equatable {
    /// The same entries, in any order; compared in place, without the array of entries an
    /// iterator builds (the durable store compares a watch's maps on every relayed NOTIFY).
    public static func == (a: SmallMap, b: SmallMap) -> Bool {
        guard a.count == b.count else { return false }
        switch a.storage {
        case .one(let key, let value): return b[key] == value
        case .pairs(let pairs): return pairs.allSatisfy { b[$0.key] == $0.value }
        case .table(let table): return table.allSatisfy { b[$0.key] == $0.value }
        }
    }
}

/// Written as a dictionary; read back in the order of its keys.
extension SmallMap: Codable where Key: Codable & Comparable, Value: Codable {
    public init(from decoder: any Decoder) throws {
        self.init()
        for (key, value) in try [Key: Value](from: decoder).sorted(by: { $0.key < $1.key }) { self[key] = value }
    }

    public func encode(to encoder: any Encoder) throws {
        try Dictionary(map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last }).encode(to: encoder)
    }
}
