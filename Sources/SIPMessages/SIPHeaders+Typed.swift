/// Typed, lazily parsed views of well-known headers. Each accessor parses the raw field bytes on
/// demand and throws a ``SIPParseError`` whose offset points into the message.
extension SIPHeaders {
    private func firstField(_ name: SIPHeaderName) -> SIPHeaderField? { fields.first { $0.name == name } }

    private func listValues<T>(
        _ name: SIPHeaderName, code: SIPParseError.Code,
        _ parse: (inout SIPScanner) throws(SIPParseError) -> [T]
    ) throws(SIPParseError) -> [T] {
        var out: [T] = []
        for f in fields where f.name == name {
            var s = SIPScanner(f.valueBytes, header: name.displayName, code: code)
            out.append(contentsOf: try parse(&s))
        }
        return out
    }

    private func number(_ name: SIPHeaderName, max: UInt64) throws(SIPParseError) -> UInt64? {
        guard let f = firstField(name) else { return nil }
        return try SIPByte.parseNumber(
            SIPByte.trimmed(f.valueBytes), max: max, what: name.displayName, header: name.displayName)
    }

    /// Option tags: `option-tag *(COMMA option-tag)` (RFC 3261 §20.37, §20.32, §20.29).
    private func optionTags(_ name: SIPHeaderName) throws(SIPParseError) -> [String] {
        try listValues(name, code: .invalidHeaderValue) { (s: inout SIPScanner) throws(SIPParseError) -> [String] in
            var out: [String] = []
            s.skipLWS()
            if s.isAtEnd { return out }
            repeat {
                out.append(SIPByte.string(try s.token("option-tag (token)")))
            } while s.consumeSeparator(0x2C)
            try s.expectEnd("',' or end of the option-tag list")
            return out
        }
    }

    /// All Via values, top first, across fields and comma lists (RFC 3261 §20.42).
    public var via: [SIPVia] {
        get throws(SIPParseError) {
            try listValues(.via, code: .invalidVia) { (s: inout SIPScanner) throws(SIPParseError) -> [SIPVia] in
                var out: [SIPVia] = []
                try SIPVia.parseList(&s, into: &out)
                return out
            }
        }
    }

    private func address(_ name: SIPHeaderName) throws(SIPParseError) -> SIPAddress? {
        guard let f = firstField(name) else { return nil }
        var s = SIPScanner(f.valueBytes, header: name.displayName, code: .invalidAddress)
        let a = try SIPAddress.parse(&s)
        try s.expectEnd("';' parameter or end of \(name.displayName)")
        return a
    }

    /// From (RFC 3261 §20.20).
    public var from: SIPAddress? { get throws(SIPParseError) { try address(.from) } }
    /// To (RFC 3261 §20.39).
    public var to: SIPAddress? { get throws(SIPParseError) { try address(.to) } }

    /// Call-ID, trimmed (RFC 3261 §20.8: `callid = word [ "@" word ]`).
    public var callID: String? {
        guard let f = firstField(.callID) else { return nil }
        return SIPByte.string(SIPByte.trimmed(f.valueBytes))
    }

    /// CSeq (RFC 3261 §20.16).
    public var cseq: SIPCSeq? {
        get throws(SIPParseError) {
            guard let f = firstField(.cseq) else { return nil }
            return try SIPCSeq.parse(f.valueBytes, header: "CSeq")
        }
    }

    /// Max-Forwards, 0...255 (RFC 3261 §20.22; RFC 4475 §3.1.2.4: 300 is out of range).
    public var maxForwards: Int? { get throws(SIPParseError) { try number(.maxForwards, max: 255).map(Int.init) } }

    /// Contact values (RFC 3261 §20.10), `*` included.
    public var contact: [SIPContact] {
        get throws(SIPParseError) { try listValues(.contact, code: .invalidAddress, SIPContact.parseList) }
    }
    /// Route values in order (RFC 3261 §20.34).
    public var route: [SIPAddress] {
        get throws(SIPParseError) { try listValues(.route, code: .invalidAddress, SIPAddress.parseList) }
    }
    /// Record-Route values in order (RFC 3261 §20.30).
    public var recordRoute: [SIPAddress] {
        get throws(SIPParseError) { try listValues(.recordRoute, code: .invalidAddress, SIPAddress.parseList) }
    }

    /// Expires in seconds (RFC 3261 §20.19: delta-seconds, 32-bit).
    public var expires: UInt32? {
        get throws(SIPParseError) { try number(.expires, max: UInt64(UInt32.max)).map(UInt32.init) }
    }
    /// Min-Expires in seconds (RFC 3261 §20.23).
    public var minExpires: UInt32? {
        get throws(SIPParseError) { try number(.minExpires, max: UInt64(UInt32.max)).map(UInt32.init) }
    }
    /// Content-Length (RFC 3261 §20.14).
    public var contentLength: Int? {
        get throws(SIPParseError) { try number(.contentLength, max: UInt64(Int32.max)).map(Int.init) }
    }
    /// Microsoft's ms-piggyback-cseq ([MS-SIP]): the CSeq number the piggybacked NOTIFY would have had.
    public var msPiggybackCSeq: UInt32? {
        get throws(SIPParseError) { try number(.msPiggybackCSeq, max: UInt64(UInt32.max)).map(UInt32.init) }
    }

    /// Event (RFC 6665 §8.2.1).
    public var event: SIPEvent? {
        get throws(SIPParseError) {
            guard let f = firstField(.event) else { return nil }
            return try SIPEvent.parse(f.valueBytes, header: "Event")
        }
    }
    /// Allow-Events, all values in order (RFC 6665 §8.2.2).
    public var allowEvents: [String] {
        get throws(SIPParseError) { try listValues(.allowEvents, code: .invalidHeaderValue, SIPEvent.parseAllowEvents) }
    }
    /// Subscription-State (RFC 6665 §8.2.3).
    public var subscriptionState: SIPSubscriptionState? {
        get throws(SIPParseError) {
            guard let f = firstField(.subscriptionState) else { return nil }
            return try SIPSubscriptionState.parse(f.valueBytes, header: "Subscription-State")
        }
    }

    /// Accept values in header order; nil when there is no Accept header, empty when it is empty
    /// (RFC 3261 §20.1: an empty Accept means no body is acceptable).
    public var accept: [SIPMediaRange]? {
        get throws(SIPParseError) {
            guard contains(.accept) else { return nil }
            return try listValues(.accept, code: .invalidHeaderValue, SIPMediaRange.parseList)
        }
    }
    /// Accept values sorted by q-value, highest first; equal q-values keep header order.
    public var acceptByPreference: [SIPMediaRange]? {
        get throws(SIPParseError) {
            guard let all = try accept else { return nil }
            return all.enumerated().sorted { a, b in
                a.element.q != b.element.q ? a.element.q > b.element.q : a.offset < b.offset
            }.map(\.element)
        }
    }

    /// Content-Type (RFC 3261 §20.15).
    public var contentType: SIPContentType? {
        get throws(SIPParseError) {
            guard let f = firstField(.contentType) else { return nil }
            return try SIPContentType.parse(f.valueBytes, header: "Content-Type")
        }
    }

    /// Supported option tags (RFC 3261 §20.37).
    public var supported: [String] { get throws(SIPParseError) { try optionTags(.supported) } }
    /// Require option tags (RFC 3261 §20.32).
    public var require: [String] { get throws(SIPParseError) { try optionTags(.require) } }
    /// Proxy-Require option tags (RFC 3261 §20.29).
    public var proxyRequire: [String] { get throws(SIPParseError) { try optionTags(.proxyRequire) } }

    private func singleToken(_ name: SIPHeaderName, _ what: String) throws(SIPParseError) -> String? {
        guard let f = firstField(name) else { return nil }
        var s = SIPScanner(f.valueBytes, header: name.displayName, code: .invalidHeaderValue)
        s.skipLWS()
        let t = try s.token(what)
        try s.expectEnd("end of \(name.displayName) after the \(what)")
        return SIPByte.string(t)
    }

    /// SIP-ETag (RFC 3903 §11.3.1: `entity-tag = token`).
    public var sipETag: String? { get throws(SIPParseError) { try singleToken(.sipETag, "entity-tag (token)") } }
    /// SIP-If-Match (RFC 3903 §11.3.2).
    public var sipIfMatch: String? { get throws(SIPParseError) { try singleToken(.sipIfMatch, "entity-tag (token)") } }
    /// Microsoft's ms-source-network ([MS-SIPRE] 3.10.1.4), e.g. `federation`, `publiccloud`.
    public var msSourceNetwork: String? {
        get throws(SIPParseError) { try singleToken(.msSourceNetwork, "network type (token)") }
    }

    /// Retry-After (RFC 3261 §20.33).
    public var retryAfter: SIPRetryAfter? {
        get throws(SIPParseError) {
            guard let f = firstField(.retryAfter) else { return nil }
            return try SIPRetryAfter.parse(f.valueBytes, header: "Retry-After", limits: .default)
        }
    }

    /// Microsoft's ms-edge-proxy-message-trust ([MS-SIPRE]).
    public var msEdgeProxyMessageTrust: SIPEdgeProxyMessageTrust? {
        get throws(SIPParseError) {
            guard let f = firstField(.msEdgeProxyMessageTrust) else { return nil }
            return try SIPEdgeProxyMessageTrust.parse(f.valueBytes, header: "ms-edge-proxy-message-trust")
        }
    }
}
