extension DNSMessage {
    /// The message in RFC 1035 §4.1 wire form. Names are written uncompressed (compression is
    /// optional for senders, §4.1.4). Fails with `dns-bad-rdata` when a character-string is longer
    /// than 255 octets or RDATA longer than 65 535, and `dns-limit-exceeded` for more than 65 535
    /// entries in a section.
    public func serialized() throws(SIPTransportError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        Self.append16(id, to: &out)
        Self.append16(flags.rawValue, to: &out)
        for count in [questions.count, answers.count, authorities.count, additionals.count] {
            guard count <= Int(UInt16.max) else {
                throw SIPTransportError(.dnsLimitExceeded, "a section holds \(count) entries, more than 65535")
            }
            Self.append16(UInt16(count), to: &out)
        }
        for question in questions {
            Self.appendName(question.name, to: &out)
            Self.append16(question.type.rawValue, to: &out)
            Self.append16(question.dnsClass.rawValue, to: &out)
        }
        for record in answers + authorities + additionals {
            try Self.appendRecord(record, to: &out)
        }
        return out
    }

    static func append16(_ value: UInt16, to out: inout [UInt8]) {
        out.append(UInt8(value >> 8))
        out.append(UInt8(value & 0xFF))
    }

    static func append32(_ value: UInt32, to out: inout [UInt8]) {
        out.append(UInt8(value >> 24))
        out.append(UInt8((value >> 16) & 0xFF))
        out.append(UInt8((value >> 8) & 0xFF))
        out.append(UInt8(value & 0xFF))
    }

    static func appendName(_ name: DNSName, to out: inout [UInt8]) {
        for label in name.labels {
            out.append(UInt8(label.count))
            out += label
        }
        out.append(0)
    }

    static func appendCharacterString(_ bytes: [UInt8], to out: inout [UInt8]) throws(SIPTransportError) {
        guard bytes.count <= 255 else {
            throw SIPTransportError(.dnsBadRData, "a character-string is at most 255 octets, got \(bytes.count)")
        }
        out.append(UInt8(bytes.count))
        out += bytes
    }

    static func appendRecord(_ record: DNSResourceRecord, to out: inout [UInt8]) throws(SIPTransportError) {
        appendName(record.name, to: &out)
        append16(record.type.rawValue, to: &out)
        append16(record.dnsClass.rawValue, to: &out)
        append32(record.ttl, to: &out)
        var rdata: [UInt8] = []
        switch record.data {
        case .a(let address): rdata = address.bytes
        case .aaaa(let address): rdata = address.bytes
        case .cname(let name): appendName(name, to: &rdata)
        case .srv(let srv):
            append16(srv.priority, to: &rdata)
            append16(srv.weight, to: &rdata)
            append16(srv.port, to: &rdata)
            appendName(srv.target, to: &rdata)
        case .naptr(let naptr):
            append16(naptr.order, to: &rdata)
            append16(naptr.preference, to: &rdata)
            try appendCharacterString(naptr.flags, to: &rdata)
            try appendCharacterString(naptr.services, to: &rdata)
            try appendCharacterString(naptr.regexp, to: &rdata)
            appendName(naptr.replacement, to: &rdata)
        case .soa(let soa):
            appendName(soa.primaryServer, to: &rdata)
            appendName(soa.responsibleMailbox, to: &rdata)
            for value in [soa.serial, soa.refresh, soa.retry, soa.expire, soa.minimum] { append32(value, to: &rdata) }
        case .other(_, let bytes): rdata = bytes
        }
        guard rdata.count <= Int(UInt16.max) else {
            throw SIPTransportError(.dnsBadRData, "RDATA of \(rdata.count) octets exceeds 65535")
        }
        append16(UInt16(rdata.count), to: &out)
        out += rdata
    }
}
