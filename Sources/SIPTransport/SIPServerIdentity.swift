internal import NIOSSL

/// Whether a TLS server's certificate speaks for a name the gateway expects, for its own
/// outgoing connections (RFC 5922 §4: "the client MUST compare [the server's identity] to the
/// domain it was trying to reach", by name, never by IP address).
///
/// The presented identities are the certificate's subjectAltName dNSName entries; only a
/// certificate without any is judged by its subject common names (RFC 5922 §7.1; RFC 6125
/// §6.4.4). IP address entries are never used: a certificate for another name that carries the
/// right IP address is refused. Names compare without regard to ASCII case and a trailing dot
/// (RFC 6125 §6.4.1).
///
/// Wildcards (RFC 6125 §6.4.3): only a left-most label that is exactly `*`, followed by at
/// least two labels, and it stands for exactly one label: `*.fabrikam.com` matches
/// `sip.fabrikam.com`, not `fabrikam.com` nor `a.b.fabrikam.com`. Partial-label wildcards
/// (`s*.fabrikam.com`) and wildcards in other labels match nothing (RFC 6125 §7.2 advises
/// against them).
public enum SIPServerIdentity {
    /// Whether the presented identifier `presented` (from a certificate) matches `reference` (a
    /// name the gateway expects). An IP literal as `reference` never matches.
    public static func matches(presented: String, reference: String) -> Bool {
        let reference = normalized(reference)
        let presented = normalized(presented)
        guard !reference.isEmpty, !presented.isEmpty, !reference.contains("*"),
            SIPHostAddress.canonicalIP(reference) == nil
        else { return false }
        guard presented.contains("*") else { return presented == reference }
        let presentedLabels = presented.split(separator: ".", omittingEmptySubsequences: false)
        let referenceLabels = reference.split(separator: ".", omittingEmptySubsequences: false)
        guard presentedLabels.count >= 3, presentedLabels[0] == "*",
            !presentedLabels.dropFirst().contains(where: { $0.isEmpty || $0.contains("*") }),
            referenceLabels.count == presentedLabels.count, !referenceLabels[0].isEmpty
        else { return false }
        return referenceLabels.dropFirst().elementsEqual(presentedLabels.dropFirst())
    }

    /// Whether any presented identifier matches any of `references`.
    public static func matches(presented: [String], anyOf references: [String]) -> Bool {
        presented.contains { name in references.contains { matches(presented: name, reference: $0) } }
    }

    /// The DNS identities `certificate` presents: subjectAltName dNSName entries, or the subject
    /// common names when it has none (RFC 6125 §6.4.4).
    static func presentedNames(of certificate: NIOSSLCertificate) -> [String] {
        var names: [String] = []
        for san in certificate._subjectAlternativeNames() where san.nameType == .dnsName {
            names.append(String(decoding: Array(san.contents), as: UTF8.self))
        }
        if !names.isEmpty { return names }
        for entry in certificate.subjectName where entry.type == .commonName {
            names.append(entry.value)
        }
        return names
    }

    /// Lowercased ASCII, without one trailing dot.
    private static func normalized(_ name: String) -> String {
        var text = name.lowercased()
        if text.hasSuffix(".") { text.removeLast() }
        return text
    }

    /// Whether `name` can be sent as SNI and matched: a non-empty name that is not an IP literal.
    static func isName(_ name: String?) -> Bool {
        guard let name, !name.isEmpty else { return false }
        return SIPHostAddress.canonicalIP(name) == nil
    }
}
