@testable import PresenceDocuments
import Testing

/// `LocalNameTable` finds a name's value as a search of its entries in order does.
@Suite struct LocalNameTableTests {
    @Test func lookupsMatchASearchOfTheEntries() {
        var generator = SystemRandomNumberGenerator()
        // Table names are ASCII; names looked up need not be.
        func randomName(_ alphabet: String = "ab-") -> String {
            let scalars = Array(alphabet.unicodeScalars)
            var s = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...6, using: &generator) { s.append(scalars.randomElement(using: &generator)!) }
            return String(s)
        }
        for _ in 0..<200 {
            // Entries may repeat a name: the first one wins.
            let entries = (0..<Int.random(in: 0...8, using: &generator)).map { (name: randomName(), value: $0) }
            let table = LocalNameTable(entries)
            #expect(table.names == entries.map(\.name))
            for name in entries.map(\.name) + (0..<20).map({ _ in randomName("ab-e\u{301}é") }) + ["", "a\u{301}"] {
                #expect(table[name] == entries.first { $0.name == name }?.value, "\(name) in \(entries)")
            }
        }
    }

    @Test func dictionaryLiteral() {
        let table: LocalNameTable<Int> = ["mood": 1, "place-is": 2, "place-type": 3]
        #expect(table["place-is"] == 2)
        #expect(table["place-type"] == 3)
        #expect(table["moo"] == nil)
        #expect(table.names == ["mood", "place-is", "place-type"])
    }
}
