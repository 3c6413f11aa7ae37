extension SIPURI {
    /// Writes the URI, escaping each component with its RFC 3261 §25.1 character set.
    func write(to out: inout [UInt8]) {
        if let verbatim {
            out.append(contentsOf: verbatim)
            return
        }
        out.append(contentsOf: scheme.rawValue.utf8)
        out.append(0x3A)
        if let opaque {
            out.append(contentsOf: opaque.utf8)
            return
        }
        if scheme == .tel {
            Self.escape(user ?? "", .telephone, to: &out)
        } else {
            if let user {
                Self.escape(user, .user, to: &out)
                if let password {
                    out.append(0x3A)
                    Self.escape(password, .password, to: &out)
                }
                out.append(0x40)
            }
            out.append(contentsOf: host.utf8)
            if let port {
                out.append(0x3A)
                out.append(contentsOf: String(port).utf8)
            }
        }
        for p in parameters {
            out.append(0x3B)
            Self.escape(p.name, .param, to: &out)
            if let v = p.value {
                out.append(0x3D)
                Self.escape(v, .param, to: &out)
            }
        }
        for (n, h) in headers.enumerated() {
            out.append(n == 0 ? 0x3F : 0x26)
            Self.escape(h.name, .header, to: &out)
            out.append(0x3D)
            Self.escape(h.value ?? "", .header, to: &out)
        }
    }

    static func escape(_ s: String, _ set: SIPURICharset, to out: inout [UInt8]) {
        let hex: [UInt8] = Array("0123456789ABCDEF".utf8)
        for b in s.utf8 {
            if set.allows(b) {
                out.append(b)
            } else {
                out.append(0x25)
                out.append(hex[Int(b >> 4)])
                out.append(hex[Int(b & 0x0F)])
            }
        }
    }
}
