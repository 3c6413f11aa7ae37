import ArgumentParser
import Foundation
import PresenceDocuments
import PresenceMapping
import XMLBridge

struct Validate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Validate documents against the schemas the project carries (Schemas/).",
        discussion:
            "The schema is chosen by the root element (Schemas/roots.tsv). PIDF is validated through presence-bundle.xsd so RPID, CIPID, data-model and caps content is checked too."
    )

    static let msrtcNotValidated =
        "msrtc.pidf (text/xml+msrtc.pidf) cannot be validated: its schema is in [MS-SIP] section 6, "
        + "which is not in Schemas/ ([MS-PRES] Appendix D defines only its aggregate extension)"

    @Argument(help: "Files to validate.")
    var files: [String]

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one file") }
    }

    func run() throws {
        let schemas: XMLSchemaSet
        do {
            schemas = try XMLSchemaSet(files: BuiltInFiles.files(under: "Schemas/"))
        } catch {
            throw InputFailure(file: "Schemas", message: error.description)
        }
        var invalid = false
        for file in files {
            do {
                let bytes = try readInput(file)
                let root = try XMLParser.parse(bytes)
                if root.name.namespace == NS.msrtcPresence, root.name.local == "presentity" {
                    // [MS-PRES] Appendix D (section 9) defines only the `aggregate` extension; the
                    // document's own schema is in [MS-SIP] section 6, which the project does not carry.
                    throw InputFailure(
                        file: file, line: root.line, column: root.column, message: Self.msrtcNotValidated)
                }
                guard let schema = try schemas.schema(forNamespace: root.name.namespace, root: root.name.local) else {
                    throw InputFailure(
                        file: file, line: root.line, column: root.column,
                        message: "no schema for the root element \(root.name)")
                }
                let violations = try schema.validate(bytes)
                for v in violations {
                    FileHandle.standardError.write(Data((InputFailure(file: file, v).description + "\n").utf8))
                }
                if violations.isEmpty {
                    print("\(file): valid (\(schema.path.split(separator: "/").suffix(2).joined(separator: "/")))")
                } else {
                    invalid = true
                }
            } catch let failure as InputFailure {
                FileHandle.standardError.write(Data((failure.description + "\n").utf8))
                invalid = true
            } catch let error as XMLError {
                FileHandle.standardError.write(Data((InputFailure(file: file, error).description + "\n").utf8))
                invalid = true
            }
        }
        if invalid { throw ExitCode(1) }
    }
}
