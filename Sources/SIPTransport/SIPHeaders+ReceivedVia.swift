public import SIPMessages

extension SIPHeaders {
    /// Applies RFC 3261 §18.2.1 and RFC 3581 §4 to the top Via of a received request.
    ///
    /// RFC 3261 §18.2.1: "When the server transport receives a request over any transport, it
    /// MUST examine the value of the "sent-by" parameter in the top Via header field value. If
    /// the host portion of the "sent-by" parameter contains a domain name, or if it contains an
    /// IP address that differs from the packet source address, the server MUST add a "received"
    /// parameter to that Via header field value."
    ///
    /// RFC 3581 §4: "If this parameter [rport] is present with no value, the server MUST set its
    /// value to the source port of the request. [...] when the rport parameter is present, the
    /// server MUST insert a received parameter containing the source IP address that the
    /// request came from, even if it is identical to the value of the sent-by component."
    ///
    /// Only the field holding the top Via is rewritten (its other values keep their text); every
    /// other field stays byte for byte. Returns whether anything changed. Throws when the top Via
    /// does not parse.
    @discardableResult
    public mutating func stampTopVia(source: SIPTarget) throws(SIPParseError) -> Bool {
        guard let index = fields.firstIndex(where: { $0.name == .via }) else {
            throw SIPParseError(.missingHeader, expected: "a Via header (RFC 3261 §8.1.1.7)", header: "Via")
        }
        var vias = try SIPHeaders([fields[index]]).via
        guard var top = vias.first else {
            throw SIPParseError(.invalidVia, expected: "a Via value", header: "Via")
        }
        let sourceHost = SIPHostAddress.unbracketed(source.host)
        var changed = false
        if top.rport == .requested {
            top.parameters.set("rport", String(source.port))
            top.parameters.set("received", sourceHost)
            changed = true
        } else if !SIPHostAddress.same(top.host, sourceHost) {
            top.parameters.set("received", sourceHost)
            changed = true
        }
        guard changed else { return false }
        vias[0] = top
        fields[index].value = vias.map(\.description).joined(separator: ", ")
        return true
    }
}
