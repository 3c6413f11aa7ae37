import PresenceDocuments
import PresenceMapping
import Testing
import XMLBridge

/// The availability band of the UPnP Presence:1 payloads (`upnp-bands.tsv`): the [MS-PRES]
/// §2.2.2.7.1 availability classes, Away split at 15000 as §3.7.5.4 splits it. Expectations
/// are the spec's ranges, not the table's rows.
struct UPnPBandTests {
    static let mapper = SpecTableTests.mapper

    static func pidf(_ body: String) throws -> PIDFDocument {
        try PIDFDocument(
            bytes: Array(
                """
                <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model"
                    xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="sip:alice@oma.example">\(body)</presence>
                """.utf8))
    }

    /// [MS-PRES] §2.2.2.7.1: Unknown 0-2999, Online 3000-4499, Idle 4500-5999, Busy 6000-7499,
    /// BusyIdle 7500-8999, DoNotDisturb 9000-11999, Away 12000-17999, Offline 18000 and higher;
    /// §3.7.5.4 and §3.7.5.5 treat 12000-14999 apart (rows 8 and 9).
    static let classes: [(ClosedRange<UInt32>, String?)] = [
        (0...2999, nil), (3000...4499, "online"), (4500...5999, "idle"), (6000...7499, "busy"),
        (7500...8999, "busy-idle"), (9000...11999, "do-not-disturb"), (12000...14999, "be-right-back"),
        (15000...17999, "away"), (18000...UInt32.max, "offline"),
    ]

    @Test func everyClassBoundaryGivesItsBand() {
        for (range, band) in Self.classes {
            for availability in [range.lowerBound, range.lowerBound + (range.upperBound - range.lowerBound) / 2, range.upperBound] {
                #expect(Self.mapper.upnpBand(availability: availability) == band, "availability \(availability)")
            }
        }
    }

    static func band(ofClassHolding availability: UInt32) -> String? {
        Self.classes.first { $0.0.contains(availability) }?.1
    }

    @Test func openPIDFWithNoActivityIsOnline() throws {
        let doc = try Self.pidf(#"<tuple id="t"><status><basic>open</basic></status></tuple>"#)
        let availability = try #require(Self.mapper.state(from: doc).availability)
        #expect((3000...4499).contains(availability))
        #expect(Self.mapper.upnpBand(of: doc) == "online")
    }

    @Test func rpidBusyIsBusy() throws {
        let doc = try Self.pidf(
            #"<tuple id="t"><status><basic>open</basic></status></tuple>"#
                + #"<dm:person id="p"><rpid:activities><rpid:busy/></rpid:activities></dm:person>"#)
        let availability = try #require(Self.mapper.state(from: doc).availability)
        #expect((6000...7499).contains(availability))
        #expect(Self.mapper.upnpBand(of: doc) == "busy")
    }

    @Test func closedPIDFIsOffline() throws {
        let doc = try Self.pidf(#"<tuple id="t"><status><basic>closed</basic></status></tuple>"#)
        let availability = try #require(Self.mapper.state(from: doc).availability)
        #expect(availability >= 18000)
        #expect(Self.mapper.upnpBand(of: doc) == "offline")
    }

    /// Whatever the conversion gives, the band is that of its §2.2.2.7.1 class.
    @Test(arguments: [
        #"<tuple id="t"><status><basic>open</basic></status></tuple><dm:person id="p"><rpid:activities><rpid:away/></rpid:activities></dm:person>"#,
        #"<tuple id="t"><status><basic>open</basic></status></tuple><dm:person id="p"><rpid:activities><rpid:on-the-phone/></rpid:activities></dm:person>"#,
        #"<tuple id="t"><status><basic>open</basic></status></tuple><dm:person id="p"><rpid:activities><rpid:busy/></rpid:activities><rpid:user-input>idle</rpid:user-input></dm:person>"#,
        #"<tuple id="t"><status><basic>open</basic></status></tuple><dm:person id="p"><rpid:activities><rpid:other>do-not-disturb</rpid:other></rpid:activities></dm:person>"#,
        #"<tuple id="t"><status><basic>open</basic></status></tuple><dm:person id="p"><rpid:activities><rpid:other>be-right-back</rpid:other></rpid:activities></dm:person>"#,
    ])
    func aPIDFsBandIsTheClassOfItsAvailability(_ body: String) throws {
        let doc = try Self.pidf(body)
        let availability = try #require(Self.mapper.state(from: doc).availability)
        #expect(Self.mapper.upnpBand(of: doc) == Self.band(ofClassHolding: availability))
    }

    /// A PIDF with no usable `<basic>` has availability 0 (class Unknown): no band.
    @Test func aPIDFWithoutBasicHasNoBand() throws {
        let doc = try Self.pidf(#"<tuple id="t"><status/></tuple>"#)
        #expect(Self.mapper.upnpBand(of: doc) == nil)
        #expect(Self.mapper.upnpBand(of: PIDFDocument(entity: "sip:alice@oma.example")) == nil)
    }

    /// Every band of the table is a token the payload reader and schema take.
    @Test func everyBandIsAValidPayloadBand() throws {
        let set = try XMLSchemaSet(files: BuiltInFiles.files(under: "Schemas/"))
        let schema = try #require(try set.schema(forNamespace: NS.upnpPresence, root: "contacts"))
        let bands = Self.mapper.tables.upnpBands.compactMap(\.band)
        #expect(Set(bands) == Set(Self.classes.compactMap(\.1)))
        let list = UPnPContactPresenceList(
            contacts: bands.map { UPnPContactPresence(uri: "sip:\($0)@oma.example", state: .active, band: $0) })
        #expect(try schema.validate(list.serialized()) == [])
        #expect(try UPnPContactPresenceList(bytes: list.serialized()) == list)
    }

    @Test func aGapInTheBandTableIsRefusedAtItsLine() throws {
        let error = try #require(throws: MappingError.self) {
            _ = try MappingTablesTests.load(replacing: "upnp-bands.tsv") { text in
                text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("7500\t") }
                    .joined(separator: "\n")
            }
        }
        #expect(error.code == .coverage)
        #expect(error.file == "upnp-bands.tsv")
        #expect(error.message.contains("7500-8999"))
        #expect(error.line > 0)
        #expect(error.description.hasPrefix("upnp-bands.tsv:\(error.line):"))
    }

    @Test func anOverlapInTheBandTableIsRefusedAtItsLine() throws {
        let error = try #require(throws: MappingError.self) {
            _ = try MappingTablesTests.load(replacing: "upnp-bands.tsv") {
                $0.replacingOccurrences(of: "15000\t17999", with: "14000\t17999")
            }
        }
        #expect(error.code == .coverage)
        #expect(error.file == "upnp-bands.tsv")
        #expect(error.line > 0)
        #expect(error.message.contains("14000-17999"))
    }

    @Test func aBandThatIsNoTokenIsRefusedAtItsColumn() throws {
        let error = try #require(throws: MappingError.self) {
            _ = try MappingTablesTests.load(replacing: "upnp-bands.tsv") {
                $0.replacingOccurrences(of: "\tbusy-idle\t", with: "\tBusy Idle\t")
            }
        }
        #expect(error.code == .malformedRow)
        #expect(error.file == "upnp-bands.tsv")
        #expect(error.line > 0 && error.column == "7500\t8999\t".count + 1)
        #expect(error.message.contains("Busy Idle"))
    }
}
