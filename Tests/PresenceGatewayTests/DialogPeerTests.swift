import SIPTransport
import Testing

@testable import PresenceGateway

/// A dialog's peer is a value, whose fields the dialogs of one peer share: what each dialog's
/// state keeps of it is a reference, so 100,000 dialogs of one peer hold its fields once.
@Suite struct DialogPeerTests {
    static func peer(port: UInt16 = 5060) -> DialogPeer {
        DialogPeer(side: .oma, transport: .udp, host: "198.51.100.77", port: port, peer: 1)
    }

    @Test func equalPeersShareOneCopyOfTheirFieldsOnceShared() {
        let a = Self.peer().shared()
        let b = Self.peer().shared()
        #expect(a == b)
        #expect(a.storage === b.storage)
        #expect(Self.peer().storage !== a.storage)
        #expect(Self.peer() == a)
    }

    @Test func aChangedCopyLeavesTheOriginalAsItWas() {
        let a = Self.peer().shared()
        var b = a
        b.port = 5070
        b.certificateNames = ["oma.example"]
        #expect(a.port == 5060 && a.certificateNames.isEmpty)
        #expect(b.port == 5070 && b.certificateNames == ["oma.example"])
        #expect(a != b)
        #expect(b.shared() == b)
        #expect(Set([a, Self.peer(), b]).count == 2)
    }

    @Test func thePeersKeptForSharingAreBounded() {
        let first = Self.peer(port: 1).shared()
        for port in 2...100 { _ = Self.peer(port: UInt16(port)).shared() }
        let again = Self.peer(port: 1).shared()
        #expect(again == first)
        // Replaced by the 99 peers after it: only the last few are kept.
        #expect(again.storage !== first.storage)
    }
}
