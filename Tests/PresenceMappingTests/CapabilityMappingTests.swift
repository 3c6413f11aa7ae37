import PresenceDocuments
import PresenceMapping
import Testing

/// Services capabilities become `caps:servcaps` flags: one per table row whose enhanced-presence
/// capability is present with render or capture true, the first row for each flag, in table order.
struct CapabilityMappingTests {
    @Test func flagsAreThoseOfTheTableRowsPresent() throws {
        let tables = try MappingTables.builtIn()
        let names = tables.capabilities.map(\.ms) + ["gifInk", "isfInk"]
        let values = ["true", "false", "maybe"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            var services: [MSServices.Service] = []
            for s in 0..<Int.random(in: 1...2, using: &generator) {
                var capabilities: [MSCapability] = []
                for _ in 0..<Int.random(in: 0...5, using: &generator) {
                    var capability = MSCapability(name: names.randomElement(using: &generator)!)
                    if Bool.random(using: &generator) { capability.setAttribute("render", values.randomElement(using: &generator)!) }
                    if Bool.random(using: &generator) { capability.setAttribute("capture", values.randomElement(using: &generator)!) }
                    capabilities.append(capability)
                }
                services.append(.init(uri: "sip:a\(s)@example.com", capabilities: capabilities))
            }
            var expected: [String] = []
            for (ms, caps) in tables.capabilities where !expected.contains(caps) {
                let present = services.contains { service in
                    service.capabilities.contains { $0.name == ms && ($0.render == true || $0.capture == true) }
                }
                if present { expected.append(caps) }
            }
            let doc = CategoriesDocument(uri: "sip:a@example.com", categories: [
                Category(name: .state, instance: 0, payload: .state(MSState(type: .aggregateState, availability: 3500))),
                Category(name: .services, instance: 0, payload: .services(MSServices(services: services))),
            ])
            let (pidf, _) = SpecTableTests.mapper.pidf(from: doc, dialect: .rfc)
            let flags = pidf.tuples.first?.status.capabilities?.flags ?? []
            #expect(flags.map(\.name) == expected && flags.allSatisfy(\.value))
        }
    }
}
