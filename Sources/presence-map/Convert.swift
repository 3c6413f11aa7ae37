public import ArgumentParser
import Foundation
public import PresenceDocuments
import PresenceMapping
import XMLBridge

struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Convert a presence document; the input format is detected from its root element.",
        discussion: "Reads categories, PIDF or msrtc.pidf and writes the requested format to standard output."
    )

    enum Target: String, ExpressibleByArgument, CaseIterable { case pidf, msrtc, categories }

    @Option(name: .long, help: "Output format: pidf, msrtc or categories.")
    var to: Target

    @Option(name: .long, help: "PIDF dialect: rfc (RFC 4480/4482, for OMA/IMS) or microsoft (MS-PRES 2.2.2.8).")
    var dialect: PIDFDialect = .rfc

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "PIDF output: add the RPID signals beyond the MS-PRES 3.7.5.4 row (class markers, token activities).",
            discussion:
                "For peers known to handle them and for categories -> PIDF -> categories through this gateway (Mappings/README.md)."
        ))
    var rpidExtensions = false

    @Flag(name: .long, help: "Print what was mapped and what was dropped (and why) to standard error.")
    var report = false

    @OptionGroup var mappings: MappingsOption

    @Argument(help: "The input file, or - for standard input.")
    var file: String = "-"

    func run() throws {
        let mapper = PresenceMapper(tables: try mappings.tables())
        let name = file == "-" ? "<stdin>" : file
        let bytes = try readInput(file)
        let output: [UInt8]
        var mappingReport = MappingReport()
        do {
            let root = try XMLParser.parse(bytes)
            switch (root.name.namespace, root.name.local) {
            case (NS.categories, "categories"):
                let doc = try CategoriesDocument(xml: root)
                switch to {
                case .pidf:
                    (output, mappingReport) = mapped(
                        mapper.pidf(from: doc, dialect: dialect, rpidExtensions: rpidExtensions))
                case .msrtc: (output, mappingReport) = mapped(mapper.msrtc(from: doc))
                case .categories: output = doc.serialized()
                }
            case (NS.pidf, "presence"):
                let doc = try PIDFDocument(xml: root)
                switch to {
                case .pidf: output = doc.serialized()
                case .msrtc: (output, mappingReport) = mapped(mapper.msrtc(from: doc))
                case .categories: (output, mappingReport) = mapped(mapper.categories(from: doc))
                }
            case (NS.msrtcPresence, "presentity"):
                let doc = try MSRTCPresentity(xml: root)
                switch to {
                case .pidf:
                    (output, mappingReport) = mapped(
                        mapper.pidf(from: doc, dialect: dialect, rpidExtensions: rpidExtensions))
                case .msrtc: output = doc.serialized()
                case .categories: (output, mappingReport) = mapped(mapper.categories(from: doc))
                }
            default:
                throw root.error(
                    "not a presence document: expected categories (\(NS.categories)), presence (\(NS.pidf)) or presentity (\(NS.msrtcPresence)), found \(root.name)"
                )
            }
        } catch let error as XMLError {
            throw InputFailure(file: name, error)
        }
        FileHandle.standardOutput.write(Data(output))
        if report {
            FileHandle.standardError.write(Data((mappingReport.description + "\n").utf8))
        }
    }

    private func mapped(_ result: (CategoriesDocument, MappingReport)) -> ([UInt8], MappingReport) {
        (result.0.serialized(), result.1)
    }
    private func mapped(_ result: (PIDFDocument, MappingReport)) -> ([UInt8], MappingReport) {
        (result.0.serialized(), result.1)
    }
    private func mapped(_ result: (MSRTCPresentity, MappingReport)) -> ([UInt8], MappingReport) {
        (result.0.serialized(), result.1)
    }
}

extension PIDFDialect: ExpressibleByArgument {}
