import Foundation
import PresenceDocuments
import Testing
import XMLBridge

/// The provisional UPnP Presence:1 payloads (Schemas/upnp/upnp-presence.xsd,
/// docs/upnp-payloads.md): hand-written examples read field by field, written documents read
/// back equal and valid against the schema, bad documents refused with their line and column.
@Suite struct UPnPPayloadTests {
    static let ns = "urn:presencegateway:params:xml:ns:upnp-presence"
    static let examples = "Schemas/upnp/examples/"

    /// The schema set as the programs build it (every file under Schemas/, written to a private
    /// directory), so the schema's relative import of the PIDF bundle is checked as well.
    static let schemas: XMLSchemaSet? = {
        var files: [String: String] = [:]
        let root = PIDFFixture.packageRoot.standardizedFileURL.path + "/"
        let folder = PIDFFixture.packageRoot.appendingPathComponent("Schemas")
        guard let items = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { return nil }
        for case let url as URL in items where ["tsv", "xsd", "md"].contains(url.pathExtension) {
            let path = url.standardizedFileURL.path
            guard path.hasPrefix(root), let text = try? String(contentsOf: url, encoding: .utf8) else { continue }
            files[String(path.dropFirst(root.count))] = text
        }
        return try? XMLSchemaSet(files: files)
    }()

    /// The schema errors of `bytes`, by the roots.tsv row of its root.
    static func schemaErrors(_ bytes: [UInt8]) throws -> [XMLError] {
        let set = try #require(schemas)
        let root = try XMLParser.parse(bytes)
        let schema = try #require(try set.schema(forNamespace: root.name.namespace, root: root.name.local))
        return try schema.validate(bytes)
    }

    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    // MARK: Examples

    @Test func contactIDExampleReadsAsWritten() throws {
        let id = try UPnPContactID(bytes: PIDFFixture.bytes(Self.examples + "contact-id.xml"))
        #expect(id.uri == "sip:alice@oma.example")
        #expect(try UPnPContactID(uri: "sip:alice@oma.example") == id)
    }

    @Test func contactsExampleReadsAsWritten() throws {
        let list = try UPnPContactPresenceList(bytes: PIDFFixture.bytes(Self.examples + "contacts.xml"))
        #expect(list.contacts.count == 3)
        let alice = try #require(list.contacts.first)
        #expect(alice.uri == "sip:alice@oma.example")
        #expect(alice.state == .active)
        #expect(alice.band == "busy")
        let presence = try #require(alice.presence)
        #expect(presence.entity == "sip:alice@oma.example")
        #expect(presence.tuples.map(\.id) == ["t1"])
        #expect(presence.tuples.first?.status.basic == .open)
        #expect(presence.persons.first?.rpid.activities.first?.tokens == ["busy"])
        #expect(
            Array(list.contacts.dropFirst())
                == [
                    UPnPContactPresence(uri: "sip:bob@contoso.com", state: .pending),
                    UPnPContactPresence(uri: "pres:carol@oma.example", state: .terminated),
                ])
    }

    @Test func registrationExampleReadsAsWritten() throws {
        let result = try UPnPRegistrationResult(bytes: PIDFFixture.bytes(Self.examples + "registration.xml"))
        #expect(result == UPnPRegistrationResult(uri: "sip:dave@oma.example", result: .refused, status: 403))
        #expect(result.expires == nil)
    }

    @Test func watchersExampleReadsAsWritten() throws {
        let list = try UPnPWatcherList(bytes: PIDFFixture.bytes(Self.examples + "watchers.xml"))
        #expect(
            list.watchers == [
                UPnPWatcher(uri: "sip:dave@oma.example", status: .pending, decision: .allow),
                UPnPWatcher(uri: "sips:erin@contoso.com", status: .active),
                UPnPWatcher(uri: "sip:frank@oma.example", decision: .politeBlock),
            ])
    }

    /// Any prefix, extension elements and attributes of other namespaces, white space around
    /// tokens: read as the default-namespace form.
    @Test func prefixesAndExtensionsAreRead() throws {
        let xml = """
            <u:watchers xmlns:u="\(Self.ns)" xmlns:x="urn:example:ext" version=" 0.1 " x:note="n">
              <x:hint>skipped</x:hint>
              <u:watcher uri="sip:a@b.example" status=" active " x:flag="1"><x:more/></u:watcher>
            </u:watchers>
            """
        let list = try UPnPWatcherList(bytes: Array(xml.utf8))
        #expect(list.watchers == [UPnPWatcher(uri: "sip:a@b.example", status: .active)])
        #expect(try Self.schemaErrors(Array(xml.utf8)) == [])
    }

    // MARK: Written documents

    static let presence: PIDFDocument? = try? PIDFDocument(
        bytes: Array(
            """
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model"
                xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="sip:alice@oma.example">
              <tuple id="t1"><status><basic>open</basic></status><contact>sip:alice@192.0.2.10</contact>
                <note xml:lang="en">A &amp; B</note></tuple>
              <dm:person id="p1"><rpid:activities><rpid:on-the-phone/></rpid:activities>
                <rpid:user-input>active</rpid:user-input></dm:person>
            </presence>
            """.utf8))

    @Test func writtenContactIDsAreValidAndReadBack() throws {
        for uri in ["sip:alice@oma.example", "SIPS:bob@contoso.com;transport=tls", "pres:c%40d@example.com"] {
            let id = try UPnPContactID(uri: uri)
            let bytes = id.serialized()
            #expect(try Self.schemaErrors(bytes) == [], "\(Self.text(bytes))")
            #expect(try UPnPContactID(bytes: bytes) == id)
        }
        // Escaped where XML needs it.
        let ampersand = try UPnPContactID(uri: "sip:a&b@c.example")
        #expect(Self.text(ampersand.serialized()).contains(#"uri="sip:a&amp;b@c.example""#))
        #expect(try UPnPContactID(bytes: ampersand.serialized()) == ampersand)
    }

    @Test func writtenContactListsAreValidAndReadBack() throws {
        let presence = try #require(Self.presence)
        let lists = [
            UPnPContactPresenceList(contacts: []),
            UPnPContactPresenceList(contacts: [
                UPnPContactPresence(uri: "sip:alice@oma.example", state: .active, band: "busy", presence: presence),
                UPnPContactPresence(uri: "sip:bob@contoso.com", state: .pending),
                UPnPContactPresence(uri: "pres:carol@oma.example", state: .terminated, band: "do-not-disturb"),
                UPnPContactPresence(
                    uri: "sip:dan@oma.example", state: .active, presence: PIDFDocument(entity: "pres:dan@oma.example")),
            ]),
        ]
        for list in lists {
            let bytes = list.serialized()
            #expect(try Self.schemaErrors(bytes) == [], "\(Self.text(bytes))")
            #expect(try UPnPContactPresenceList(bytes: bytes) == list, "\(Self.text(bytes))")
        }
        // The root in the default namespace, the presence in PIDF's.
        let written = Self.text(lists[1].serialized())
        #expect(written.contains(#"<contacts xmlns="\#(Self.ns)" version="0.1">"#))
        #expect(written.contains(#"<presence xmlns="urn:ietf:params:xml:ns:pidf""#))
    }

    @Test func writtenRegistrationResultsAreValidAndReadBack() throws {
        let results = [
            UPnPRegistrationResult(uri: "sip:alice@oma.example", result: .subscribed, expires: 3600),
            UPnPRegistrationResult(uri: "sip:alice@oma.example", result: .ended, expires: 0),
            UPnPRegistrationResult(uri: "sip:bob@oma.example", result: .refused, status: 489),
            UPnPRegistrationResult(uri: "sip:bob@oma.example", result: .refused, status: 699, expires: 4_294_967_295),
            UPnPRegistrationResult(uri: "sip:carol@oma.example", result: .refused),
        ]
        for result in results {
            let bytes = result.serialized()
            #expect(try Self.schemaErrors(bytes) == [], "\(Self.text(bytes))")
            #expect(try UPnPRegistrationResult(bytes: bytes) == result)
        }
    }

    @Test func writtenWatcherListsAreValidAndReadBack() throws {
        var watchers: [UPnPWatcher] = [UPnPWatcher(uri: "sip:plain@oma.example")]
        for status in UPnPWatcher.Status.allCases {
            for decision in UPnPWatcher.Decision.allCases {
                watchers.append(
                    UPnPWatcher(uri: "sip:\(status.rawValue)-\(decision.rawValue)@oma.example", status: status, decision: decision))
            }
        }
        for list in [UPnPWatcherList(watchers: []), UPnPWatcherList(watchers: watchers)] {
            let bytes = list.serialized()
            #expect(try Self.schemaErrors(bytes) == [], "\(Self.text(bytes))")
            #expect(try UPnPWatcherList(bytes: bytes) == list)
        }
    }

    // MARK: Bad input

    /// A bad document, the start tag its error must be located at (its first characters, `at`),
    /// and a word the message must hold. The parser places an element at the end of its start
    /// tag: the `>`, or the `/` of `/>` (libxml2's position when it reports the element).
    struct Bad: Sendable, CustomTestStringConvertible {
        let xml: String
        let at: String
        let mentions: String
        var testDescription: String { mentions + ": " + xml.prefix(60) }

        init(_ xml: String, at: String, _ mentions: String) {
            self.xml = xml
            self.at = at
            self.mentions = mentions
        }

        /// Line and column of the end of the start tag that begins with `at`.
        var position: (line: Int, column: Int)? {
            guard let start = xml.range(of: at)?.lowerBound,
                var end = xml[start...].firstIndex(of: ">")
            else { return nil }
            if end > start, xml[xml.index(before: end)] == "/" { end = xml.index(before: end) }
            let before = xml[..<end]
            let line = before.count(where: { $0 == "\n" }) + 1
            let lineStart = before.lastIndex(of: "\n").map { xml.index(after: $0) } ?? xml.startIndex
            return (line, xml[lineStart..<end].unicodeScalars.count + 1)
        }
    }

    static let n = #"xmlns="urn:presencegateway:params:xml:ns:upnp-presence""#

    static let badContacts: [Bad] = [
        Bad(#"<contact \#(n) uri="sip:a@b"/>"#, at: "<contact", "contacts"),
        Bad(#"<contacts xmlns="urn:example:other" version="0.1"/>"#, at: "<contacts", "urn:example:other"),
        Bad(#"<contacts \#(n)/>"#, at: "<contacts", "version"),
        Bad(#"<contacts \#(n) version="1.0"/>"#, at: "<contacts", "version"),
        Bad("<contacts \(n) version=\"0.1\">\n  <contact state=\"active\"/></contacts>", at: "<contact ", "uri"),
        Bad("<contacts \(n) version=\"0.1\">\n  <contact uri=\"sip:a@b\"/></contacts>", at: "<contact ", "state"),
        Bad("<contacts \(n) version=\"0.1\">\n\n <contact uri=\"sip:a@b\" state=\"gone\"/></contacts>", at: "<contact ", "state"),
        Bad(
            "<contacts \(n) version=\"0.1\">\n<contact uri=\"sip:a@b\" state=\"active\" band=\"Busy\"/></contacts>",
            at: "<contact ", "band"),
        Bad("<contacts \(n) version=\"0.1\">\n<contact uri=\"http://a@b\" state=\"active\"/></contacts>", at: "<contact ", "sip:"),
        Bad(
            "<contacts \(n) version=\"0.1\">\n<contact uri=\"sip:a@b\" state=\"active\" stat=\"x\"/></contacts>",
            at: "<contact ", "stat"),
        Bad(
            "<contacts \(n) version=\"0.1\"><contact uri=\"sip:a@b\" state=\"active\">\n"
                + "<presence xmlns=\"urn:ietf:params:xml:ns:pidf\" entity=\"sip:a@b\"/>\n"
                + "   <presence xmlns=\"urn:ietf:params:xml:ns:pidf\" entity=\"sip:b@c\"/></contact></contacts>",
            at: "<presence xmlns=\"urn:ietf:params:xml:ns:pidf\" entity=\"sip:b@c\"", "at most one presence"),
        Bad(
            "<contacts \(n) version=\"0.1\"><contact uri=\"sip:a@b\" state=\"active\">\n"
                + "  <presence xmlns=\"urn:ietf:params:xml:ns:pidf\"/></contact></contacts>", at: "<presence", "entity"),
        Bad("<contacts \(n) version=\"0.1\">\n <watcher uri=\"sip:a@b\"/></contacts>", at: "<watcher", "watcher"),
        Bad(
            "<contacts \(n) version=\"0.1\">\n <contact uri=\"sip:a@b\" state=\"active\"><band/></contact></contacts>",
            at: "<band", "band"),
        Bad("<contacts \(n) version=\"0.1\">\n <unknown/></contacts>", at: "<unknown", "unknown"),
        Bad("<contacts \(n) version=\"0.1\">text</contacts>", at: "<contacts", "text"),
    ]

    @Test(arguments: badContacts)
    func badContactListsAreLocatedErrors(_ bad: Bad) throws {
        try Self.expectError(bad) { _ = try UPnPContactPresenceList(bytes: $0) }
    }

    static let badURIs = [
        "http://alice@oma.example", "sip:alice.oma.example", "sip:alice@", "sip:@oma.example", "sip:a@b@c",
        "sip:alice @oma.example", "sip:alice@oma.example ", "sip:al\tice@oma.example", "", "sip:", "alice@oma.example",
        "tel:+1555@x", "sip:a<b@c", "sip:a\"b@c", "sip:a\u{85}b@c", "sip:a\u{2003}b@c", "sıp:a@b",
    ]

    @Test(arguments: badURIs)
    func badURIsAreRefusedEverywhere(_ uri: String) throws {
        #expect(throws: XMLError.self) { try UPnPContactID(uri: uri) }
        // In a document: at the element, whichever document it is in.
        let escaped = uri.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "\t", with: "&#9;")
        let documents: [(String, ([UInt8]) throws -> Void)] = [
            ("<contact \(Self.n)\n uri=\"\(escaped)\"/>", { _ = try UPnPContactID(bytes: $0) }),
            ("<registration \(Self.n)\n uri=\"\(escaped)\" result=\"ended\"/>", { _ = try UPnPRegistrationResult(bytes: $0) }),
            (
                "<contacts \(Self.n) version=\"0.1\">\n<contact uri=\"\(escaped)\" state=\"active\"/></contacts>",
                { _ = try UPnPContactPresenceList(bytes: $0) }
            ),
            (
                "<watchers \(Self.n) version=\"0.1\">\n<watcher uri=\"\(escaped)\"/></watchers>",
                { _ = try UPnPWatcherList(bytes: $0) }
            ),
        ]
        for (xml, read) in documents {
            let bytes = Array(xml.utf8)
            let error = try #require(throws: XMLError.self, "\(xml)") { try read(bytes) }
            #expect(error.code == .unexpectedContent)
            let expected = try #require(Bad(xml, at: "uri=", "").position)
            #expect(error.line == expected.line && error.column == expected.column, "\(error)")
            #expect(error.message.contains("uri"))
            // The schema refuses it as well.
            #expect(try !Self.schemaErrors(bytes).isEmpty, "\(xml)")
        }
    }

    static let badRegistrations: [Bad] = [
        Bad(#"<registration xmlns="urn:example:other" uri="sip:a@b" result="ended"/>"#, at: "<registration", "registration"),
        Bad("\n  <registration \(n) result=\"ended\"/>", at: "<registration", "uri"),
        Bad("<registration \(n) uri=\"sip:a@b\"/>", at: "<registration", "result"),
        Bad("<registration \(n) uri=\"sip:a@b\" result=\"accepted\"/>", at: "<registration", "result"),
        Bad("<registration \(n) uri=\"sip:a@b\" result=\"refused\" status=\"99\"/>", at: "<registration", "status"),
        Bad("<registration \(n) uri=\"sip:a@b\" result=\"refused\" status=\"700\"/>", at: "<registration", "status"),
        Bad("<registration \(n) uri=\"sip:a@b\" result=\"refused\" status=\"forbidden\"/>", at: "<registration", "status"),
        Bad("<registration \(n) uri=\"sip:a@b\" result=\"subscribed\" expires=\"-1\"/>", at: "<registration", "expires"),
        Bad(
            "<registration \(n) uri=\"sip:a@b\" result=\"subscribed\" expires=\"4294967296\"/>", at: "<registration",
            "expires"),
        Bad("<registration \(n) uri=\"sip:a@b\" result=\"ended\">\n <result/></registration>", at: "<result", "result"),
    ]

    @Test(arguments: badRegistrations)
    func badRegistrationResultsAreLocatedErrors(_ bad: Bad) throws {
        try Self.expectError(bad) { _ = try UPnPRegistrationResult(bytes: $0) }
    }

    static let badWatchers: [Bad] = [
        Bad(#"<watcherinfo xmlns="urn:ietf:params:xml:ns:watcherinfo" version="0" state="full"/>"#, at: "<", "watchers"),
        Bad(#"<watchers version="0.1"/>"#, at: "<watchers", "watchers"),
        Bad("<watchers \(n)/>", at: "<watchers", "version"),
        Bad("<watchers \(n) version=\"0.1\">\n  <watcher/></watchers>", at: "<watcher/", "uri"),
        Bad("<watchers \(n) version=\"0.1\">\n  <watcher uri=\"sip:a@b\" status=\"approved\"/></watchers>", at: "<watcher ", "status"),
        Bad("<watchers \(n) version=\"0.1\">\n  <watcher uri=\"sip:a@b\" decision=\"confirm\"/></watchers>", at: "<watcher ", "decision"),
        Bad(
            "<watchers \(n) version=\"0.1\">\n  <watcher uri=\"sip:a@b\" decision=\"politeBlock\"/></watchers>",
            at: "<watcher ", "decision"),
        Bad("<watchers \(n) version=\"0.1\">\n  <contact uri=\"sip:a@b\"/></watchers>", at: "<contact", "contact"),
    ]

    @Test(arguments: badWatchers)
    func badWatcherListsAreLocatedErrors(_ bad: Bad) throws {
        try Self.expectError(bad) { _ = try UPnPWatcherList(bytes: $0) }
    }

    static let badContactIDs: [Bad] = [
        Bad(#"<contact xmlns="urn:ietf:params:xml:ns:pidf" uri="sip:a@b"/>"#, at: "<contact", "contact"),
        Bad("<contacts \(n) version=\"0.1\"/>", at: "<contacts", "contact"),
        Bad("<contact \(n)/>", at: "<contact", "uri"),
        Bad("<contact \(n) uri=\"sip:a@b\" state=\"active\"/>", at: "<contact", "state"),
        Bad(
            "<contact \(n) uri=\"sip:a@b\">\n  <presence xmlns=\"urn:ietf:params:xml:ns:pidf\" entity=\"sip:a@b\"/>hi</contact>",
            at: "<contact", "text"),
    ]

    @Test(arguments: badContactIDs)
    func badContactIDsAreLocatedErrors(_ bad: Bad) throws {
        try Self.expectError(bad) { _ = try UPnPContactID(bytes: $0) }
    }

    /// Not XML, or not well-formed: an error with a position from every reader, never a trap.
    @Test(arguments: ["", "sip:alice@oma.example", "hello", "<contacts", "<a></b>", "\u{0}\u{1}", "<?xml?>"])
    func nonXMLIsAnErrorFromEveryReader(_ text: String) {
        let bytes = Array(text.utf8)
        for read: ([UInt8]) throws -> Void in [
            { _ = try UPnPContactID(bytes: $0) }, { _ = try UPnPContactPresenceList(bytes: $0) },
            { _ = try UPnPRegistrationResult(bytes: $0) }, { _ = try UPnPWatcherList(bytes: $0) },
        ] {
            #expect(throws: XMLError.self) { try read(bytes) }
        }
    }

    /// The readers take the parser's limits: a document over them is refused before it is read.
    @Test func limitsAreTheCallers() throws {
        let bytes = try PIDFFixture.bytes(Self.examples + "contacts.xml")
        let small = XMLLimits(maxBytes: 64)
        #expect(throws: XMLError.self) { _ = try UPnPContactPresenceList(bytes: bytes, limits: small) }
        let shallow = XMLLimits(maxDepth: 2)
        let error = try #require(throws: XMLError.self) {
            _ = try UPnPContactPresenceList(bytes: bytes, limits: shallow)
        }
        #expect(error.code == .tooDeep)
        #expect(try UPnPContactPresenceList(bytes: bytes).contacts.count == 3)
    }

    /// A tag left open: libxml2's error at the end tag that does not match it.
    @Test func malformedXMLIsLocated() throws {
        for (xml, read) in [
            (
                "<watchers \(Self.n) version=\"0.1\">\n  <watcher uri=\"sip:a@b\">\n</watchers>",
                { (bytes: [UInt8]) throws -> Void in _ = try UPnPWatcherList(bytes: bytes) }
            ),
            (
                "<contacts \(Self.n) version=\"0.1\">\n<contact uri=\"sip:a@b\" state=\"active\">\n</contacts>",
                { (bytes: [UInt8]) throws -> Void in _ = try UPnPContactPresenceList(bytes: bytes) }
            ),
        ] {
            let error = try #require(throws: XMLError.self) { try read(Array(xml.utf8)) }
            #expect(error.code == .notWellFormed)
            #expect(error.line == 3 && error.column > 0, "\(error)")
        }
    }

    static func expectError(_ bad: Bad, _ read: ([UInt8]) throws -> Void) throws {
        let bytes = Array(bad.xml.utf8)
        let error = try #require(throws: XMLError.self) { try read(bytes) }
        let expected = try #require(bad.position, "no start tag \(bad.at) in \(bad.xml)")
        #expect(error.line == expected.line, "\(error)")
        #expect(error.column == expected.column, "\(error)")
        #expect(error.message.contains(bad.mentions), "\(error)")
    }
}
