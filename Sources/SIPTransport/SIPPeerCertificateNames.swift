internal import NIOSSL

/// The names a peer's certificate carries, in the order the layers above should trust them.
///
/// RFC 5922 §7.1: "the subjectAltName extension [...] If the certificate has no subjectAltName
/// extension, the implementation may use the Common Name (CN) field of the subject"; the DNS
/// entries come first, then every subject CN that is not already listed. IP, URI and e-mail
/// entries are left out (RFC 5922 §7.1 matches SIP domains by DNS name; a SIP URI entry would be
/// `sip:domain`, which Microsoft federation does not use).
enum SIPPeerCertificateNames {
    static func names(of certificate: NIOSSLCertificate) -> [String] {
        var out: [String] = []
        for san in certificate._subjectAlternativeNames() where san.nameType == .dnsName {
            let name = String(decoding: Array(san.contents), as: UTF8.self)
            if !name.isEmpty, !out.contains(name) { out.append(name) }
        }
        for entry in certificate.subjectName where entry.type == .commonName {
            if !entry.value.isEmpty, !out.contains(entry.value) { out.append(entry.value) }
        }
        return out
    }
}
