import NIOCore
import PresenceDocuments
import MSPresenceEvents
import SIPMessages
import Testing

/// The other [MS-PRES] §4.3 publish examples (examples/README.md rows 4.3.1-4.3.4) through the
/// store. Their 200 OKs carry categories the server aggregates (§3.8), which this store does
/// not compute, so only the publisher's own instances are checked.
@Suite struct SeedPublishExampleTests {
    let t0 = NIODeadline.uptimeNanoseconds(5_000_000_000_000)
    let bob = "sip:bob@contoso.com"

    private func send(_ store: inout CategoryPublicationStore, _ file: String) throws -> SIPResponse {
        let body = try example(file)
        let uri = try CategoryPublish(bytes: body).uri
        let actions = store.receive(serviceRequest(body: body, from: "<\(uri)>;tag=pub1", to: "<\(uri)>"),
                                    endpointID: "ep1", now: t0, utcSeconds: 1_200_072_553, toTag: "srv")
        guard case .respond(let r)? = actions.first else { throw MSPresenceEventsError(.invalidResponseBody, "no response") }
        return r
    }

    @Test func userStateExampleCreatesItsInstancesAndSkipsDeletesOfMissingOnes() throws {
        // §4.3.1: two creates (version 0) and two deletes (expires 0,
        // version 0) of time-bound instances that do not exist: "the server moves on".
        var store = CategoryPublicationStore()
        let ok = try send(&store, "4.3.1-publish-userState.xml")
        #expect(ok.statusCode == 200)
        let publisher = try CategoryPublish(bytes: try example("4.3.1-publish-userState.xml")).uri
        let entries = store.entries(of: CategoryPublicationStore.publisherKey(try SIPURI(publisher)))
        #expect(entries.map(\.key.container) == [2, 3])
        #expect(entries.map(\.version) == [1, 1])
        #expect(entries.allSatisfy { $0.key.instance == 536_870_912 && $0.expireType == .static })
    }

    @Test func deviceExampleCreatesDeviceAndMachineState() throws {
        // §4.3.2.
        var store = CategoryPublicationStore()
        let ok = try send(&store, "4.3.2-publish-device-state.xml")
        #expect(ok.statusCode == 200)
        #expect(store.entries.count == 3)
        #expect(Set(store.entries.values.map(\.key.categoryName)) == [.device, .state])
    }

    @Test func dndExampleAfterTheUserStateExampleConflictsOnTheStaticInstances() throws {
        // §4.3.4 deletes the static instances 536870912 with version="0",
        // but after §4.3.1 created them they are at version 1: under §3.2.5.1.2
        // that is a version conflict, and the whole publish fails (§3.2.5.1.2). The seed's examples
        // are separate sessions; alone, §4.3.4 succeeds.
        var chained = CategoryPublicationStore()
        _ = try send(&chained, "4.3.1-publish-userState.xml")
        let conflict = try send(&chained, "4.3.4-publish-userState.xml")
        #expect(conflict.statusCode == 409)
        #expect(try PublishFault(bytes: conflict.body).operations.map(\.index) == [1, 2])
        var fresh = CategoryPublicationStore()
        #expect(try send(&fresh, "4.3.4-publish-userState.xml").statusCode == 200)
        #expect(fresh.entries.values.map(\.expireType) == [.time, .time])
    }

    @Test func calendarExampleUpdatesVersionOneInstancesOnceTheyExist() throws {
        // §4.3.3: instance 0 is updated with version 1, instance
        // 1982801780 created with version 0.
        let publish = try CategoryPublish(bytes: try example("4.3.3-publish-calendarData.xml"))
        var fresh = CategoryPublicationStore()
        let conflict = try send(&fresh, "4.3.3-publish-calendarData.xml")
        #expect(conflict.statusCode == 409)
        let updated = publish.publications.enumerated().filter { $0.element.version == 1 }.map { $0.offset + 1 }
        #expect(try PublishFault(bytes: conflict.body).operations.map(\.index) == updated)
        // With the instance-0 publications in place at version 1, the example commits.
        var store = CategoryPublicationStore()
        let seedCreate = CategoryPublish(uri: publish.uri, publications: publish.publications.filter { $0.version == 1 }.map {
            var p = $0
            p.version = 0
            return p
        })
        let setup = store.receive(serviceRequest(body: seedCreate.serialized(), from: "<\(publish.uri)>;tag=x", to: "<\(publish.uri)>"),
                                  endpointID: "ep1", now: t0, utcSeconds: 0, toTag: "srv")
        guard case .respond(let created)? = setup.first else { Issue.record("no response"); return }
        #expect(created.statusCode == 200)
        let ok = try send(&store, "4.3.3-publish-calendarData.xml")
        #expect(ok.statusCode == 200)
        #expect(store.entries.values.filter { $0.key.instance == 0 }.allSatisfy { $0.version == 2 })
        #expect(store.entries.count == publish.publications.count)
    }
}
