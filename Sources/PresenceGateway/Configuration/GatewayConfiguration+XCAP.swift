import Foundation

extension GatewayConfiguration {
    /// Pres-rules documents kept on an XCAP server (YAML `xcap:`), as an OMA/IMS XDMS keeps them
    /// (RFC 4825, RFC 5025 §9, PacketCable Presence §6.3.5). A presentity whose entry says
    /// `pres-rules: xcap` has its document fetched from
    /// `ROOT/AUID/users/PRESENTITY/DOCUMENT` (RFC 4825 §6) and fetched again every `poll`
    /// seconds with `If-None-Match` (RFC 4825 §7.11); a changed document applies at once
    /// (docs/flows.md, "Policy from XCAP").
    ///
    /// ```yaml
    /// xcap:
    ///   root: "http://xdms.oma.example:8080/xcap-root"  # the XCAP root URI (http or https)
    ///   auid: pres-rules        # or org.openmobilealliance.pres-rules (default: pres-rules)
    ///   document: index         # the document's name (default: index, RFC 5025 §9.7)
    ///   poll: 30                # seconds between checks (default 30)
    ///   timeout: 10             # seconds for one request (default 10)
    /// presentities:
    ///   "sip:carol@oma.example": { pres-rules: xcap }
    /// ```
    public struct XCAP: Sendable, Hashable {
        /// The XCAP root URI without a trailing `/`.
        public var root: String
        public var auid: String
        public var document: String
        public var pollSeconds: Int
        public var timeoutSeconds: Int

        public init(
            root: String, auid: String = "pres-rules", document: String = "index", pollSeconds: Int = 30,
            timeoutSeconds: Int = 10
        ) {
            self.root = root
            self.auid = auid
            self.document = document
            self.pollSeconds = pollSeconds
            self.timeoutSeconds = timeoutSeconds
        }

        /// The document URI of `presentity`'s pres-rules: its XUI is the presentity's SIP URI
        /// (RFC 4825 §4, §6), percent-encoded where a path segment needs it.
        public func documentURI(of presentity: String) -> String {
            var segment = CharacterSet.urlPathAllowed
            segment.remove("/")
            let xui = presentity.addingPercentEncoding(withAllowedCharacters: segment) ?? presentity
            return "\(root)/\(auid)/users/\(xui)/\(document)"
        }
    }

    /// Reads `xcap:`; absent: nil.
    static func xcap(_ node: ConfigurationNode?) throws(ConfigurationError) -> XCAP? {
        guard let node else { return nil }
        let m = try node.mapping(known: ["root", "auid", "document", "poll", "timeout"])
        guard let rootNode = m["root"] else { throw node.error("needs root, the XCAP root URI (http:// or https://)") }
        var root = try rootNode.string()
        guard let url = URL(string: root), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false, url.query == nil, url.fragment == nil
        else {
            throw rootNode.error("'\(root)' is not an http:// or https:// URI without query or fragment")
        }
        while root.hasSuffix("/") { root.removeLast() }
        var xcap = XCAP(root: root)
        for (key, path) in [("auid", \XCAP.auid), ("document", \XCAP.document)] {
            guard let value = m[key] else { continue }
            let text = try value.string()
            guard !text.isEmpty, !text.contains("/"), text != ".", text != ".." else {
                throw value.error("'\(text)' is not one path segment")
            }
            xcap[keyPath: path] = text
        }
        if let v = m["poll"] { xcap.pollSeconds = try v.integer(in: 1...86_400) }
        if let v = m["timeout"] { xcap.timeoutSeconds = try v.integer(in: 1...300) }
        return xcap
    }
}
