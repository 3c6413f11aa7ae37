@testable import PresenceGateway
import Testing

/// The runtime's Call-IDs: unique, valid, and short enough for a Swift string to hold inline
/// (every dialog keeps its Call-ID for hours).
@Suite struct IdentifierSourceTests {
    @Test func randomCallIDsAreShortWordsAndDistinct() throws {
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let id = IdentifierSource.randomCallID()
            #expect(id.utf8.count == 15)
            // RFC 3261 §25.1: Call-ID = word [ "@" word ]; these characters are all `word`.
            #expect(id.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") })
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
    }
}

private extension UInt8 {
    var isASCIIAlphanumeric: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
    }
}
