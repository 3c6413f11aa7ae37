import ArgumentParser
import Foundation
import PresenceDocuments
import PresenceMapping
import XMLBridge

/// `presence-map`: one-off conversions between enhanced-presence categories,
/// PIDF/RPID and msrtc.pidf, schema validation, and the mapping tables.
///
/// Exit codes: 0 success, 1 invalid input (file:line:column: message), 2 usage error.
@main
struct PresenceMap: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "presence-map",
        abstract: "Convert and validate presence documents (categories, PIDF/RPID, msrtc.pidf).",
        discussion: "Exit codes: 0 success, 1 invalid input, 2 usage error.",
        subcommands: [Convert.self, Aggregate.self, Validate.self, Tables.self]
    )

    /// Runs the command with the exit codes the tool documents (ArgumentParser
    /// would use 64 for usage errors).
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch let code as ExitCode {
            Foundation.exit(code.rawValue)
        } catch let failure as InputFailure {
            FileHandle.standardError.write(Data((failure.description + "\n").utf8))
            Foundation.exit(1)
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                print(fullMessage(for: error))
                Foundation.exit(0)
            }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(2)
        }
    }
}

/// Invalid input: names the file, the line and column, and the problem.
struct InputFailure: Error, CustomStringConvertible {
    var file: String
    var line: Int = 0
    var column: Int = 0
    var message: String

    var description: String {
        line > 0 ? "\(file):\(line):\(column): error: \(message)" : "\(file): error: \(message)"
    }

    init(file: String, line: Int = 0, column: Int = 0, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.message = message
    }

    init(file: String, _ error: XMLError) {
        self.init(file: file, line: error.line, column: error.column, message: "\(error.message) [\(error.code)]")
    }

    init(_ error: MappingError) {
        self.init(file: error.file, line: error.line, column: error.column, message: "\(error.message) [\(error.code)]")
    }
}

struct MappingsOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp("Load the mapping tables from DIR instead of the built-in ones.", valueName: "DIR"))
    var mappings: String?

    func tables() throws -> MappingTables {
        do {
            if let mappings { return try MappingTables.load(directory: mappings) }
            return try MappingTables.builtIn()
        } catch {
            throw InputFailure(error)
        }
    }
}

/// Reads a file (or standard input for "-"), refusing more than the XML size limit.
func readInput(_ path: String, limit: Int = XMLLimits().maxBytes) throws -> [UInt8] {
    let handle: FileHandle
    if path == "-" {
        handle = FileHandle.standardInput
    } else {
        guard let opened = FileHandle(forReadingAtPath: path) else {
            throw InputFailure(file: path, message: "cannot open the file")
        }
        handle = opened
    }
    defer { if path != "-" { try? handle.close() } }
    let data = (try? handle.read(upToCount: limit + 1)) ?? Data()
    guard data.count <= limit else {
        throw InputFailure(file: path, message: "larger than \(limit) bytes [\(XMLError.Code.tooLarge)]")
    }
    return [UInt8](data)
}
