import NIOCore
import PresenceDocuments
import MSPresenceEvents
import SIPMessages
import Testing
import XMLBridge

@Suite struct CategoryPublicationStoreTests {
    let t0 = NIODeadline.uptimeNanoseconds(3_000_000_000_000)
    /// 2008-01-11T17:29:13Z, the §4.2.1 200 OK's publishTime to the second.
    let clock: Int64 = 1_200_072_553
    let bob = "sip:bob@contoso.com"

    private func responses(_ actions: [CategoryPublicationStore.Action]) -> [SIPResponse] {
        actions.compactMap { if case .respond(let r) = $0 { r } else { nil } }
    }

    private func changes(_ actions: [CategoryPublicationStore.Action]) -> [CategoryPublicationStore.Change] {
        actions.flatMap { action -> [CategoryPublicationStore.Change] in
            if case .changed(let c) = action { return c }
            return []
        }
    }

    private func send(_ store: inout CategoryPublicationStore, _ body: [UInt8], endpoint: String? = "ep1",
                      now: NIODeadline? = nil, clock: Int64? = nil) throws -> (SIPResponse, [CategoryPublicationStore.Action]) {
        let actions = store.receive(serviceRequest(body: body), endpointID: endpoint, now: now ?? t0,
                                    utcSeconds: clock ?? self.clock, toTag: "77E194543CA4ACA978CF0109285FCC40")
        return (try #require(responses(actions).first), actions)
    }

    private func publish(_ items: [CategoryPublish.Publication]) -> [UInt8] {
        CategoryPublish(uri: bob, publications: items).serialized()
    }

    private func notePublication(container: UInt32, version: UInt32, text: String = "Busy",
                                 expireType: ExpireType = .static, expires: UInt32? = nil,
                                 instance: UInt32 = 0) throws -> CategoryPublish.Publication {
        CategoryPublish.Publication(categoryName: .note, instance: instance, container: container, version: version,
                                    expireType: expireType, expires: expires, payload: try note(text))
    }

    /// Without publishTime, which the store stamps from its own clock.
    private func withoutPublishTime(_ d: CategoriesDocument) -> CategoriesDocument {
        var d = d
        for i in d.categories.indices { d.categories[i].publishTime = nil }
        return d
    }

    // MARK: - The §4.2.1 example

    @Test func seedCreateWithVersionZeroIsStoredAsVersionOneAndAnsweredAsTheExample200() throws {
        var store = CategoryPublicationStore()
        let (ok, actions) = try send(&store, try example("4.2.1-publish-request.xml"))
        #expect(ok.statusCode == 200)
        #expect(try ok.headers.contentType?.mediaType == "application/vnd-microsoft-roaming-self+xml")
        #expect(try ok.headers.to?.tag == "77E194543CA4ACA978CF0109285FCC40")
        let mine = try roamingCategories(ok.body)
        let seed = try roamingCategories(try example("4.2.1-publish-200ok.xml"))
        // Same instances, containers (200, 300, 400: sorted, although the request said 300, 400, 200),
        // versions (1), expireType and data.
        #expect(withoutPublishTime(mine) == withoutPublishTime(seed))
        // publishTime from the injected clock: the example's time to the second.
        for (a, b) in zip(mine.categories, seed.categories) {
            #expect(a.publishTime.flatMap(XSDTime.seconds(from:)) == b.publishTime.flatMap(XSDTime.seconds(from:)))
        }
        #expect(store.entries(of: bob).map(\.version) == [1, 1, 1])
        #expect(changes(actions) == [200, 300, 400].map {
            CategoryPublicationStore.Change(publisher: bob, container: $0, categoryName: .note)
        })
    }

    @Test func seedRepeatedCreateOfExistingInstancesIsA409LikeTheExample() throws {
        var store = CategoryPublicationStore()
        _ = try send(&store, try example("4.2.1-publish-request.xml"))
        // Another endpoint updates them (version 1 → 2), as before the §4.2.1 409.
        let update = try [300, 400, 200].map { try notePublication(container: $0, version: 1, text: "Working until 5pm today") }
        _ = try send(&store, publish(update))
        #expect(store.entries(of: bob).map(\.version) == [2, 2, 2])
        // The §4.2.1 request again (version 0): every publication conflicts.
        let (conflict, actions) = try send(&store, try example("4.2.1-publish-request.xml"))
        #expect(conflict.statusCode == 409)
        #expect(try conflict.headers.contentType?.mediaType == "application/msrtc-fault+xml")
        #expect(conflict.headers["ms-diagnostics"]?.hasPrefix("2044;") == true)
        #expect(changes(actions).isEmpty)
        let mine = try PublishFault(bytes: conflict.body)
        let seed = try PublishFault(bytes: try example("4.2.1-publish-409-conflict.xml"))
        #expect(mine.operations.map(\.index) == seed.operations.map(\.index))
        #expect(mine.operations.map(\.currentVersion) == seed.operations.map(\.currentVersion))
        #expect(mine.operations.map(\.data) == seed.operations.map(\.data))
        // The seed writes version="1" although its request sent 0 (examples/README.md); we return
        // the version the request carried, as §2.2.2.2.3 defines the attribute.
        #expect(mine.operations.map(\.version) == [0, 0, 0])
        #expect(store.entries(of: bob).map(\.version) == [2, 2, 2])
    }

    @Test func seedClearDeletesWithTheCurrentVersionAndAnswersEmptyCategories() throws {
        var store = CategoryPublicationStore()
        _ = try send(&store, try example("4.2.1-publish-request.xml"))
        let (ok, actions) = try send(&store, try example("4.2.2-publish-clear-request.xml"))
        #expect(ok.statusCode == 200)
        #expect(try roamingCategories(ok.body) == roamingCategories(try example("4.2.2-publish-clear-200ok.xml")))
        #expect(store.entries(of: bob).isEmpty)
        #expect(changes(actions).count == 3)
    }

    // MARK: - Versions

    @Test func updateWithTheCurrentVersionIncrementsItAndRestampsPublishTime() throws {
        var store = CategoryPublicationStore()
        _ = try send(&store, publish([try notePublication(container: 200, version: 0, text: "a")]))
        let (ok, _) = try send(&store, publish([try notePublication(container: 200, version: 1, text: "b")]),
                               clock: clock + 120)
        #expect(ok.statusCode == 200)
        let entry = try #require(store.entries(of: bob).first)
        #expect(entry.version == 2)
        #expect(entry.payload == (try note("b")))
        #expect(entry.publishTime == XSDTime.string(fromSeconds: clock + 120))
    }

    @Test func staleVersionIsA409WithTheCurrentVersionAndData() throws {
        var store = CategoryPublicationStore()
        _ = try send(&store, publish([try notePublication(container: 200, version: 0, text: "first")]))
        let (conflict, _) = try send(&store, publish([try notePublication(container: 200, version: 5, text: "x")]))
        #expect(conflict.statusCode == 409)
        let fault = try PublishFault(bytes: conflict.body)
        #expect(fault.operations.count == 1)
        #expect(fault.operations.first?.index == 1)
        #expect(fault.operations.first?.version == 5)
        #expect(fault.operations.first?.currentVersion == 1)
        // The current data, read back as it came: the note published first.
        guard case .other(let nodes)? = fault.operations.first?.data, case .element(let note)? = nodes.first else {
            Issue.record("the operation holds no element")
            return
        }
        #expect(try MSNote(xml: note).bodies.map(\.text) == ["first"])
    }

    @Test func updateOfAMissingInstanceWithANonzeroVersionConflictsWithCurrentVersionZero() throws {
        var store = CategoryPublicationStore()
        let (conflict, _) = try send(&store, publish([try notePublication(container: 200, version: 3)]))
        #expect(conflict.statusCode == 409)
        let fault = try PublishFault(bytes: conflict.body)
        #expect(fault.operations.first?.currentVersion == 0)
        #expect(fault.operations.first?.data == nil)
    }

    @Test func publishIsAllOrNothing() throws {
        var store = CategoryPublicationStore()
        _ = try send(&store, publish([try notePublication(container: 300, version: 0)]))
        // A good create in 200, a stale update in 300, another good create in 400.
        let (conflict, actions) = try send(&store, publish([
            try notePublication(container: 200, version: 0),
            try notePublication(container: 300, version: 7),
            try notePublication(container: 400, version: 0),
        ]))
        #expect(conflict.statusCode == 409)
        #expect(try PublishFault(bytes: conflict.body).operations.map(\.index) == [2])
        #expect(store.entries(of: bob).map(\.key.container) == [300])
        #expect(changes(actions).isEmpty)
    }

    @Test func deleteOfAMissingInstanceWithVersionZeroChangesNothing() throws {
        var store = CategoryPublicationStore()
        var delete = try notePublication(container: 200, version: 0, expires: 0)
        delete.payload = nil
        let (ok, actions) = try send(&store, publish([delete]))
        #expect(ok.statusCode == 200)
        #expect(changes(actions).isEmpty)
        #expect(try roamingCategories(ok.body).categories == [Category(name: .note, container: 200)])
    }

    @Test func instancesAndContainersAreSeparatePublications() throws {
        var store = CategoryPublicationStore()
        _ = try send(&store, publish([
            try notePublication(container: 200, version: 0, instance: 0),
            try notePublication(container: 200, version: 0, instance: 1),
            try notePublication(container: 300, version: 0, instance: 0),
        ]))
        #expect(store.entries(of: bob).count == 3)
        // The 200 OK of an update of instance 1 lists every instance of (200, note).
        let (ok, _) = try send(&store, publish([try notePublication(container: 200, version: 1, instance: 1)]))
        #expect(try roamingCategories(ok.body).categories.map(\.instance) == [0, 1])
        #expect(try roamingCategories(ok.body).categories.map(\.version) == [1, 2])
    }

    // MARK: - Expire types

    @Test func timePublicationExpiresByTimerAndStaleTimersAreIgnored() throws {
        var store = CategoryPublicationStore()
        let (_, actions) = try send(&store, publish([try notePublication(container: 200, version: 0, expireType: .time,
                                                                           expires: 600)]))
        let key = CategoryPublicationStore.Key(publisher: bob, container: 200, categoryName: .note, instance: 0)
        #expect(actions.contains(.scheduleExpiry(key, at: t0 + .seconds(600))))
        // Updated at t0+300 with a new expiry: the first timer is stale.
        _ = try send(&store, publish([try notePublication(container: 200, version: 1, expireType: .time, expires: 600)]),
                     now: t0 + .seconds(300))
        #expect(store.expire(key, now: t0 + .seconds(600)).isEmpty)
        #expect(store.entries(of: bob).count == 1)
        let expired = store.expire(key, now: t0 + .seconds(900))
        #expect(expired == [.changed([CategoryPublicationStore.Change(publisher: bob, container: 200, categoryName: .note)])])
        #expect(store.entries(of: bob).isEmpty)
    }

    @Test func endpointPublicationsGoWhenTheirEndpointEnds() throws {
        var store = CategoryPublicationStore()
        _ = try send(&store, publish([try notePublication(container: 200, version: 0, expireType: .endpoint)]), endpoint: "ep1")
        _ = try send(&store, publish([try notePublication(container: 300, version: 0, expireType: .endpoint)]), endpoint: "ep2")
        _ = try send(&store, publish([try notePublication(container: 400, version: 0, expireType: .static)]))
        #expect(store.entries(of: bob).map(\.endpointID) == ["ep1", "ep2", nil])
        let actions = store.endpointEnded(publisher: bob, endpointID: "ep1")
        #expect(changes(actions) == [CategoryPublicationStore.Change(publisher: bob, container: 200, categoryName: .note)])
        #expect(store.entries(of: bob).map(\.key.container) == [300, 400])
        #expect(store.endpointEnded(publisher: bob, endpointID: "ep1").isEmpty)
    }

    @Test func userPublicationsGoWhenTheUserHasNoEndpointLeftButStaticAndTimeStay() throws {
        var store = CategoryPublicationStore()
        _ = try send(&store, publish([
            try notePublication(container: 100, version: 0, expireType: .user),
            try notePublication(container: 200, version: 0, expireType: .endpoint),
            try notePublication(container: 300, version: 0, expireType: .static),
            try notePublication(container: 400, version: 0, expireType: .time, expires: 3600),
        ]))
        let actions = store.userEnded(publisher: bob)
        #expect(changes(actions).map(\.container) == [100, 200])
        #expect(store.entries(of: bob).map(\.key.container) == [300, 400])
    }

    @Test func endpointPublicationWithoutAnyEndpointIsRefused() throws {
        var store = CategoryPublicationStore()
        let (r, _) = try send(&store, publish([try notePublication(container: 200, version: 0, expireType: .endpoint)]),
                              endpoint: nil)
        #expect(r.statusCode == 400)
    }

    // MARK: - Refusals

    @Test func timeWithoutExpiresAndNonzeroExpiresOnStaticAreRefused() throws {
        var store = CategoryPublicationStore()
        let (noExpires, _) = try send(&store, publish([try notePublication(container: 200, version: 0, expireType: .time)]))
        #expect(noExpires.statusCode == 400)
        let (staticExpires, _) = try send(&store, publish([try notePublication(container: 200, version: 0, expires: 60)]))
        #expect(staticExpires.statusCode == 400)
        #expect(store.entries.isEmpty)
    }

    @Test func publisherMustMatchToAndFrom() throws {
        var store = CategoryPublicationStore()
        let body = try example("4.2.1-publish-request.xml")
        let actions = store.receive(serviceRequest(body: body, from: "<sip:mallory@contoso.com>;tag=x"),
                                    endpointID: "ep1", now: t0, utcSeconds: clock, toTag: "t")
        #expect(responses(actions).first?.statusCode == 403)
        #expect(store.entries.isEmpty)
    }

    @Test func otherContentTypesAre415WithAccept() throws {
        var store = CategoryPublicationStore()
        let actions = store.receive(serviceRequest(body: Array("<x/>".utf8), contentType: "application/xml"),
                                    endpointID: nil, now: t0, utcSeconds: clock, toTag: "t")
        let r = try #require(responses(actions).first)
        #expect(r.statusCode == 415)
        #expect(r.headers[.accept] == "application/msrtc-category-publish+xml")
    }

    @Test func unreadableBodyIs400() throws {
        var store = CategoryPublicationStore()
        let (r, _) = try send(&store, Array("<publish xmlns='http://schemas.microsoft.com/2006/09/sip/rich-presence'/>".utf8))
        #expect(r.statusCode == 400)
    }

    @Test func readOnlyContainerIsRefused() throws {
        var store = CategoryPublicationStore()
        let item = CategoryPublish.Publication(categoryName: .userProperties, instance: 0, container: 1, version: 0,
                                               expireType: .static, payload: .other([]))
        let (r, _) = try send(&store, publish([item]))
        #expect(r.statusCode == 403)
    }

    @Test func publisherLimitRefusesTheWholePublishWith503() throws {
        var store = CategoryPublicationStore(limits: .init(maxPublicationsPerPublisher: 2))
        _ = try send(&store, publish([try notePublication(container: 200, version: 0)]))
        let (r, _) = try send(&store, publish([
            try notePublication(container: 300, version: 0), try notePublication(container: 400, version: 0),
        ]))
        #expect(r.statusCode == 503)
        #expect(store.entries(of: bob).count == 1)
        // Updating what exists is still fine.
        let (ok, _) = try send(&store, publish([try notePublication(container: 200, version: 1)]))
        #expect(ok.statusCode == 200)
    }

    @Test func tooManyPublicationsInOneRequestIs413() throws {
        var store = CategoryPublicationStore(limits: .init(maxPublicationsPerRequest: 2))
        let (r, _) = try send(&store, publish(try [100, 200, 300].map { try notePublication(container: $0, version: 0) }))
        #expect(r.statusCode == 413)
    }
    @Test func changedListsOnlyTheCategoriesThatChanged() throws {
        var store = CategoryPublicationStore()
        _ = try send(&store, publish([try notePublication(container: 200, version: 0)]))
        var deleteMissing = try notePublication(container: 300, version: 0, expires: 0)
        deleteMissing.payload = nil
        let state = CategoryPublish.Publication(categoryName: .state, instance: 0, container: 2, version: 0,
                                                expireType: .user, payload: .other([]))
        let (ok, actions) = try send(&store, publish([
            try notePublication(container: 200, version: 1, text: "changed"), deleteMissing, state,
        ]))
        #expect(ok.statusCode == 200)
        #expect(changes(actions) == [
            CategoryPublicationStore.Change(publisher: bob, container: 2, categoryName: .state),
            CategoryPublicationStore.Change(publisher: bob, container: 200, categoryName: .note),
        ])
        // The 200 OK still lists the (300, note) the publish touched, empty.
        #expect(try roamingCategories(ok.body).categories.map(\.container) == [2, 200, 300])
    }

    @Test func publishTimeComesFromTheInjectedClock() throws {
        var store = CategoryPublicationStore()
        _ = try send(&store, publish([try notePublication(container: 200, version: 0)]), clock: 0)
        #expect(store.entries(of: bob).first?.publishTime == "1970-01-01T00:00:00Z")
    }
    @Test func totalLimitCountsEveryPublisherAndFreesOnRemoval() throws {
        var store = CategoryPublicationStore(limits: .init(maxPublications: 2))
        _ = try send(&store, publish([try notePublication(container: 200, version: 0, expireType: .user)]))
        let alice = CategoryPublish(uri: "sip:alice@contoso.com", publications: [
            try notePublication(container: 200, version: 0), try notePublication(container: 300, version: 0),
        ]).serialized()
        let refused = store.receive(serviceRequest(body: alice, from: "<sip:alice@contoso.com>;tag=a", to: "<sip:alice@contoso.com>"),
                                    endpointID: nil, now: t0, utcSeconds: clock, toTag: "t")
        #expect(responses(refused).first?.statusCode == 503)
        #expect(store.count == 1)
        _ = store.userEnded(publisher: bob)
        #expect(store.count == 0)
        let accepted = store.receive(serviceRequest(body: alice, from: "<sip:alice@contoso.com>;tag=a", to: "<sip:alice@contoso.com>"),
                                     endpointID: nil, now: t0, utcSeconds: clock, toTag: "t")
        #expect(responses(accepted).first?.statusCode == 200)
        #expect(store.count == 2)
    }
}
