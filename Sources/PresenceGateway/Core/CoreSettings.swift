import MSPresenceEvents
import PresenceDocuments
public import PresenceMapping
public import SIPMessages
import SIPStack
public import SIPTransport

/// What the core is set up with and reads on every step: the configuration and mapper (replaced
/// by ``GatewayCore/reconfigure(_:mapper:now:)``), the Contacts it puts in each side's dialogs,
/// and the event packages it serves. The coordinator holds it; components are given what they
/// need of it with each call.
struct CoreSettings: Sendable {
    var configuration: GatewayConfiguration
    var mapper: PresenceMapper
    /// Contacts the gateway puts in each side's dialogs.
    let contacts: [GatewayConfiguration.Side: SIPAddress]
    /// Per side, a Contact for each transport it listens on, when it listens on more than one:
    /// a watcher's dialog gets the one of the transport its SUBSCRIBE came over
    /// (``GatewayCore/contact(_:for:fallback:)``), so that its in-dialog requests come back over
    /// that transport, which the dialog is held to (``DialogPeer``).
    var transportContacts: [GatewayConfiguration.Side: [SIPTransportKind: SIPAddress]] = [:]
    /// The presence and watcher information packages (RFC 6665 §4.2.1.1 terms).
    let registry: SIPEventPackageRegistry
    /// The shard this core is, and how many run (docs/shards.md).
    var shard = 0
    var shardCount = 1
}

extension CoreSettings {
    /// The Contact of the gateway's notifier dialog with `peer` on `side`: the one of the
    /// transport the peer came over, else the side's (nil: `fallback`).
    func contact(_ side: GatewayConfiguration.Side, for peer: DialogPeer?, fallback: SIPURI) -> SIPAddress {
        peer.flatMap { transportContacts[side]?[$0.transport] } ?? contacts[side] ?? SIPAddress(uri: fallback)
    }

    /// The body a watcher gets for the enterprise state `categories` in its negotiated format:
    /// PIDF (RFC 3863, with RPID as configured), msrtc.pidf or categories ([MS-PRES] §4.11, §2.2.2).
    func render(_ categories: CategoriesDocument, as type: String) -> [UInt8] {
        switch type {
        case SIPBodyType.msrtcPIDF: mapper.msrtc(from: categories).0.serialized()
        case SIPBodyType.msrtcCategories: categories.serialized()
        default:
            mapper.pidfDocument(from: categories, dialect: .rfc, rpidExtensions: configuration.oma.rpidExtensions)
                .serialized()
        }
    }
}

extension GatewayCore {
    /// Replaced while running by ``reconfigure(_:mapper:now:)``.
    public internal(set) var configuration: GatewayConfiguration {
        get { settings.configuration }
        set { settings.configuration = newValue }
    }

    public internal(set) var mapper: PresenceMapper {
        get { settings.mapper }
        set { settings.mapper = newValue }
    }

    /// Contacts the gateway puts in each side's dialogs.
    public var contacts: [GatewayConfiguration.Side: SIPAddress] { settings.contacts }

    /// See ``CoreSettings/transportContacts``.
    public var transportContacts: [GatewayConfiguration.Side: [SIPTransportKind: SIPAddress]] {
        get { settings.transportContacts }
        set { settings.transportContacts = newValue }
    }

    var registry: SIPEventPackageRegistry { settings.registry }

    /// Makes this core shard `shard` of `count` (docs/shards.md).
    public mutating func place(onShard shard: Int, of count: Int) {
        settings.shard = shard
        settings.shardCount = count
    }

    /// Holds the configured peers to their `max-subscriptions` on every shard together: this
    /// shard's counts go to `board` (docs/shards.md, "What is shared"). After
    /// ``place(onShard:of:)``.
    public mutating func share(_ board: PeerBoard) {
        quotas.share(board, shard: settings.shard)
    }

    /// Whether this core starts what the gateway runs once, without a request: the linked
    /// identities' subscriptions and publications, the watcher mirror and the `xcap-diff`
    /// subscriptions. Of several shards, the first one's alone.
    public var runsNodeWideWork: Bool { settings.shard == 0 }

    /// Where this core's keys start: 0 alone, a node's ordinal × 2⁴⁰ when several nodes share a
    /// store (``IdentifierSource/keyBase``).
    public var keyBase: Int {
        get { ids.keyBase }
        set { ids.keyBase = newValue }
    }
}
