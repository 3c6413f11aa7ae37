import Foundation
import PackagePlugin

/// Embeds the versions SwiftPM resolved for the package's dependencies (`Package.resolved`, which
/// SwiftPM writes before it builds and which is not kept in git) into the target as a generated
/// Swift file, so that `presence-gateway --version` and `gateway_dependency_info` name what was
/// built in. Nothing is written into the source tree.
@main
struct ResolvedVersions: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let resolved = context.package.directoryURL.appending(path: "Package.resolved")
        // Missing only when nothing was resolved: the tool then writes an empty list.
        let inputs = FileManager.default.fileExists(atPath: resolved.path(percentEncoded: false)) ? [resolved] : []
        let output = context.pluginWorkDirectoryURL.appending(path: "ResolvedDependencies.swift")
        return [
            .buildCommand(
                displayName: "Embedding the resolved dependency versions",
                executable: try context.tool(named: "resolved-versions").url,
                arguments: [output.path(percentEncoded: false)] + inputs.map { $0.path(percentEncoded: false) },
                inputFiles: inputs,
                outputFiles: [output]
            )
        ]
    }
}
