import BenchSupport
import Foundation
import PresenceDocuments
import PresenceMapping
import XMLBridge

/// Conversion throughput against raw libxml2 parsing of the same bytes, on
/// one core (issue: conversion ≥ 0.5× the parse-only rate, ≥ 50,000/s).
/// Build and run in release: `swift run -c release presence-bench`.
@main
enum Bench {
    static func main() throws {
        // `presence-bench profile PHASE N`: run one phase N times (for valgrind --tool=callgrind).
        if CommandLine.arguments.count == 4, CommandLine.arguments[1] == "profile",
            let n = Int(CommandLine.arguments[3])
        {
            try profile(CommandLine.arguments[2], n)
            return
        }
        let seconds = CommandLine.arguments.dropFirst().first.flatMap(Double.init) ?? 2.0
        let mapper = PresenceMapper(tables: try MappingTables.builtIn())
        let categories = Array(categoriesNotify.utf8)
        let pidf = Array(typicalPIDF.utf8)
        print(
            "presence-bench: \(seconds) s per measurement (in 5 rounds), one core, libxml2 \(LibXMLBaseline.versionString), \(ProcessMemory.allocator)"
        )
        print("inputs: categories NOTIFY body \(categories.count) bytes (MS-PRES 4.5), PIDF \(pidf.count) bytes")

        // libxml2's SAX2 parse alone, with callbacks that do nothing: no
        // converter on libxml2 can run faster than this.
        guard let floor = LibXMLSAXFloor() else { fatalError("libxml2 could not create a parser context") }
        // The six measurements take turns, in rounds, so that a disturbance of
        // a shared machine falls on a conversion and its baselines alike.
        let r = rounds(
            seconds,
            [
                { _ = LibXMLBaseline.parseAndFree(categories) },
                { _ = convertCategories(categories, mapper) },
                { _ = floor.parse(categories) },
                { _ = LibXMLBaseline.parseAndFree(pidf) },
                { _ = convertPIDF(pidf, mapper) },
                { _ = floor.parse(pidf) },
            ])
        report("categories -> PIDF", convert: r[1], parse: r[0], floor: r[2])
        report("PIDF -> categories", convert: r[4], parse: r[3], floor: r[5])

        // Where a categories -> PIDF conversion spends its time, phase by phase.
        guard let events = try? XMLParser.events(categories, vocabulary: .presence),
            let doc = try? CategoriesDocument(cursor: events.root)
        else { return }
        let pidfDoc = mapper.pidfDocument(from: doc, dialect: .rfc)
        let phases: [(String, Double)] = [
            ("parse to events", rate(seconds / 2) { _ = try? XMLParser.events(categories, vocabulary: .presence) }),
            ("decode categories", rate(seconds / 2) { _ = try? CategoriesDocument(cursor: events.root) }),
            ("map to PIDF", rate(seconds / 2) { _ = mapper.pidfDocument(from: doc, dialect: .rfc) }),
            ("write PIDF bytes", rate(seconds / 2) { _ = pidfDoc.serialized() }),
        ]
        print("categories -> PIDF, phase by phase:")
        for (name, r) in phases {
            print(String(format: "  phase %-22@ %9.0f/s  (%.1f us)", name as NSString, r, 1e6 / r))
        }

        // The same for PIDF -> categories.
        guard let pidfEvents = try? XMLParser.events(pidf, vocabulary: .presence),
            let pidfIn = try? PIDFDocument(cursor: pidfEvents.root)
        else { return }
        let categoriesDoc = mapper.categoriesDocument(from: pidfIn)
        let reverse: [(String, Double)] = [
            ("parse to events", rate(seconds / 2) { _ = try? XMLParser.events(pidf, vocabulary: .presence) }),
            ("decode PIDF", rate(seconds / 2) { _ = try? PIDFDocument(cursor: pidfEvents.root) }),
            ("map to categories", rate(seconds / 2) { _ = mapper.categoriesDocument(from: pidfIn) }),
            ("write categories bytes", rate(seconds / 2) { _ = categoriesDoc.serialized() }),
        ]
        print("PIDF -> categories, phase by phase:")
        for (name, r) in reverse {
            print(String(format: "  phase %-22@ %9.0f/s  (%.1f us)", name as NSString, r, 1e6 / r))
        }
        try partialPIDF(seconds, mapper)
    }

    /// Partial notifications (RFC 5263): a `pidf-diff` that changes the person's activities,
    /// applied to the held document and mapped to categories, against the full PIDF of the same
    /// state converted; and the diff written by the notifier from two documents.
    static func partialPIDF(_ seconds: Double, _ mapper: PresenceMapper) throws {
        let held = try XMLParser.parse(Array(typicalPIDF.utf8))
        let changedText = typicalPIDF.replacingOccurrences(of: "<rpid:busy/><rpid:meeting/>", with: "<rpid:away/>")
        let changed = Array(changedText.utf8)
        let changedTree = try XMLParser.parse(changed)
        guard let diff = PIDFDiff.diff(from: held, to: changedTree, version: 2) else {
            fatalError("the bench diff is not smaller than the document")
        }
        func applyAndMap() -> [UInt8] {
            guard case .diff(_, let operations) = try? PIDFDiff(bytes: diff) else {
                fatalError("bench diff does not parse")
            }
            var tree = held
            guard (try? PIDFDiff.apply(operations, to: &tree)) != nil, let document = try? PIDFDiff.document(tree)
            else {
                fatalError("bench diff does not apply")
            }
            return mapper.categoriesDocument(from: document).serialized()
        }
        let r = rounds(
            seconds,
            [
                { _ = convertPIDF(changed, mapper) },
                { _ = applyAndMap() },
                { _ = PIDFDiff.diff(from: held, to: changedTree, version: 2) },
            ])
        print("partial PIDF (RFC 5263): diff \(diff.count) bytes for a \(changed.count)-byte document")
        print(
            String(
                format:
                    "  full PIDF -> categories %9.0f/s   pidf-diff applied and mapped %9.0f/s (%.2f)   diff written %9.0f/s",
                median(r[0]), median(r[1]), median(r[1]) / median(r[0]), median(r[2])))
    }

    static func profile(_ phase: String, _ n: Int) throws {
        let mapper = PresenceMapper(tables: try MappingTables.builtIn())
        let bytes = Array(categoriesNotify.utf8)
        let events = try XMLParser.events(bytes, vocabulary: .presence)
        let doc = try CategoriesDocument(cursor: events.root)
        let pidfBytes = Array(typicalPIDF.utf8)
        let pidfEvents = try XMLParser.events(pidfBytes, vocabulary: .presence)
        let pidfOut = mapper.pidfDocument(from: doc, dialect: .rfc)
        let pidfIn = try PIDFDocument(cursor: pidfEvents.root)
        let categoriesOut = mapper.categoriesDocument(from: pidfIn)
        guard let floor = LibXMLSAXFloor() else { fatalError("libxml2 could not create a parser context") }
        // The phase is looked up once, not compared with every name on each iteration.
        let run: () -> Void
        switch phase {
        case "baseline": run = { _ = LibXMLBaseline.parseAndFree(bytes) }
        case "baseline-pidf": run = { _ = LibXMLBaseline.parseAndFree(pidfBytes) }
        case "floor": run = { _ = floor.parse(bytes) }
        case "floor-pidf": run = { _ = floor.parse(pidfBytes) }
        case "parse": run = { _ = try? XMLParser.events(bytes, vocabulary: .presence) }
        case "parse-tree": run = { _ = try? XMLParser.parse(bytes, vocabulary: .presence) }
        case "decode": run = { _ = try? CategoriesDocument(cursor: events.root) }
        case "categories": run = { _ = try? CategoriesDocument(bytes: bytes) }
        case "parse-pidf": run = { _ = try? XMLParser.events(pidfBytes, vocabulary: .presence) }
        case "decode-pidf": run = { _ = try? PIDFDocument(cursor: pidfEvents.root) }
        case "map-pidf": run = { _ = mapper.pidfDocument(from: doc, dialect: .rfc) }
        case "convert": run = { _ = mapper.pidfDocument(from: doc, dialect: .rfc).serialized() }
        case "full": run = { _ = convertCategories(bytes, mapper) }
        case "write-pidf": run = { _ = pidfOut.serialized() }
        case "map-categories": run = { _ = mapper.categoriesDocument(from: pidfIn) }
        case "write-categories": run = { _ = categoriesOut.serialized() }
        case "pidf": run = { _ = convertPIDF(pidfBytes, mapper) }
        default:
            fatalError(
                """
                phases: baseline baseline-pidf floor floor-pidf parse parse-tree decode categories map-pidf convert full write-pidf \
                parse-pidf decode-pidf map-categories write-categories pidf
                """)
        }
        for _ in 0..<n { run() }
    }

    /// A categories body to PIDF bytes, as the gateway renders it for an OMA watcher.
    static func convertCategories(_ bytes: [UInt8], _ mapper: PresenceMapper) -> [UInt8] {
        guard let doc = try? CategoriesDocument(bytes: bytes) else { fatalError("bench input does not parse") }
        return mapper.pidfDocument(from: doc, dialect: .rfc).serialized()
    }

    /// A PIDF body to categories bytes.
    static func convertPIDF(_ bytes: [UInt8], _ mapper: PresenceMapper) -> [UInt8] {
        guard let doc = try? PIDFDocument(bytes: bytes) else { fatalError("bench input does not parse") }
        return mapper.categoriesDocument(from: doc).serialized()
    }

    /// Prints one direction's medians over the rounds, with the range of the
    /// conversion rate and of the ratio (each round's ratio is taken within the round).
    static func report(_ name: String, convert: [Double], parse: [Double], floor: [Double]) {
        let ratios = zip(convert, parse).map { $0 / $1 }
        let c = median(convert)
        let p = median(parse)
        let f = median(floor)
        let ratio = median(ratios)
        print(
            String(
                format:
                    "%-20@ conversion %9.0f/s   libxml2 parse-only %9.0f/s   ratio %.2f   (targets: >= 50000/s, ratio >= 0.50) %@",
                name as NSString, c, p, ratio, (c >= 50_000 && ratio >= 0.5 ? "MET" : "NOT MET") as NSString))
        print(
            String(
                format: "    medians of %d rounds; conversion %.0f-%.0f/s, ratio %.2f-%.2f",
                convert.count, convert.min() ?? 0, convert.max() ?? 0, ratios.min() ?? 0, ratios.max() ?? 0))
        print(
            String(
                format:
                    "    libxml2 SAX2 floor (reused context, callbacks do nothing) %9.0f/s: conversion takes %.1f us above it, 50000/s allows %.1f us",
                f, 1e6 / c - 1e6 / f, 20 - 1e6 / f))
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }

    /// Five rounds; in each, every body runs for a fifth of `seconds`. The
    /// rates per body, one per round.
    static func rounds(_ seconds: Double, _ bodies: [() -> Void]) -> [[Double]] {
        let count = 5
        var rates = [[Double]](repeating: [], count: bodies.count)
        for _ in 0..<count {
            for (i, body) in bodies.enumerated() { rates[i].append(rate(seconds / Double(count), body)) }
        }
        return rates
    }

    /// Runs `body` repeatedly for about `seconds` after a warm-up; operations per second.
    static func rate(_ seconds: Double, _ body: () -> Void) -> Double {
        for _ in 0..<2000 { body() }
        let clock = ContinuousClock()
        var count = 0
        let start = clock.now
        let deadline = start + .milliseconds(Int(seconds * 1000))
        while clock.now < deadline {
            for _ in 0..<200 { body() }
            count += 200
        }
        let elapsed = start.duration(to: clock.now)
        return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    /// [MS-PRES] §4.5: john's categories in the batch 200 OK (2.4 KB).
    static let categoriesNotify = """
        <categories xmlns="http://schemas.microsoft.com/2006/09/sip/categories" uri="sip:john@contoso.com">
          <category name="calendarData" instance="0" publishTime="2008-01-23T07:53:41.670">
            <calendarData xmlns="http://schemas.microsoft.com/2006/09/sip/calendarData" mailboxID="john@contoso.com">
              <WorkingHours xmlns="http://schemas.microsoft.com/exchange/services/2006/types">
                <TimeZone><Bias>480</Bias><StandardTime><Bias>0</Bias><Time>02:00:00</Time><DayOrder>1</DayOrder><Month>11</Month><DayOfWeek>Sunday</DayOfWeek></StandardTime><DaylightTime><Bias>-60</Bias><Time>02:00:00</Time><DayOrder>2</DayOrder><Month>3</Month><DayOfWeek>Sunday</DayOfWeek></DaylightTime></TimeZone>
                <WorkingPeriodArray><WorkingPeriod><DayOfWeek>Monday Tuesday Wednesday Thursday Friday</DayOfWeek><StartTimeInMinutes>480</StartTimeInMinutes><EndTimeInMinutes>1020</EndTimeInMinutes></WorkingPeriod></WorkingPeriodArray>
              </WorkingHours>
            </calendarData>
          </category>
          <category name="contactCard" instance="0" publishTime="2008-01-23T07:50:12.873">
            <contactCard xmlns="http://schemas.microsoft.com/2006/09/sip/contactcard">
              <identity><name><displayName>John</displayName></name><email>john@contoso.com</email></identity>
            </contactCard>
          </category>
          <category name="note" instance="0" publishTime="2008-01-23T07:55:11.530">
            <note xmlns="http://schemas.microsoft.com/2006/09/sip/note"><body type="personal" uri="">Working from home today</body></note>
          </category>
          <category name="services" instance="0" publishTime="2008-01-23T07:53:41.670">
            <services xmlns="http://schemas.microsoft.com/2006/09/sip/service">
              <service uri="sip:john@contoso.com">
                <capabilities><text render="true" capture="true" deviceAvailability="3500"/><gifInk render="true" capture="false" deviceAvailability="3500"/><isfInk render="true" capture="false" deviceAvailability="3500"/><applicationSharing render="true" capture="true" deviceAvailability="3500"/></capabilities>
              </service>
            </services>
          </category>
          <category name="state" instance="1" publishTime="2008-01-23T07:53:41.670">
            <state xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="aggregateState" xmlns="http://schemas.microsoft.com/2006/09/sip/state">
              <availability>6500</availability>
              <activity token="in-a-meeting" minAvailability="6500" maxAvailability="8999"/>
              <endpointLocation>Home</endpointLocation>
              <meetingSubject>Design review</meetingSubject>
              <meetingLocation>Building 7</meetingLocation>
            </state>
          </category>
        </categories>
        """

    /// A PIDF as an OMA client writes it (RFC 3863 tuple, RFC 4479 person with RPID and CIPID).
    static let typicalPIDF = """
        <?xml version="1.0" encoding="UTF-8"?>
        <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model"
            xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" xmlns:c="urn:ietf:params:xml:ns:pidf:cipid"
            xmlns:caps="urn:ietf:params:xml:ns:pidf:caps" entity="sip:alice@oma.example.net">
          <tuple id="t1">
            <status><basic>open</basic>
              <caps:servcaps><caps:audio>true</caps:audio><caps:message>true</caps:message><caps:video>false</caps:video></caps:servcaps>
            </status>
            <contact priority="0.8">sip:alice@192.0.2.10</contact>
            <timestamp>2026-11-22T10:00:00Z</timestamp>
          </tuple>
          <dm:person id="p1">
            <rpid:activities><rpid:busy/><rpid:meeting/></rpid:activities>
            <rpid:place-is><rpid:audio><rpid:quiet/></rpid:audio></rpid:place-is>
            <rpid:time-offset>60</rpid:time-offset>
            <rpid:user-input>active</rpid:user-input>
            <c:display-name>Alice Example</c:display-name>
            <c:icon>http://oma.example.net/alice.png</c:icon>
            <dm:note xml:lang="en">In the weekly review</dm:note>
          </dm:person>
        </presence>
        """
}
