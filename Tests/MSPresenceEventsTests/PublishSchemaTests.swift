import Foundation
import NIOCore
import PresenceDocuments
import MSPresenceEvents
import SIPMessages
import Testing
import XMLBridge

/// What the store and the publisher write must validate against the [MS-PRES] schemas:
/// roamingData (§6.7) for the 200 OK, publish (§6.10) for the SERVICE body.
@Suite struct PublishSchemaTests {
    static let harness: XMLSchema? = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return try? XMLSchema(path: root.appendingPathComponent("Schemas/ms-pres/harness/all.xsd").path)
    }()

    @Test func storeOkBodiesAreSchemaValid() throws {
        let schema = try #require(Self.harness)
        var store = CategoryPublicationStore()
        let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)
        for file in ["4.2.1-publish-request.xml", "4.2.2-publish-clear-request.xml"] {
            let actions = store.receive(serviceRequest(body: try example(file)), endpointID: "ep1", now: t0,
                                        utcSeconds: 1_200_072_553, toTag: "srv")
            guard case .respond(let ok)? = actions.first else { Issue.record("no response"); continue }
            #expect(ok.statusCode == 200)
            let violations = try schema.validate(ok.body)
            #expect(violations.isEmpty, "\(file): \(violations)")
        }
    }

    @Test func publisherServiceBodyIsSchemaValid() throws {
        let schema = try #require(Self.harness)
        var client = CategoryPublisher(.init(publisher: try SIPAddress("<sip:bob@contoso.com>")), callID: "c", localTag: "t")
        let key = CategoryPublisher.ItemKey(container: 200, categoryName: .note, instance: 0)
        let actions = client.publish([
            .publish(key, try note("Working until 5pm today")),
            .publish(.init(container: 300, categoryName: .note, instance: 0), try note("Later"), expireType: .time, expires: 3600),
            .delete(.init(container: 400, categoryName: .note, instance: 0)),
        ])
        guard case .send(let request)? = actions.first else { Issue.record("nothing sent"); return }
        let violations = try schema.validate(request.body)
        #expect(violations.isEmpty, "\(violations)")
    }
    @Test func harnessRejectsAPublicationWithoutCategoryName() throws {
        // Negative control: the schema is really applied.
        let schema = try #require(Self.harness)
        let bad = """
            <publish xmlns="http://schemas.microsoft.com/2006/09/sip/rich-presence"><publications uri="sip:bob@contoso.com">
            <publication instance="0" container="200" version="0" expireType="static"/></publications></publish>
            """
        #expect(!(try schema.validate(Array(bad.utf8))).isEmpty)
    }
}
