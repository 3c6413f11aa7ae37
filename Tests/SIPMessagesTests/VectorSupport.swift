import Foundation
import SIPMessages

/// Access to the repository's Vectors/ folder (found from this file's path; the package
/// manifest declares no test resources).
enum Vectors {
    static let root: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Vectors")

    static func bytes(_ relative: String) -> [UInt8] {
        (try? Data(contentsOf: root.appendingPathComponent(relative))).map { [UInt8]($0) } ?? []
    }

    static func rfc4475(_ file: String) -> [UInt8] { bytes("rfc4475/" + file) }

    /// One row of Vectors/rfc4475/manifest.tsv.
    struct Row: Sendable, CustomStringConvertible {
        var file: String
        var section: String
        var kind: String
        var expected: String
        var source: String
        var description: String { "\(file) (\(source))" }
    }

    static let manifest: [Row] = {
        let text = String(decoding: bytes("rfc4475/manifest.tsv"), as: UTF8.self)
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let c = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard c.count == 5 else { return nil }
            return Row(file: c[0], section: c[1], kind: c[2], expected: c[3], source: c[4])
        }
    }()
}

func parse(_ text: String) throws(SIPParseError) -> SIPMessage {
    try SIPMessage(parsing: Array(text.utf8))
}

func parseError(_ bytes: [UInt8]) -> SIPParseError? {
    do {
        _ = try SIPMessage(parsing: bytes)
        return nil
    } catch {
        return error
    }
}
