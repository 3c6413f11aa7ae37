public import XMLBridge

extension NS {
    /// PresenceGateway's provisional namespace of the UPnP Telephony Presence:1 payloads
    /// (ISO/IEC 29341-26-16; Schemas/upnp/upnp-presence.xsd, docs/upnp-payloads.md).
    public static let upnpPresence = "urn:presencegateway:params:xml:ns:upnp-presence"
}

/// The XML payloads that the UPnP Telephony Presence:1 service (ISO/IEC 29341-26-16, service
/// `urn:schemas-upnp-org:service:Presence:1`) carries in its string arguments and state variables.
///
/// **Provisional.** The standard defines these payloads in an annex schema that was not
/// available to this project, so the project defines its own format, version ``version``, in
/// ``NS/upnpPresence`` (Schemas/upnp/upnp-presence.xsd, docs/upnp-payloads.md); replace it with
/// the annex schema when that is at hand:
///
/// | argument | document | type |
/// |---|---|---|
/// | UserPresenceInfo | PIDF `presence` (RFC 3863) | ``PIDFDocument`` |
/// | ContactId | `contact` | ``UPnPContactID`` |
/// | PresenceOfContactsList | `contacts` | ``UPnPContactPresenceList`` |
/// | RegistrationResult | `registration` | ``UPnPRegistrationResult`` |
/// | WatcherList (and the evented `Watcher` variable) | `watchers` | ``UPnPWatcherList`` |
public enum UPnPPresencePayload {
    /// The format version the readers accept and the writers write (the `version` attribute of
    /// `contacts` and `watchers`).
    public static let version = "0.1"

    /// Whether `token` has the form of a band (`contacts/contact/@band`): the schema's `Band`
    /// pattern `[a-z]+(-[a-z]+)*`, lower-case words joined by `-`. The bands themselves are the
    /// tokens of Mappings/upnp-bands.tsv, which checks its own with this.
    public static func isBandToken(_ token: String) -> Bool {
        var previous = UInt8(ascii: "-")
        for byte in token.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"): break
            case UInt8(ascii: "-") where previous != UInt8(ascii: "-"): break
            default: return false
            }
            previous = byte
        }
        return previous != UInt8(ascii: "-")
    }

    /// Why `uri` is not an address of the payloads, or nil when it is one:
    ///
    /// ```
    /// <xs:pattern value="([sS][iI][pP][sS]?|[pP][rR][eE][sS]):[^@\s\p{Cc}\p{Z}<>"]+@[^@\s\p{Cc}\p{Z}<>"]+"/>
    /// ```
    ///
    /// A `sip:`, `sips:` (RFC 3261 §19.1) or `pres:` (RFC 3859 §3.2, Appendix A.2) URI, the scheme in any case
    /// (RFC 3986 §3.1), then exactly one `@` with something on both sides, and no white space,
    /// separator, control character, `<`, `>` or `"`. Not a SIP URI grammar: enough to tell
    /// an address from a typing error or another kind of URI.
    static func uriProblem(_ uri: String) -> String? {
        guard let colon = uri.utf8.firstIndex(of: UInt8(ascii: ":")) else {
            return "\"\(uri)\" is not a sip:, sips: or pres: URI"
        }
        let scheme = uri.utf8[..<colon]
        let name = String(decoding: scheme, as: UTF8.self).lowercased()
        guard scheme.allSatisfy({ $0 < 0x80 }), name == "sip" || name == "sips" || name == "pres" else {
            return "\"\(uri)\" is not a sip:, sips: or pres: URI"
        }
        var ats = 0
        var user = 0
        var host = 0
        for scalar in uri.unicodeScalars[uri.unicodeScalars.index(after: colon)...] {
            switch scalar {
            case "@":
                ats += 1
                continue
            case " ", "\t", "\n", "\r", "<", ">", "\"":
                return "\"\(uri)\" holds white space, <, > or \""
            default:
                switch scalar.properties.generalCategory {
                case .control, .spaceSeparator, .lineSeparator, .paragraphSeparator:
                    return "\"\(uri)\" holds white space or a control character"
                default: break
                }
            }
            if ats == 0 { user += 1 } else { host += 1 }
        }
        guard ats == 1, user > 0, host > 0 else {
            return "\"\(uri)\" needs the form scheme:user@host (exactly one @, with both sides)"
        }
        return nil
    }
}

// The readers' shared rules: strict where Schemas/upnp/upnp-presence.xsd is strict, every error
// located at the element it is about (the line and column the parser gives its start tag: where
// the tag ends).
extension XMLCursor {
    /// The required `uri` attribute, checked as ``UPnPPresencePayload/uriProblem(_:)`` checks it.
    func upnpURI() throws(XMLError) -> String {
        guard let uri = self[attribute: "uri"] else { throw error("needs a uri attribute") }
        if let problem = UPnPPresencePayload.uriProblem(uri) { throw error("uri: \(problem)") }
        return uri
    }

    /// Fails on an attribute in no namespace that is not in `known` (attributes in other
    /// namespaces are the schema's `anyAttribute` extension points).
    func upnpOnlyAttributes(_ known: [String]) throws(XMLError) {
        var unknown: String?
        forEachAttribute { name, _ in
            if unknown == nil, name.namespace.isEmpty, !known.contains(name.local) { unknown = name.local }
        }
        if let unknown {
            throw error("unknown attribute \(unknown) (the element has \(known.joined(separator: ", ")))")
        }
    }

    /// The required `version` attribute, which must be ``UPnPPresencePayload/version``.
    func upnpVersion() throws(XMLError) {
        guard let raw = self[attribute: "version"] else {
            throw error("needs version=\"\(UPnPPresencePayload.version)\"")
        }
        guard raw.trimmingXMLWhitespace() == UPnPPresencePayload.version else {
            throw error("version \"\(raw)\" is not \(UPnPPresencePayload.version), the version this reader knows")
        }
    }

    /// An enumerated attribute (an `xs:token` restriction: white space around it is ignored);
    /// nil when absent and not `required`.
    func upnpEnumerated<T: RawRepresentable>(
        _: T.Type, _ local: String, required: Bool, values: String
    ) throws(XMLError) -> T? where T.RawValue == String {
        guard let raw = self[attribute: local] else {
            if required { throw error("needs a \(local) attribute (\(values))") }
            return nil
        }
        guard let value = T(rawValue: raw.trimmingXMLWhitespace()) else {
            throw error("\(local)=\"\(raw)\" is not one of \(values)")
        }
        return value
    }

    /// An optional integer attribute in `range` (an `xs:unsignedInt` or narrower).
    func upnpInteger(_ local: String, in range: ClosedRange<Int>) throws(XMLError) -> Int? {
        guard let raw = self[attribute: local] else { return nil }
        guard let value = UInt32(raw.trimmingXMLWhitespace()).map(Int.init), range.contains(value) else {
            throw error("\(local)=\"\(raw)\" is not an integer in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// Walks the content of an element-only element: `take` gets each child element and
    /// returns whether it read it; one it did not is skipped when in another namespace (an
    /// extension point) and an error when in the payloads' namespace or in none. Text other
    /// than white space is an error.
    func upnpChildren(_ take: (XMLCursor) throws(XMLError) -> Bool) throws(XMLError) {
        for child in children {
            if child.isText {
                guard child.hasOnlyWhitespace else {
                    throw XMLError(
                        .unexpectedContent, "<\(localName)>: text is not allowed here, only elements",
                        line: child.line > 0 ? child.line : line, column: child.line > 0 ? child.column : column)
                }
                continue
            }
            if try take(child) { continue }
            if child.namespaceURI.isEmpty || child.isIn(namespace: NS.upnpPresence) {
                throw child.error("unexpected element \(child.name) inside <\(localName)>")
            }
        }
    }
}
