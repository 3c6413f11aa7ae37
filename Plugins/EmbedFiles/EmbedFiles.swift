import Foundation
import PackagePlugin

/// Embeds the package's data folders (`Mappings/`, `Schemas/`) into the target
/// as a generated Swift file, so a built program has its default tables and
/// schemas wherever it runs from. The folders stay the single source.
@main
struct EmbedFiles: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let root = context.package.directoryURL
        let folders = ["Mappings", "Schemas"].map { root.appending(path: $0) }
        var inputs: [URL] = []
        for folder in folders {
            guard let items = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { continue }
            for case let url as URL in items where ["tsv", "xsd", "md"].contains(url.pathExtension) {
                inputs.append(url)
            }
        }
        let output = context.pluginWorkDirectoryURL.appending(path: "EmbeddedFiles.swift")
        return [
            .buildCommand(
                displayName: "Embedding \(inputs.count) data files",
                executable: try context.tool(named: "embed-files").url,
                arguments: [output.path(percentEncoded: false), root.path(percentEncoded: false)]
                    + inputs.map { $0.path(percentEncoded: false) },
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}
