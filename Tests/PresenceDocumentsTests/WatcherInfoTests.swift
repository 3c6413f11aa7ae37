import Foundation
import PresenceDocuments
import Testing
import XMLBridge

/// The watcher information document (RFC 3858): the RFC's own example read, written documents
/// valid against the RFC's schema, and bad documents refused with their line and column.
@Suite struct WatcherInfoTests {
    static let schema = "../shared/spec/ietf-schemas/watcherinfo.xsd"

    @Test func rfc3858ExampleReadsAsWritten() throws {
        let info = try WatcherInfo(bytes: PIDFFixture.bytes(PIDFFixture.ietfExamples + "rfc3858-watcherinfo.xml"))
        #expect(info.version == 0)
        #expect(info.state == .full)
        let list = try #require(info.lists.first)
        #expect(list.resource == "sip:professor@example.net")
        #expect(list.package == "presence")
        #expect(
            list.watchers == [
                WatcherInfo.Watcher(
                    id: "8ajksjda7s", uri: "sip:userA@example.net", status: .active, event: .approved,
                    durationSubscribed: 509),
                WatcherInfo.Watcher(
                    id: "hh8juja87s997-ass7", uri: "sip:userB@example.org", status: .pending, event: .subscribe,
                    displayName: "Mr. Subscriber"),
            ])
    }

    @Test func writtenDocumentsAreValidAndReadBack() throws {
        let schema = try XMLSchema(path: PIDFFixture.path(Self.schema))
        let documents = [
            WatcherInfo(version: 0, state: .full, lists: [WatcherInfo.WatcherList(resource: "sip:a@b", package: "presence")]),
            WatcherInfo(
                version: 18_446_744_073_709_551_615, state: .partial,
                lists: [
                    WatcherInfo.WatcherList(
                        resource: "sip:bob@oma.example", package: "presence",
                        watchers: WatcherInfo.Event.allCases.enumerated().map { index, event in
                            WatcherInfo.Watcher(
                                id: "e\(index)", uri: "sip:w\(index)@contoso.com",
                                status: WatcherInfo.Status.allCases[index % 4], event: event,
                                displayName: index == 0 ? "A & <B>" : nil, expiration: index == 1 ? 3600 : nil)
                        })
                ]),
        ]
        for document in documents {
            let bytes = document.serialized()
            #expect(try schema.validate(bytes) == [])
            #expect(try WatcherInfo(bytes: bytes) == document)
        }
    }

    @Test(arguments: [
        (#"<watcherinfo xmlns="urn:ietf:params:xml:ns:watcherinfo" version="0"/>"#, "state"),
        (#"<watcherinfo xmlns="urn:ietf:params:xml:ns:watcherinfo" state="full"/>"#, "version"),
        (#"<watcherinfo xmlns="urn:ietf:params:xml:ns:watcherinfo" version="-1" state="full"/>"#, "version"),
        (
            #"<watcherinfo xmlns="urn:ietf:params:xml:ns:watcherinfo" version="1" state="full">"#
                + "\n" + #"<watcher-list resource="sip:a@b"/></watcherinfo>"#, "package"
        ),
        (
            #"<watcherinfo xmlns="urn:ietf:params:xml:ns:watcherinfo" version="1" state="partial">"#
                + "\n" + #"<watcher-list resource="sip:a@b" package="presence">"#
                + "\n" + #"<watcher id="1" status="gone" event="subscribe">sip:c@d</watcher>"#
                + "</watcher-list></watcherinfo>", "status"
        ),
        (
            #"<watcherinfo xmlns="urn:ietf:params:xml:ns:watcherinfo" version="1" state="partial">"#
                + #"<watcher-list resource="sip:a@b" package="presence">"#
                + #"<watcher id="1" status="active" event="bored">sip:c@d</watcher>"#
                + "</watcher-list></watcherinfo>", "event"
        ),
        (#"<list xmlns="urn:ietf:params:xml:ns:rlmi"/>"#, "watcherinfo"),
    ])
    func badDocumentsAreLocatedErrors(_ xml: String, _ mentioned: String) throws {
        let error = try #require(throws: XMLError.self) { try WatcherInfo(bytes: Array(xml.utf8)) }
        #expect(error.line >= 1)
        #expect(error.column >= 1)
        #expect(error.message.contains(mentioned))
    }
}
