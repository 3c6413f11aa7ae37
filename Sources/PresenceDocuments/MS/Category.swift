public import XMLBridge

/// `expireType` ([MS-PRES] §2.2.2.2.1).
public enum ExpireType: String, Hashable, Sendable, CaseIterable {
    case `static`, endpoint, user, time
}

/// One `category` element: the publication's key and metadata plus its data.
///
/// 96 bytes inline: a gateway keeps every category of every watched presentity for the life of
/// the subscription (memory per bridged pair). The attributes a notification rarely
/// carries (container, version, expires, endpointId, unknown ones) are held out of line, and
/// `publishTime` is packed (``PackedText``) instead of taking a heap string of its own.
public struct Category: Hashable, Sendable {
    public var name: CategoryName
    private var packedPublishTime: PackedText?
    public var instance: UInt32?
    public var expireType: ExpireType?
    private var extras: SharedFields<Extras>?
    /// `nil` for an empty category element: the category is not published, or
    /// the watcher resolves to no container ([MS-PRES] §3.2.5.3 rule 7).
    public var payload: CategoryPayload?

    struct Extras: RareFields {
        var container: UInt32?
        var version: UInt32?
        var expires: UInt32?
        var endpointID: String?
        var otherAttributes: [XMLAttribute] = []

        var isEmpty: Bool {
            container == nil && version == nil && expires == nil && endpointID == nil && otherAttributes.isEmpty
        }

        /// Unknown attributes compare in any order (an XML element's attributes have none).
        static func == (a: Extras, b: Extras) -> Bool {
            a.container == b.container && a.version == b.version && a.expires == b.expires
                && a.endpointID == b.endpointID
                && a.otherAttributes.count == b.otherAttributes.count
                && a.otherAttributes.allSatisfy { x in
                    b.otherAttributes.contains { $0.name == x.name && $0.value == x.value }
                }
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(container)
            hasher.combine(version)
        }
    }

    public init(
        name: CategoryName, instance: UInt32? = nil, container: UInt32? = nil, version: UInt32? = nil,
        publishTime: String? = nil, expireType: ExpireType? = nil, expires: UInt32? = nil,
        endpointID: String? = nil, otherAttributes: [XMLAttribute] = [], payload: CategoryPayload? = nil
    ) {
        self.init(
            name: name, instance: instance, container: container, version: version,
            packedPublishTime: publishTime.map(PackedText.init), expireType: expireType, expires: expires,
            endpointID: endpointID, otherAttributes: otherAttributes, payload: payload)
    }

    /// The same with `publishTime` already packed (the decoder packs it from the value bytes).
    init(
        name: CategoryName, instance: UInt32?, container: UInt32?, version: UInt32?, packedPublishTime: PackedText?,
        expireType: ExpireType?, expires: UInt32?, endpointID: String?, otherAttributes: [XMLAttribute],
        payload: CategoryPayload?
    ) {
        self.name = name
        self.instance = instance
        self.expireType = expireType
        self.packedPublishTime = packedPublishTime
        self.payload = payload
        let extras = Extras(
            container: container, version: version, expires: expires, endpointID: endpointID,
            otherAttributes: otherAttributes)
        self.extras = Optional(keeping: extras)
    }

    /// As written; [MS-PRES] examples use `2008-01-11T18:11:33.577` (no zone, see docs/flows.md,
    /// "Publish times without zone").
    public var publishTime: String? {
        get { packedPublishTime?.string }
        set { packedPublishTime = newValue.map(PackedText.init) }
    }

    public var container: UInt32? {
        get { extras?.value.container }
        set { extras.update(emptying: newValue == nil) { $0.container = newValue } }
    }
    public var version: UInt32? {
        get { extras?.value.version }
        set { extras.update(emptying: newValue == nil) { $0.version = newValue } }
    }
    public var expires: UInt32? {
        get { extras?.value.expires }
        set { extras.update(emptying: newValue == nil) { $0.expires = newValue } }
    }
    public var endpointID: String? {
        get { extras?.value.endpointID }
        set { extras.update(emptying: newValue == nil) { $0.endpointID = newValue } }
    }
    /// Attributes not modelled above, kept and written back.
    public var otherAttributes: [XMLAttribute] {
        get { extras?.value.otherAttributes ?? [] }
        set { extras.update(emptying: newValue.isEmpty) { $0.otherAttributes = newValue } }
    }

    public static func == (a: Category, b: Category) -> Bool {
        a.name == b.name && a.instance == b.instance && a.expireType == b.expireType
            && a.packedPublishTime == b.packedPublishTime && a.payload == b.payload && a.extras == b.extras
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(instance)
        hasher.combine(payload)
    }
}
