/// What a watcher was last sent, kept as a 64-bit FNV-1a digest of the body instead of the body
/// (hundreds of bytes per watcher): the gateway notifies only when the digest changes. Two
/// different bodies share a digest with probability 2⁻⁶⁴; then one notification would be missed.
struct BodyDigest: Hashable, Sendable {
    let value: UInt64

    init(_ bytes: [UInt8]) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        value = hash
    }
}
