import Foundation
import GatewayState
import NIOCore
import SIPStack
import Testing

@testable import PresenceGateway

/// An entry's stored properties are its one description for the durable store (docs/architecture.md,
/// "Persistence"): its record and what decides whether a change is written. A new durable field
/// of a component is one more stored property: writing it, reading it back (and reading the
/// records written before it) and the quiet mode of a relayed NOTIFY cover it with no edit
/// elsewhere. These two entries are one component's entry before and after such a field.
@Suite struct DurableEntryTests {
    /// An entry as a component declares one: a dialog, a field the store keeps, one it does not.
    struct Before: StoredEntry, Codable, Journaled {
        static var recordKind: GatewayCore.RecordKind { .winfoWatch }
        var storedDialog: StoredDialog { StoredDialog(subscription.dialog.id, expiresAt: subscription.expiresAt) }

        var presentity: String
        @DialogState var subscription: NotifierSubscription
        /// What it last sent: not kept.
        @Transient var lastSent: BodyDigest? = nil
    }

    /// The same with a new durable field, and nothing else written for it.
    struct After: StoredEntry, Codable, Journaled {
        static var recordKind: GatewayCore.RecordKind { .winfoWatch }
        var storedDialog: StoredDialog { StoredDialog(subscription.dialog.id, expiresAt: subscription.expiresAt) }

        var presentity: String
        @DialogState var subscription: NotifierSubscription
        @Transient var lastSent: BodyDigest? = nil
        /// The new field: absent in records written before it.
        var priority: Int?
    }

    /// A watcher's answered dialog, as the notifier holds one.
    static func subscription() throws -> (NotifierSubscription, GatewayCoreTests.Harness) {
        var h = try GatewayCoreTests.Harness()
        let (_, actions) = h.receive(try GatewayCoreTests.omaSubscribe(), from: .oma)
        let (subscribe, context) = try #require(GatewayCoreTests.sent(actions, to: .enterprise).first)
        _ = h.core.receive(
            GatewayCoreTests.enterpriseOK(
                subscribe, GatewayCoreTests.categories(availability: 3500, uri: "sip:bob@contoso.com")),
            to: subscribe, context: context, now: h.now)
        return (try #require(h.core.notifier[1]?.subscription), h)
    }

    static func read<E: StoredEntry>(_ type: E.Type, _ record: StateRecord, _ coding: RecordCoding) throws -> E {
        do { return try E.read(record, decoder: coding.decoder(), coding: coding) } catch {
            Issue.record("\(error.text)")
            throw error
        }
    }

    @Test func aNewDurableFieldIsWrittenAndReadBackAndOlderRecordsStillRead() throws {
        let (subscription, h) = try Self.subscription()
        let coding = h.core.recordCoding(clock: StateRestoreTests.clock)
        let entry = After(presentity: "sip:bob@contoso.com", subscription: subscription, priority: 3)
        let record = entry.stateRecord(key: "1", coding: coding, encoder: coding.encoder())
        #expect(record.callID == subscription.dialog.id.callID && record.localTag == subscription.dialog.id.localTag)

        let back = try Self.read(After.self, record, coding)
        #expect(back.priority == 3)
        #expect(back.presentity == entry.presentity)
        #expect(back.subscription.dialog.withoutSequences == subscription.dialog.withoutSequences)
        // A dialog this side notifies in goes on two blocks above the CSeq written.
        #expect(
            back.subscription.dialog.localSequence
                == (subscription.dialog.localSequence ?? 0) + 2 * GatewayCore.sequenceBlock)

        // A record written before the field reads with the field absent.
        let older = Before(presentity: "sip:bob@contoso.com", subscription: subscription)
        let olderRecord = older.stateRecord(key: "1", coding: coding, encoder: coding.encoder())
        #expect(!String(decoding: olderRecord.body, as: UTF8.self).contains("priority"))
        #expect(try Self.read(After.self, olderRecord, coding).priority == nil)
        // What the store does not keep is not written.
        var sent = entry
        sent.lastSent = BodyDigest(Array("<presence/>".utf8))
        let sentRecord = sent.stateRecord(key: "1", coding: coding, encoder: coding.encoder())
        let json = { (r: StateRecord) in try JSONSerialization.jsonObject(with: Data(r.body)) as? [AnyHashable: Any] }
        #expect(
            NSDictionary(dictionary: try #require(try json(sentRecord))).isEqual(to: try #require(try json(record))))
        #expect(String(decoding: sentRecord.body, as: UTF8.self).contains("presentity"))
    }

    @Test func aRelayedNotifyWritesNothingButAChangeOfTheNewFieldIsWritten() throws {
        let (subscription, h) = try Self.subscription()
        var table = JournaledTable<After>()
        table.journaling = true
        table.restore(1, After(presentity: "sip:bob@contoso.com", subscription: subscription))

        // The hot path: a NOTIFY sent in the dialog (its CSeq within the block) and what it sent.
        table.beginQuiet()
        table.modify(1) {
            _ = $0.subscription.stateChanged(body: Array("<presence/>".utf8), now: h.now)
            $0.lastSent = BodyDigest(Array("<presence/>".utf8))
        }
        table.endQuiet()
        #expect(table.takeChanged().isEmpty)

        // The new durable field changed in the same quiet step: written.
        table.beginQuiet()
        table.modify(1) { $0.priority = 5 }
        table.endQuiet()
        #expect(table.takeChanged() == [1])

        // The dialog's CSeq entering the next block: written.
        table.beginQuiet()
        table.modify(1) {
            for _ in 0..<GatewayCore.sequenceBlock {
                _ = $0.subscription.stateChanged(body: Array("<presence/>".utf8), now: h.now)
            }
        }
        table.endQuiet()
        #expect(table.takeChanged() == [1])
    }
}
