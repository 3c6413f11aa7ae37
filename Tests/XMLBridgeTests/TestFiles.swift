import Foundation

/// Locations of the package's data and of the shared material beside the clone.
enum TestFiles {
    /// The package root: two levels above this file (Tests/XMLBridgeTests/).
    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// `Schemas/` of this package.
    static let schemas = packageRoot.appending(path: "Schemas")
    /// `../shared` relative to the package root (CI has it beside the clone).
    static let shared = packageRoot.deletingLastPathComponent().appending(path: "shared")
    static let ietfExamples = shared.appending(path: "spec/ietf-schemas/examples")
    static let msExamples = shared.appending(path: "spec/examples")
    /// The project's own examples of its provisional UPnP payloads (Schemas/upnp/upnp-presence.xsd).
    static let upnpExamples = schemas.appending(path: "upnp/examples")

    static func bytes(_ url: URL) throws -> [UInt8] { Array(try Data(contentsOf: url)) }

    /// Every file below `Schemas/`, keyed as the EmbedFiles plugin keys them ("Schemas/ietf/pidf.xsd").
    static func embeddedSchemaFiles() throws -> [String: String] {
        var files: [String: String] = [:]
        let root = packageRoot.standardizedFileURL.path + "/"
        guard let items = FileManager.default.enumerator(at: schemas, includingPropertiesForKeys: nil) else { return [:] }
        for case let url as URL in items where ["tsv", "xsd", "md"].contains(url.pathExtension) {
            let path = url.standardizedFileURL.path
            guard path.hasPrefix(root) else { continue }
            files[String(path.dropFirst(root.count))] = try String(contentsOf: url, encoding: .utf8)
        }
        return files
    }
}
