import Foundation
import PresenceDocuments
@testable import PresenceGateway
import Testing
import XMLBridge

/// Golden pres-rules vectors in `Vectors/policy/` (see its README.md): one test per row of
/// `manifest.tsv`. The decisions and expected documents are written by hand from RFC 4745,
/// RFC 5025 and OMA's pres-rules extensions.
struct PolicyVectorTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        var id, rules, watcher, subHandling, input, expected, outcome, checkedAgainst: String
        var testDescription: String { id }
    }

    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let vectors = root.appendingPathComponent("Vectors/policy")
    static let xcapRoot = "http://xdms.oma.example/xcap-root"

    static let manifest: [Vector] = {
        guard let text = try? String(contentsOf: vectors.appendingPathComponent("manifest.tsv"), encoding: .utf8) else {
            return [Vector(id: "manifest-missing", rules: "", watcher: "", subHandling: "", input: "", expected: "", outcome: "missing", checkedAgainst: "")]
        }
        return text.split(separator: "\n").compactMap { raw -> Vector? in
            let line = String(raw)
            if line.hasPrefix("#") || line.hasPrefix("id\t") { return nil }
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard f.count == 8 else {
                return Vector(id: "malformed: \(line)", rules: "", watcher: "", subHandling: "", input: "", expected: "", outcome: "malformed", checkedAgainst: "")
            }
            return Vector(id: f[0], rules: f[1], watcher: f[2], subHandling: f[3], input: f[4], expected: f[5], outcome: f[6], checkedAgainst: f[7])
        }
    }()

    /// An anchor under the XCAP root with a `list[@name="NAME"]` selector is `lists/NAME.xml`.
    static func lookup(_ anchor: String) -> [String]? {
        guard XCAPExternalLists.isUnder(root: xcapRoot, anchor),
            let start = anchor.range(of: "%5B@name=%22"), let end = anchor.range(of: "%22%5D", range: start.upperBound..<anchor.endIndex)
        else { return nil }
        let name = anchor[start.upperBound..<end.lowerBound]
        guard let data = try? Data(contentsOf: vectors.appendingPathComponent("lists/\(name).xml")) else { return nil }
        return try? XCAPExternalLists.entries(Array(data))
    }

    @Test func everyRuleFileIsUsedAndEveryRowCitesASection() throws {
        let used = Set(Self.manifest.map(\.rules))
        for name in try FileManager.default.contentsOfDirectory(atPath: Self.vectors.appendingPathComponent("rules").path) {
            #expect(used.contains("rules/\(name)"), "rules/\(name) is not in manifest.tsv")
        }
        for v in Self.manifest {
            #expect(v.checkedAgainst.range(of: #"(RFC \d+|OMA-[A-Z]+-\w+|PacketCable Presence \d|XML Schema)"#, options: .regularExpression) != nil, "\(v.id)")
        }
    }

    @Test("pres-rules vector", arguments: manifest)
    func vector(_ v: Vector) throws {
        #expect(!["missing", "malformed"].contains(v.outcome), "\(v.id)")
        let bytes = Array(try Data(contentsOf: Self.vectors.appendingPathComponent(v.rules)))
        if v.outcome.hasPrefix("error:") {
            do {
                _ = try PresRules(bytes: bytes)
                Issue.record("\(v.id): \(v.rules) parsed, expected \(v.outcome)")
            } catch {
                #expect("error:\(error.code.rawValue)" == v.outcome && error.line > 0, "\(v.id): \(error)")
            }
            return
        }
        let rules = try PresRules(bytes: bytes).resolvingExternalLists(Self.lookup)
        let watcher = try #require(WatcherIdentity(uri: v.watcher, network: .federated))
        #expect((rules.subHandling(for: watcher)?.token ?? "none") == v.subHandling, "\(v.id)")
        guard v.input != "-" else { return }
        let input = try PIDFDocument(bytes: Array(Data(contentsOf: Self.vectors.appendingPathComponent(v.input))))
        let expected = try PIDFDocument(bytes: Array(Data(contentsOf: Self.vectors.appendingPathComponent(v.expected))))
        let shown = try #require(rules.permissions(for: watcher)).apply(to: input)
        #expect(shown == expected, "\(v.id)\n--- expected\n\(String(decoding: expected.serialized(), as: UTF8.self))\n--- actual\n\(String(decoding: shown.serialized(), as: UTF8.self))")
    }
}
