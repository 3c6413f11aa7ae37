import Foundation

extension GatewayConfiguration {
    /// The OMA domain's content server (YAML `content-server:`), which keeps presence-related
    /// MIME objects for content indirection (RFC 4483; PacketCable Presence §6.1.8, §6.3.6.4,
    /// reference points PRS-13 to PRS-15).
    ///
    /// - **Followed:** a NOTIFY or PUBLISH from the OMA side whose body is a
    ///   `message/external-body` reference (access-type URL) to a URL on this server's origin has
    ///   the content fetched (at most `max-bytes`, within `timeout` seconds) and is then taken
    ///   as if it had carried it. A reference elsewhere, or any reference while this section is
    ///   absent, is refused with 415 (RFC 4483 §5.3).
    /// - **Offered** (`offer: true`, the default): a NOTIFY to an OMA watcher that is too large
    ///   for UDP (RFC 3261 §18.1.1) and cannot go over TCP, because the OMA side has no TCP
    ///   listener, is stored here with HTTP PUT and sent as a reference instead, when the
    ///   watcher's SUBSCRIBE listed `message/external-body` in Accept (RFC 4483 §5.1).
    ///
    /// `xcap-auth:` may name `url` to authenticate at the server (HTTP Digest or an asserted
    /// identity); docs/flows.md, "Content indirection".
    ///
    /// ```yaml
    /// content-server:
    ///   url: "https://content.oma.example/presence"   # http or https; objects are PUT under it
    ///   max-bytes: 262144     # largest content followed or offered (default 262144)
    ///   timeout: 5            # seconds for one request (default 5)
    ///   offer: true           # default true
    /// ```
    public struct ContentServer: Sendable, Hashable {
        /// The URL without a trailing `/`: references must be on its origin, offered objects go
        /// under it.
        public var url: String
        public var maximumBytes = 262_144
        public var timeoutSeconds = 5
        public var offer = true

        public init(url: String) { self.url = url }
    }

    /// Reads `content-server:`; absent: nil.
    static func contentServer(_ node: ConfigurationNode?) throws(ConfigurationError) -> ContentServer? {
        guard let node else { return nil }
        let m = try node.mapping(known: ["url", "max-bytes", "timeout", "offer"])
        guard let urlNode = m["url"] else {
            throw node.error("needs url, the content server's http:// or https:// URL")
        }
        var server = ContentServer(url: try xcapRoot(urlNode))
        if let v = m["max-bytes"] { server.maximumBytes = try v.integer(in: 1_024...16_777_216) }
        if let v = m["timeout"] { server.timeoutSeconds = try v.integer(in: 1...30) }
        if let v = m["offer"] { server.offer = try v.bool() }
        return server
    }
}
