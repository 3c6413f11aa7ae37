import Foundation
import PresenceDocuments
import PresenceMapping
import Testing
import XMLBridge

/// Golden vectors in `Vectors/presence/` (see its README.md): one test per row
/// of `manifest.tsv`. Expected files are written by hand from the mapping
/// tables and the spec; the code under test never writes them, except on the
/// opt-in `PRESENCE_REGENERATE=1` run, whose result is reviewed with git diff.
struct GoldenVectorTests {
    /// One row of `Vectors/presence/manifest.tsv`.
    struct Vector: Sendable, CustomTestStringConvertible {
        var id: String
        var input: String
        var direction: String
        var expected: String
        var outcome: String
        var source: String
        /// The [MS-PRES] section and row, or the RFC section, the expected output was checked
        /// against by hand.
        var checkedAgainst: String
        var line: Int

        var testDescription: String { id }
        var from: String { String(direction.split(separator: ">").first ?? "").replacingOccurrences(of: "-", with: "") }
        var to: String { String(direction.split(separator: ">").last ?? "") }
    }

    /// The package root: two levels above this file (Tests/PresenceMappingTests/).
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let vectors = root.appendingPathComponent("Vectors/presence")
    static let regenerate = ProcessInfo.processInfo.environment["PRESENCE_REGENERATE"] == "1"

    /// The manifest rows. A missing or malformed manifest yields one row that fails.
    static let manifest: [Vector] = {
        let url = vectors.appendingPathComponent("manifest.tsv")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else {
            return [Vector(id: "manifest-missing", input: "manifest.tsv", direction: "-", expected: "-", outcome: "missing", source: url.path, checkedAgainst: "", line: 0)]
        }
        var rows: [Vector] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.hasSuffix("\r") ? String(raw.dropLast()) : String(raw)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix("id\t") { continue }
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count == 7 else {
                rows.append(Vector(id: "manifest-line-\(index + 1)", input: "-", direction: "-", expected: "-", outcome: "malformed", source: line, checkedAgainst: "", line: index + 1))
                continue
            }
            rows.append(Vector(
                id: f[0], input: f[1], direction: f[2], expected: f[3], outcome: f[4], source: f[5], checkedAgainst: f[6],
                line: index + 1))
        }
        return rows
    }()

    static let mapper: PresenceMapper? = try? PresenceMapper(tables: MappingTables.builtIn())

    @Test("manifest lists vectors and every vector file is listed")
    func manifestIsComplete() throws {
        let rows = Self.manifest
        #expect(rows.count > 0)
        #expect(Set(rows.map(\.id)).count == rows.count, "vector ids must be unique")
        let listed = Set(rows.flatMap { [$0.input, $0.expected] })
        let fm = FileManager.default
        for group in ["table", "examples", "ua", "aggregation", "oma"] {
            for sub in ["input", "expected"] {
                let dir = Self.vectors.appendingPathComponent("\(group)/\(sub)")
                let names = try fm.contentsOfDirectory(atPath: dir.path)
                for name in names where name.hasSuffix(".xml") {
                    #expect(listed.contains("\(group)/\(sub)/\(name)"), "\(group)/\(sub)/\(name) is not in manifest.tsv")
                }
            }
        }
    }

    /// The conversion without a report (`pidfDocument`) gives the document of the one with a
    /// report, in both dialects, for every categories input of the vectors.
    @Test func pidfWithoutReportIsTheDocumentOfTheReportingConversion() throws {
        guard let mapper = Self.mapper else {
            Issue.record("the built-in mapping tables do not load")
            return
        }
        var compared = 0
        for v in Self.manifest where v.from == "categories" && v.outcome == "ok" {
            let bytes = try Array(Data(contentsOf: Self.vectors.appendingPathComponent(v.input)))
            let doc = try CategoriesDocument(bytes: bytes)
            for dialect in PIDFDialect.allCases {
                for extensions in [false, true] {
                    let reported = mapper.pidf(from: doc, dialect: dialect, rpidExtensions: extensions).0
                    let unreported = mapper.pidfDocument(from: doc, dialect: dialect, rpidExtensions: extensions)
                    #expect(unreported == reported, "\(v.id) \(dialect) extensions \(extensions)")
                    #expect(unreported.serialized() == reported.serialized(), "\(v.id) \(dialect) extensions \(extensions)")
                    compared += 1
                }
            }
        }
        #expect(compared > 10)
    }

    /// The same for PIDF → categories: `categoriesDocument` gives the document of
    /// `categories(from:)` for every PIDF input of the vectors.
    @Test func categoriesWithoutReportIsTheDocumentOfTheReportingConversion() throws {
        guard let mapper = Self.mapper else {
            Issue.record("the built-in mapping tables do not load")
            return
        }
        var compared = 0
        for v in Self.manifest where v.from.hasPrefix("pidf") && v.outcome == "ok" {
            let bytes = try Array(Data(contentsOf: Self.vectors.appendingPathComponent(v.input)))
            let doc = try PIDFDocument(bytes: bytes)
            let reported = mapper.categories(from: doc).0
            let unreported = mapper.categoriesDocument(from: doc)
            #expect(unreported == reported, "\(v.id)")
            #expect(unreported.serialized() == reported.serialized(), "\(v.id)")
            compared += 1
        }
        #expect(compared > 10)
    }

    /// Whether a `checked_against` entry names a section: an [MS-PRES] section (`MS-PRES 3.7.5.4`),
    /// an RFC section (`RFC 3863 4.1.4`) or the XML 1.0 well-formedness rules.
    static func citesASection(_ text: String) -> Bool {
        text.range(of: #"(MS-PRES|RFC \d+) \d+(\.\d+)*"#, options: .regularExpression) != nil
            || text.hasPrefix("XML 1.0 well-formedness")
    }

    @Test func checkedAgainstMustCiteASection() {
        #expect(Self.citesASection("MS-PRES 3.7.5.4 row 2"))
        #expect(Self.citesASection("RFC 3863 4.1.1 (entity required)"))
        #expect(!Self.citesASection("taken from the program"))
        #expect(!Self.citesASection(""))
    }

    @Test("golden vector", arguments: manifest)
    func vector(_ v: Vector) throws {
        #expect(["missing", "malformed"].contains(v.outcome) == false, "manifest.tsv: \(v.source)")
        #expect(Self.citesASection(v.checkedAgainst), "\(v.id): checked_against must name the MS-PRES or RFC section the expected output was checked against")
        guard let mapper = Self.mapper else {
            Issue.record("the built-in mapping tables do not load")
            return
        }
        let inputURL = Self.vectors.appendingPathComponent(v.input)
        let bytes: [UInt8]
        do { bytes = try Array(Data(contentsOf: inputURL)) } catch {
            Issue.record("\(v.id): input \(v.input) is missing: \(error)")
            return
        }

        if v.outcome.hasPrefix("error:") {
            let code = String(v.outcome.dropFirst("error:".count))
            do {
                try Self.parse(v.from, bytes)
                Issue.record("\(v.id): \(v.input) parsed, expected error \(code)")
            } catch {
                #expect(error.code.rawValue == code, "\(v.id): \(error)")
                #expect(error.line > 0, "\(v.id): error without a line: \(error)")
                if code == XMLError.Code.notWellFormed.rawValue {
                    #expect(error.column > 0, "\(v.id): not-well-formed without a column: \(error)")
                }
            }
            return
        }
        #expect(v.outcome == "ok", "\(v.id): unknown outcome \(v.outcome)")

        let actual: Output
        do { actual = try Self.map(v, bytes, mapper) } catch {
            Issue.record("\(v.id): input \(v.input) does not parse: \(error)")
            return
        }

        let expectedURL = Self.vectors.appendingPathComponent(v.expected)
        if Self.regenerate {
            try Data(actual.bytes).write(to: expectedURL)
            return
        }
        let expectedBytes: [UInt8]
        do { expectedBytes = try Array(Data(contentsOf: expectedURL)) } catch {
            Issue.record("\(v.id): expected file \(v.expected) is missing: \(error)")
            return
        }
        let expected: Output
        do { expected = try Self.parseOutput(v.to, expectedBytes) } catch {
            Issue.record("\(v.id): expected file \(v.expected) does not parse: \(error)")
            return
        }
        if actual != expected {
            Issue.record("""
                \(v.id) (\(v.direction), \(v.source)): output differs from \(v.expected)
                --- expected
                \(expected.serialized)
                --- actual
                \(actual.serialized)
                """)
        }
    }

    // MARK: - Codecs

    enum Output: Equatable {
        case categories(CategoriesDocument)
        case pidf(PIDFDocument)
        case msrtc(MSRTCPresentity)

        var bytes: [UInt8] {
            switch self {
            case .categories(let d): d.serialized()
            case .pidf(let d): d.serialized()
            case .msrtc(let d): d.serialized()
            }
        }

        var serialized: String { String(decoding: bytes, as: UTF8.self) }
    }

    /// Parses an input of kind `categories`, `pidf` or `msrtc`.
    @discardableResult
    static func parse(_ kind: String, _ bytes: [UInt8]) throws(XMLError) -> Output {
        switch kind {
        case "categories": return .categories(try CategoriesDocument(bytes: bytes))
        case "pidf": return .pidf(try PIDFDocument(bytes: bytes))
        case "msrtc": return .msrtc(try MSRTCPresentity(bytes: bytes))
        default: throw XMLError(.unexpectedContent, "manifest: unknown input kind \(kind)")
        }
    }

    /// Parses an expected file of output kind `categories`, `pidf-rfc`, `pidf-rfc-extended`,
    /// `pidf-microsoft` or `msrtc`.
    static func parseOutput(_ kind: String, _ bytes: [UInt8]) throws(XMLError) -> Output {
        try parse(kind.hasPrefix("pidf") ? "pidf" : kind, bytes)
    }

    static func map(_ v: Vector, _ bytes: [UInt8], _ mapper: PresenceMapper) throws(XMLError) -> Output {
        let input = try parse(v.from, bytes)
        switch (input, v.to) {
        case (.categories(let d), "pidf-rfc"): return .pidf(mapper.pidf(from: d, dialect: .rfc).0)
        case (.categories(let d), "pidf-rfc-extended"): return .pidf(mapper.pidf(from: d, dialect: .rfc, rpidExtensions: true).0)
        case (.categories(let d), "pidf-microsoft"): return .pidf(mapper.pidf(from: d, dialect: .microsoft).0)
        case (.categories(let d), "msrtc"): return .msrtc(mapper.msrtc(from: d).0)
        case (.pidf(let d), "categories"): return .categories(mapper.categories(from: d).0)
        case (.pidf(let d), "msrtc"): return .msrtc(mapper.msrtc(from: d).0)
        case (.msrtc(let d), "categories"): return .categories(mapper.categories(from: d).0)
        case (.msrtc(let d), "pidf-rfc"): return .pidf(mapper.pidf(from: d, dialect: .rfc).0)
        case (.msrtc(let d), "pidf-microsoft"): return .pidf(mapper.pidf(from: d, dialect: .microsoft).0)
        default: throw XMLError(.unexpectedContent, "manifest: unknown direction \(v.direction)")
        }
    }
}
