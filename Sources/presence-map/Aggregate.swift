import ArgumentParser
import Foundation
import PresenceDocuments
import PresenceMapping
import XMLBridge

struct Aggregate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print what an enhanced presence server computes from a publisher's instances (MS-PRES 3.8.5).",
        discussion: """
            Reads a categories document of published instances (a self view) or a category publish \
            (application/msrtc-category-publish+xml) and writes the computed categories: per container with state instances the \
            aggregateMachineState (container 2), aggregateState and dndState; with devices the services \
            for self and for subscribers (container 100); with WorkingHours in calendarData instance 0 \
            of container 1 the workingHours category. Each is given once, in the container it is \
            computed from.
            """
    )

    @Argument(help: "The categories document, or - for standard input.")
    var file: String = "-"

    func run() throws {
        let name = file == "-" ? "<stdin>" : file
        let bytes = try readInput(file)
        let document: CategoriesDocument
        do {
            let root = try XMLParser.parse(bytes)
            switch (root.name.namespace, root.name.local) {
            case (NS.categories, "categories"): document = try CategoriesDocument(xml: root)
            case (NS.richPresence, "publish"):
                let publish = try CategoryPublish(xml: root)
                document = CategoriesDocument(uri: publish.uri, categories: publish.publications.map(\.category))
            default:
                throw root.error(
                    "expected categories (\(NS.categories)) or publish (\(NS.richPresence)), found \(root.name)")
            }
        } catch let error as XMLError {
            throw InputFailure(file: name, error)
        }
        FileHandle.standardOutput.write(Data(ServerComputation.categories(of: document).serialized()))
    }
}
