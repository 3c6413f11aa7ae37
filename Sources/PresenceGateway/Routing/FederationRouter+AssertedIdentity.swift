public import SIPMessages

extension FederationRouter {
    /// The identity a request is decided on: from a `trusted` peer (a member of the gateway's
    /// trust domain, RFC 3325 §2.3), the first SIP or SIPS URI of its `P-Asserted-Identity`
    /// when it carries one, which that peer vouches for (RFC 3325 §9.1); else the From URI. From
    /// any other peer the header was already removed (``removeUntrustedIdentity(from:side:trusted:)``)
    /// and is never read.
    static func identity(of request: SIPRequest, trusted: Bool) -> SIPURI? {
        let from = (try? request.headers.from)?.uri
        guard trusted else { return from }
        return assertedIdentity(in: request) ?? from
    }

    /// The first SIP or SIPS URI of `P-Asserted-Identity` (RFC 3325 §9.1; a tel URI may stand
    /// beside it, and is not an identity the gateway decides on):
    ///
    /// ```
    /// PAssertedID       = "P-Asserted-Identity" HCOLON PAssertedID-value *(COMMA PAssertedID-value)
    /// PAssertedID-value = name-addr / addr-spec
    /// ```
    ///
    /// At most two values are read (the RFC allows one of each scheme); a value that does not
    /// parse makes the header count as absent.
    static func assertedIdentity(in request: SIPRequest) -> SIPURI? {
        var values: [Substring] = []
        for field in request.headers.fields where field.name == "P-Asserted-Identity" {
            values += topLevelValues(field.value)
            if values.count > 2 { return nil }
        }
        for value in values {
            guard let address = try? SIPAddress(String(value)) else { return nil }
            if address.uri.isSIP { return address.uri }
        }
        return nil
    }

    /// `text` cut at the commas outside quotes and angle brackets.
    static func topLevelValues(_ text: String) -> [Substring] {
        var values: [Substring] = []
        var start = text.startIndex
        var quoted = false
        var angle = false
        var index = text.startIndex
        while index < text.endIndex {
            switch text[index] {
            case "\"" where !angle: quoted.toggle()
            case "<" where !quoted: angle = true
            case ">" where !quoted: angle = false
            case "," where !quoted && !angle:
                values.append(text[start..<index])
                start = text.index(after: index)
            default: break
            }
            index = text.index(after: index)
        }
        values.append(text[start...])
        return values.map { $0.drop { $0 == " " || $0 == "\t" } }.filter { !$0.isEmpty }
    }
}
