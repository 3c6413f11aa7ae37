import _GatewayInternals

/// A core timer as the runtime files it: 8 bytes instead of the 24 of ``GatewayCore/Timer``.
///
/// Every bridged pair keeps two or three timers running (expiries, a refresh), each with a slot
/// in the runtime's table and an entry in its queue: at 100,000 pairs the wider key cost about
/// 170 bytes per pair. A timer whose context is a key number (every per-subscription timer) is
/// packed: its kind in the top 4 bits, the context's kind in the next 4, the key in the low 56.
/// The rare ones named by a string (a SERVICE publish, a held OMA publication) get a number from
/// ``TimerKeys`` while they run.
struct TimerKey: PackedTableKey {
    let bits: UInt64

    init(bits: UInt64) { self.bits = bits }
    init(tableBits: UInt64) { bits = tableBits }
    var tableBits: UInt64 { bits }

    private static let keyMask: UInt64 = (1 << 56) - 1
    /// The kind of the numbered (string-named) timers.
    fileprivate static let numberedKind: UInt64 = 15

    /// The packed key of `timer`; nil for a timer named by a string (or a key out of range).
    static func packed(_ timer: GatewayCore.Timer) -> TimerKey? {
        let kind: UInt64
        let context: GatewayCore.Context
        switch timer {
        case .expiry(let c): (kind, context) = (0, c)
        case .refresh(let c): (kind, context) = (1, c)
        case .firstAnswer(let c): (kind, context) = (2, c)
        case .cleanup(let c): (kind, context) = (3, c)
        case .retry(let c): (kind, context) = (4, c)
        case .rateControl(let c): (kind, context) = (5, c)
        case .publicationExpiry: return nil
        }
        let contextKind: UInt64
        let key: Int
        switch context {
        case .enterpriseWatch(let k): (contextKind, key) = (0, k)
        case .omaLeg(let k): (contextKind, key) = (1, k)
        case .omaWatch(let k): (contextKind, key) = (2, k)
        case .enterpriseLeg(let k): (contextKind, key) = (3, k)
        case .linkedPublication(let k): (contextKind, key) = (4, k)
        case .winfoWatch(let k): (contextKind, key) = (5, k)
        case .omaList(let k): (contextKind, key) = (6, k)
        case .serverWatch(let k): (contextKind, key) = (7, k)
        case .upnpContact(let k): (contextKind, key) = (8, k)
        case .upnpUser: (contextKind, key) = (9, 0)
        case .servicePublish: return nil
        }
        guard key >= 0, UInt64(key) <= keyMask else { return nil }
        return TimerKey(bits: kind << 60 | contextKind << 56 | UInt64(key))
    }

    var isNumbered: Bool { bits >> 60 == Self.numberedKind }

    /// The timer a packed key stands for; nil for a numbered key.
    var unpacked: GatewayCore.Timer? {
        let key = Int(bits & Self.keyMask)
        let context: GatewayCore.Context
        switch (bits >> 56) & 0xF {
        case 0: context = .enterpriseWatch(key)
        case 1: context = .omaLeg(key)
        case 2: context = .omaWatch(key)
        case 3: context = .enterpriseLeg(key)
        case 4: context = .linkedPublication(key)
        case 5: context = .winfoWatch(key)
        case 6: context = .omaList(key)
        case 7: context = .serverWatch(key)
        case 8: context = .upnpContact(key)
        case 9: context = .upnpUser
        default: return nil
        }
        switch bits >> 60 {
        case 0: return .expiry(context)
        case 1: return .refresh(context)
        case 2: return .firstAnswer(context)
        case 3: return .cleanup(context)
        case 4: return .retry(context)
        case 5: return .rateControl(context)
        default: return nil
        }
    }
}

/// The keys of the running timers: packed where the timer allows it, else a number held until
/// ``release(_:)``.
struct TimerKeys {
    private var numbers: [GatewayCore.Timer: TimerKey] = [:]
    private var named: [TimerKey: GatewayCore.Timer] = [:]
    private var next: UInt64 = 0

    /// The key of `timer`, numbering it if it has no packed form.
    mutating func key(for timer: GatewayCore.Timer) -> TimerKey {
        if let key = existingKey(for: timer) { return key }
        next += 1
        let key = TimerKey(bits: TimerKey.numberedKind << 60 | next)
        numbers[timer] = key
        named[key] = timer
        return key
    }

    /// The key of `timer` if it has one now (a packed timer always has).
    func existingKey(for timer: GatewayCore.Timer) -> TimerKey? {
        TimerKey.packed(timer) ?? numbers[timer]
    }

    func timer(for key: TimerKey) -> GatewayCore.Timer? {
        key.unpacked ?? named[key]
    }

    /// The timer stopped: a number it was given is forgotten.
    mutating func release(_ key: TimerKey) {
        guard key.isNumbered, let timer = named.removeValue(forKey: key) else { return }
        numbers[timer] = nil
    }
}
