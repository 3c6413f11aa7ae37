/// One `generic-param` or `uri-parameter`: a name and an optional value (RFC 3261 §25.1).
///
/// ```
/// generic-param  =  token [ EQUAL gen-value ]
/// gen-value      =  token / host / quoted-string
/// ```
public struct SIPParameter: Sendable, Hashable {
    /// The name as written. Names compare case-insensitively (RFC 3261 §7.3.1).
    public var name: String
    /// The value (quoted-pairs resolved for quoted values; %-escapes resolved for URI parameters),
    /// or `nil` for a parameter without `=` (`;lr`, `;rport`, `;gruu`).
    public var value: String?
    /// Whether the value was (and will be written as) a quoted-string.
    public var isQuoted: Bool

    public init(name: String, value: String? = nil, isQuoted: Bool = false) {
        self.name = name
        self.value = value
        self.isQuoted = isQuoted
    }
}
