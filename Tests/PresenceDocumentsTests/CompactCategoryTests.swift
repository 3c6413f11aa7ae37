@testable import PresenceDocuments
import Testing
import XMLBridge

/// The compact storage of a category (docs/performance.md, "Memory"): packed publish times, out-of-line rare
/// attributes; neither may change a value.
@Suite struct CompactCategoryTests {
    @Test(arguments: [
        "2008-01-11T18:11:33.577",  // [MS-PRES] §2.2.2.4.3 (no zone: docs/flows.md)
        "2008-01-23T07:53:41.67",
        "2026-11-22T10:00:00Z",
        "2026-11-22T10:00:00.000Z",  // 24 characters: every field used
        "2026-11-22T10:00:00.0000Z",  // 25: too long to pack
        "2026-11-22T10:00:00+01:00",  // '+' is not a packed symbol
        "2026-11-22T10:0",
        "2026-11-22",
        "0",
        "not a time at all!",
        "",
    ])
    func packedTextReadsBackAsWritten(_ text: String) {
        let packed = PackedText(text)
        #expect(packed.string == text)
        #expect(packed == PackedText(String(text)))
        #expect(packed.hashValue == PackedText(text).hashValue)
    }

    @Test func randomTextsReadBackAndCompareAsTheirText() {
        // Symbols that pack, a few that do not (ASCII and multi-byte), lengths around the
        // 24-character limit and across the 16-character field boundary.
        let alphabet = Array("0123456789-:T.Z") + ["+", "a", " ", "é", "€"]
        var generator = SystemRandomNumberGenerator()
        var previous: (String, PackedText)?
        for _ in 0..<2_000 {
            let count = Int.random(in: 0...28, using: &generator)
            let onlySymbols = Bool.random(using: &generator)
            let text = String((0..<count).map { _ in
                onlySymbols ? alphabet[Int.random(in: 0..<15, using: &generator)] : alphabet.randomElement(using: &generator)!
            })
            let packed = PackedText(text)
            #expect(packed.string == text)
            #expect(packed == PackedText(text) && packed.hashValue == PackedText(text).hashValue)
            // Packed from the bytes (as the category decoder does): the same value.
            let bytes = Array(text.utf8)
            let fromBytes = PackedText(utf8: bytes.span)
            #expect(fromBytes == packed && fromBytes.string == text && fromBytes.hashValue == packed.hashValue)
            if let (other, otherPacked) = previous {
                #expect((packed == otherPacked) == (text == other))
            }
            previous = (text, packed)
        }
    }

    /// The local part of a QName value: found by byte in ASCII text, by character otherwise,
    /// always what the search by character gives.
    @Test func qnameLocalPartIsThatOfTheSearchByCharacter() throws {
        func reference(_ text: String) -> String {
            let trimmed = text.trimmingXMLWhitespace()
            guard let colon = trimmed.lastIndex(of: ":") else { return trimmed }
            return String(trimmed[trimmed.index(after: colon)...])
        }
        let pieces = ["a", "State", ":", ":", " ", "\r\n", "\t", "é", "\u{301}", "\u{600}", "€", "ns", "x"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 0...8, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            #expect(text.qnameLocalPart == reference(text), "\(Array(text.unicodeScalars))")
        }
        #expect("ns:aggregateState".qnameLocalPart == "aggregateState" && " userState ".qnameLocalPart == "userState")
        // Read from an attribute value's bytes: the local part of the value's text.
        for _ in 0..<2_000 {
            let text = (0..<Int.random(in: 0...8, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            let escaped = text.unicodeScalars.map { $0.value < 0x20 ? "&#\($0.value);" : String($0) }.joined()
            let element = try #require(try? XMLParser.events(Array("<s t=\"\(escaped)\"/>".utf8)).root)
            element.forEachAttributeValue { _, value in
                #expect(element.qnameLocalPart(value) == element.string(value).qnameLocalPart, "\(Array(text.unicodeScalars))")
            }
        }
        #expect("p:\u{301}x".qnameLocalPart == reference("p:\u{301}x") && "\u{600}:x".qnameLocalPart == reference("\u{600}:x"))
    }

    /// A contact card's fields held out of line read back as set, set one by one or all at
    /// once, copies stay independent, and clearing every one equals never having set it
    /// (equal and hashed alike), over random cards.
    @Test func contactCardFieldsOutOfLineReadBackAsSet() {
        typealias Text = ContactCard.LocalizedText
        var generator = SystemRandomNumberGenerator()
        func some<T>(_ value: T) -> T? { Bool.random(using: &generator) ? value : nil }
        func list<T>(_ value: T) -> [T] { Bool.random(using: &generator) ? [value] : [] }
        for _ in 0..<300 {
            let addresses = list(ContactCard.Address(type: "work", city: [Text("Paris")]))
            let company = list(Text("Contoso")), department = list(Text("R&D")), title = list(Text("Dev", lcid: "1033"))
            let office = list(Text("7/1")), phones = list(ContactCard.Phone(type: "work", uri: "tel:+1"))
            let urls = list(ContactCard.TypedURI(type: "home", uri: "http://x")), photos = list(ContactCard.Photo(hash: "h"))
            let automaton = some(true), type = some("person"), description = some("d"), displayADPhoto = some(false)
            let major = some("1"), minor = some("2"), uc = some(true)
            let extensions = list(XMLElement(XMLName("urn:x", "x")))
            let whole = ContactCard(
                displayNames: [Text("A")], emails: ["a@b"], addresses: addresses, company: company, department: department,
                title: title, office: office, urls: urls, phones: phones, automaton: automaton, type: type,
                descriptionText: description, displayADPhoto: displayADPhoto, photos: photos, majorVersion: major,
                minorVersion: minor, isUCEnabled: uc, extensions: extensions)
            var card = ContactCard(displayNames: [Text("A")], emails: ["a@b"])
            card.addresses = addresses; card.company = company; card.department = department; card.title = title
            card.office = office; card.urls = urls; card.phones = phones; card.automaton = automaton; card.type = type
            card.descriptionText = description; card.displayADPhoto = displayADPhoto; card.photos = photos
            card.majorVersion = major; card.minorVersion = minor; card.isUCEnabled = uc; card.extensions = extensions
            #expect(card == whole && card.hashValue == whole.hashValue)
            #expect(card.addresses == addresses && card.company == company && card.department == department)
            #expect(card.title == title && card.office == office && card.phones == phones && card.automaton == automaton)
            #expect(card.type == type && card.descriptionText == description && card.displayADPhoto == displayADPhoto)
            #expect(card.majorVersion == major && card.minorVersion == minor && card.isUCEnabled == uc)
            #expect(card.extensions == extensions && card.urls == urls && card.photos == photos)
            let copy = card
            card.addresses = []; card.company = []; card.department = []; card.title = []; card.office = []
            card.urls = []; card.phones = []; card.automaton = nil; card.type = nil; card.descriptionText = nil
            card.displayADPhoto = nil; card.photos = []; card.majorVersion = nil; card.minorVersion = nil
            card.isUCEnabled = nil; card.extensions = []
            let bare = ContactCard(displayNames: [Text("A")], emails: ["a@b"])
            #expect(card == bare && card.hashValue == bare.hashValue)
            #expect(copy == whole)
        }
    }

    @Test func differentTimesStayDifferent() {
        #expect(PackedText("2026-11-22T10:00:00.000") != PackedText("2026-11-22T10:00:00.001"))
        #expect(PackedText("2026-11-22T10:00:00.000") != PackedText("2026-11-22T10:00:00.00"))
        #expect(PackedText("2026-11-22T10:00:00.000") != PackedText("2026-11-22T10:00:00.000Z"))
    }

    @Test func categoryIsSmallerThanItsFields() {
        // name, packed time, instance, expire type, one reference, payload: 96 bytes (it was 160
        // with every attribute inline).
        #expect(MemoryLayout<Category>.stride <= 96)
    }

    @Test func rareAttributesReadBackAndCopiesStayIndependent() {
        var a = Category(name: .note, instance: 0, container: 300, version: 4, publishTime: "2008-01-11T18:11:33.577",
                         expireType: .user, expires: 3600, endpointID: "{E1}",
                         otherAttributes: [XMLAttribute(XMLName("", "x"), "1")])
        #expect(a.container == 300 && a.version == 4 && a.expires == 3600 && a.endpointID == "{E1}")
        #expect(a.publishTime == "2008-01-11T18:11:33.577" && a.expireType == .user)
        #expect(a.otherAttributes.map(\.value) == ["1"])
        let b = a
        a.version = 5
        a.otherAttributes = []
        #expect(b.version == 4 && b.otherAttributes.count == 1)
        #expect(a.version == 5 && a.otherAttributes.isEmpty && a.container == 300)
        #expect(a != b)
    }

    @Test func clearingEveryRareAttributeEqualsNeverHavingThem() {
        var a = Category(name: .state, instance: 1, container: 2, version: 3, expires: 4, endpointID: "e")
        a.container = nil
        a.version = nil
        a.expires = nil
        a.endpointID = nil
        #expect(a == Category(name: .state, instance: 1))
        a.publishTime = "2026-11-22T10:00:00.000"
        #expect(a.publishTime == "2026-11-22T10:00:00.000")
        a.publishTime = nil
        #expect(a == Category(name: .state, instance: 1))
    }
}

/// A note body keeps its rare attributes out of line; values must not notice.
@Suite struct CompactNoteBodyTests {
    @Test func rareAttributesReadBackAndCopiesStayIndependent() {
        var a = MSNote.Body(text: "Out until Monday", type: "OOF", startTime: "2008-01-11T18:00:00Z",
                            endTime: "2008-01-14T08:00:00Z", otherAttributes: [XMLAttribute(XMLName("", "x"), "1")])
        #expect(a.startTime == "2008-01-11T18:00:00Z" && a.endTime == "2008-01-14T08:00:00Z")
        let b = a
        a.endTime = nil
        a.otherAttributes = []
        #expect(b.endTime == "2008-01-14T08:00:00Z" && b.otherAttributes.count == 1)
        #expect(a.endTime == nil && a.startTime == "2008-01-11T18:00:00Z" && a != b)
        a.startTime = nil
        #expect(a == MSNote.Body(text: "Out until Monday", type: "OOF"))
    }

    @Test func bodyIsSmall() {
        // type, uri, text and one reference (it was 88 bytes with every attribute inline).
        #expect(MemoryLayout<MSNote.Body>.stride <= 56)
    }
}

/// `ServiceCapabilities.rank(of:)` gives a name's place in the schema order (its count for any other name).
@Suite struct ServiceCapabilitiesRankTests {
    @Test func rankIsThePlaceInTheSchemaOrder() {
        let order = ServiceCapabilities.schemaOrder
        var names = order + ["", "Audio", "audi", "audios", "typ", "types", "vide0", "événement", "e\u{301}"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let base = order.randomElement(using: &generator)!
            var bytes = Array(base.utf8)
            bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0x61...0x7A, using: &generator)
            names.append(String(decoding: bytes, as: UTF8.self))
        }
        for name in names {
            #expect(ServiceCapabilities.rank(of: name) == (order.firstIndex(of: name) ?? order.count), "\(name)")
        }
    }
}

/// The category decoder finds the names with a typed payload from the value bytes.
@Suite struct TypedCategoryNameTests {
    @Test func typedNameIsTheNamesLookup() {
        // The reference: [MS-PRES] §2.2.2.7's payload of each name (dndState a state, workingHours calendar data).
        let payloads: [String: CategoryPayload.Typed] = [
            "state": .state, "dndState": .state, "note": .note, "contactCard": .contactCard, "calendarData": .calendarData,
            "workingHours": .calendarData, "services": .services, "device": .device, "userProperties": .userProperties,
            "legacyInterop": .legacyInterop,
        ]
        let typed = payloads.keys.map(CategoryName.init(rawValue:))
        var names = typed.map(\.rawValue) + ["", "State", "stat", "states", "mwi", "routing", "caléndarData", "note\u{301}"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            var bytes = Array(typed.randomElement(using: &generator)!.rawValue.utf8)
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0x41...0x7A, using: &generator)
            case 1: bytes.removeLast()
            default: bytes.append(UInt8.random(in: 0x41...0x7A, using: &generator))
            }
            names.append(String(decoding: bytes, as: UTF8.self))
        }
        for name in names {
            let bytes = Array(name.utf8)
            let found = CategoryPayload.typedName(utf8: bytes.span)
            #expect(found?.typed == payloads[name], "\(name)")
            if let found { #expect(found.name.rawValue == name) }
        }
    }
}
