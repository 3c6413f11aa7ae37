@testable import PresenceDocuments
import Testing

/// The pointer helpers the PIDF writer reads values through give the values themselves.
@Suite struct WriterPointerTests {
    /// Random optionals of payloads with spare bits (String, arrays, structs with optionals)
    /// and without (Int, UInt8): `unwrapped()` is nil exactly for nil, else points at the value.
    @Test func unwrappedPointsAtTheOptionalsValue() {
        var generator = SystemRandomNumberGenerator()
        func check<T: Equatable>(_ value: T?) {
            withUnsafePointer(to: value) { p in
                let unwrapped = p.unwrapped()
                #expect((unwrapped == nil) == (value == nil))
                if let unwrapped { #expect(unwrapped.pointee == value) }
            }
        }
        for _ in 0..<200 {
            let some = Bool.random(using: &generator)
            let text = String(repeating: "x", count: Int.random(in: 0...40, using: &generator))
            check(some ? text : nil)
            check(some ? Int.random(in: .min ... .max, using: &generator) : nil)
            check(some ? UInt8.random(in: 0...255, using: &generator) : nil)
            check(some ? [text, text] : nil)
            check(some ? RPIDTokens(id: Bool.random(using: &generator) ? text : nil, values: [.other(text)]) : nil)
            check(some ? RPIDPlaceIs(notes: [PIDFNote(text)], audio: Bool.random(using: &generator) ? "ok" : nil) : nil)
        }
    }

    @Test func forEachPointerVisitsEachElementInOrder() {
        for count in 0..<20 {
            let values = (0..<count).map { "value \($0) " + String(repeating: "y", count: $0) }
            var seen: [String] = []
            values.forEachPointer { seen.append($0.pointee) }
            #expect(seen == values)
        }
    }

    @Test func forEachFieldVisitsTheArraysElementsInOrder() {
        for count in 0..<12 {
            let notes = (0..<count).map { PIDFNote("note \($0)", lang: $0 % 2 == 0 ? nil : "en") }
            let tuple = PIDFTuple(id: "t", deviceIDs: notes.map(\.text), notes: notes)
            var seenNotes: [PIDFNote] = [], seenIDs: [String] = []
            withUnsafePointer(to: tuple) { p in
                p.forEach(\.notes) { seenNotes.append($0.pointee) }
                p.forEach(\.deviceIDs) { seenIDs.append($0.pointee) }
            }
            #expect(seenNotes == notes)
            #expect(seenIDs == notes.map(\.text))
        }
    }

    @Test func boxPointerReadsTheBoxedFields() {
        var rpid = RPID()
        #expect(rpid.box == nil)
        rpid.activities = [RPIDTokens(values: [.token("away")])]
        rpid.placeIs = RPIDPlaceIs(notes: [PIDFNote("lobby")])
        rpid.box?.withValuePointer { p in
            #expect(p.pointee.activities == rpid.activities)
            #expect(p.pointer(to: \.placeIs)!.unwrapped()?.pointee == rpid.placeIs)
            #expect(p.pointer(to: \.mood)!.unwrapped() == nil)
        }
    }
}
