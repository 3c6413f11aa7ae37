/// An address as its wire text (RFC 3261 §20.10, §25.1 `name-addr`/`addr-spec`), as records of
/// state keep it.
extension SIPAddress: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { self = try SIPAddress(text) } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "address \(text) does not parse: \(error)"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
