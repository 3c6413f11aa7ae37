import PresenceDocuments
import Testing
import XMLBridge

/// `RPIDValue.isToken(_:)` and `isOther(_:)` against the values they stand for.
@Suite struct RPIDValueTests {
    @Test func isTokenAndIsOtherAreComparisonsWithTheValuesTheyName() {
        var generator = SystemRandomNumberGenerator()
        let words = ["", "busy", "meeting", "unknown", "on-the-phone", "appointment", "a long text of no token's"]
        func word() -> String { words.randomElement(using: &generator)! }
        for _ in 0..<500 {
            let text = word()
            let lang: String? = Bool.random(using: &generator) ? "en" : nil
            let namespace: String? = Bool.random(using: &generator) ? "urn:example" : nil
            let values: [RPIDValue] = [
                .token(text, namespace: namespace), .other(text, lang: lang), .text(text),
                .extensionElement(XMLElement(XMLName("urn:example", text.isEmpty ? "x" : "y"))),
            ]
            for value in values {
                let probe = word()
                #expect(value.isToken(probe) == (value == .token(probe)))
                #expect(value.isOther(probe) == (value == .other(probe)))
            }
        }
    }
}
