import Foundation

extension GatewayConfiguration {
    /// Pres-rules documents kept on an XCAP server (YAML `xcap:`), as an OMA/IMS XDMS keeps them
    /// (RFC 4825, RFC 5025 §9, PacketCable Presence §6.3.5). A presentity whose entry says
    /// `pres-rules: xcap` has its document fetched from
    /// `ROOT/AUID/users/PRESENTITY/DOCUMENT` (RFC 4825 §6) and fetched again every `poll`
    /// seconds with `If-None-Match` (RFC 4825 §7.11); a changed document applies at once
    /// (docs/flows.md, "Policy from XCAP").
    ///
    /// `rls-services` names identities whose RFC 4826 `rls-services` document
    /// (`ROOT/rls-services/users/XUI/index`, RFC 4826 §4.4.7) holds resource lists the gateway
    /// serves, fetched and polled the same way (docs/flows.md, "Resource lists"); unlike the other
    /// settings here, these identities change with a reload.
    ///
    /// ```yaml
    /// xcap:
    ///   root: "http://xdms.oma.example:8080/xcap-root"  # the XCAP root URI (http or https)
    ///   auid: pres-rules        # or org.openmobilealliance.pres-rules (default: pres-rules)
    ///   document: index         # the document's name (default: index, RFC 5025 §9.7)
    ///   poll: 30                # seconds between checks (default 30)
    ///   timeout: 10             # seconds for one request (default 10)
    ///   rls-services: ["sip:lists@contoso.com"]   # optional
    ///   xcap-diff: true         # learn of changes by RFC 5875 subscriptions too (default false)
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
        /// The identities whose rls-services documents hold served resource lists, in order
        /// (a list URI the first of them defines wins).
        public var rlsServices: [String] = []
        /// Subscribe to each XCAP presentity's `xcap-diff` event (RFC 5875) at the OMA side, and
        /// fetch its document as soon as a NOTIFY names it; polling goes on as well.
        public var xcapDiff = false

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
            Self.documentURI(root: root, auid: auid, xui: presentity, document: document)
        }

        /// The document URI of `xui`'s rls-services document (RFC 4826 §4.4.7: `index`).
        public func rlsServicesURI(of xui: String) -> String { Self.rlsServicesURI(root: root, xui: xui) }

        /// The same at the XCAP root `root`.
        static func rlsServicesURI(root: String, xui: String) -> String {
            documentURI(root: root, auid: "rls-services", xui: xui, document: "index")
        }

        static func documentURI(root: String, auid: String, xui: String, document: String) -> String {
            var segment = CharacterSet.urlPathAllowed
            segment.remove("/")
            let encoded = xui.addingPercentEncoding(withAllowedCharacters: segment) ?? xui
            return "\(root)/\(auid)/users/\(encoded)/\(document)"
        }
    }

    /// An XCAP root URI (RFC 4825 §6): http or https, with a host, without query or fragment;
    /// returned without a trailing `/`.
    static func xcapRoot(_ node: ConfigurationNode) throws(ConfigurationError) -> String {
        try xcapRoot(try node.string(), at: node)
    }

    /// The same of `text`, an error at `node` when it is not one.
    static func xcapRoot(_ text: String, at node: ConfigurationNode) throws(ConfigurationError) -> String {
        var root = text
        guard let url = URL(string: root), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false, url.query == nil, url.fragment == nil
        else {
            throw node.error("'\(root)' is not an http:// or https:// URI without query or fragment")
        }
        while root.hasSuffix("/") { root.removeLast() }
        return root
    }

    /// Reads `xcap:`; absent: nil.
    static func xcap(_ node: ConfigurationNode?) throws(ConfigurationError) -> XCAP? {
        guard let node else { return nil }
        let m = try node.mapping(known: ["root", "auid", "document", "poll", "timeout", "rls-services", "xcap-diff"])
        guard let rootNode = m["root"] else { throw node.error("needs root, the XCAP root URI (http:// or https://)") }
        var xcap = XCAP(root: try xcapRoot(rootNode))
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
        if let v = m["xcap-diff"] { xcap.xcapDiff = try v.bool() }
        for item in try m["rls-services"]?.list() ?? [] {
            guard let xui = WatcherIdentity.addressOfRecord(try item.string()) else {
                throw item.error("not a sip:user@host URI")
            }
            guard !xcap.rlsServices.contains(xui) else { throw item.error("\(xui) is named twice") }
            xcap.rlsServices.append(xui)
        }
        return xcap
    }
}
