/// A map for the few entries one leg holds (usually one resource): a short array of pairs
/// searched in order, becoming a dictionary past ``SmallMap/arrayLimit`` entries. A dictionary
/// allocates its hash table even for one entry; a pair array is one small allocation.
struct SmallMap<Key: Hashable & Sendable, Value: Sendable>: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    typealias Element = (key: Key, value: Value)

    private enum Storage: Sendable {
        case pairs([Element])
        case table([Key: Value])
    }

    /// Entries kept as an array up to this many (linear search is cheaper than hashing here).
    static var arrayLimit: Int { 8 }

    private var storage: Storage = .pairs([])

    init() {}

    init(dictionaryLiteral elements: (Key, Value)...) {
        self.init()
        for (key, value) in elements { self[key] = value }
    }

    var isEmpty: Bool {
        switch storage {
        case .pairs(let pairs): pairs.isEmpty
        case .table(let table): table.isEmpty
        }
    }

    var count: Int {
        switch storage {
        case .pairs(let pairs): pairs.count
        case .table(let table): table.count
        }
    }

    subscript(key: Key) -> Value? {
        get {
            switch storage {
            case .pairs(let pairs): pairs.first { $0.key == key }?.value
            case .table(let table): table[key]
            }
        }
        set {
            switch storage {
            case .pairs(var pairs):
                storage = .pairs([])  // `pairs` is then the only reference: changed in place
                if let index = pairs.firstIndex(where: { $0.key == key }) {
                    if let newValue { pairs[index].value = newValue } else { pairs.remove(at: index) }
                } else if let newValue {
                    pairs.append((key, newValue))
                }
                if pairs.count > Self.arrayLimit {
                    storage = .table(Dictionary(pairs.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last }))
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
    mutating func removeValue(forKey key: Key) -> Value? {
        let old = self[key]
        if old != nil { self[key] = nil }
        return old
    }

    var keys: [Key] { map(\.key) }

    func makeIterator() -> IndexingIterator<[Element]> {
        switch storage {
        case .pairs(let pairs): pairs.makeIterator()
        case .table(let table): table.map { (key: $0.key, value: $0.value) }.makeIterator()
        }
    }
}
