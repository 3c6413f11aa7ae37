/// A random (version 4) UUID in lower case (RFC 9562 §5.4; UDA 1.1 §1.1.4 for UDNs and SIDs).
public func makeUUID() -> String {
    var bytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
    bytes[6] = (bytes[6] & 0x0F) | 0x40
    bytes[8] = (bytes[8] & 0x3F) | 0x80
    let hex = bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
    return [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-")
}
