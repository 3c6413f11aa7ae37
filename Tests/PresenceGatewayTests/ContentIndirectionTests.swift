import Foundation
import NIOEmbedded
@testable import PresenceGateway
import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// Content indirection (RFC 4483; PacketCable Presence §6.1.8): the reference is checked before
/// anything is fetched, the setting is read with its mistakes at their line, a SUBSCRIBE says
/// whether its watcher takes references, and the transaction layer says when a NOTIFY cannot
/// go at all. The fetch and the offer over real sockets: GatewayPeerTests/ContentIndirectionPeerTests.
@Suite struct ContentIndirectionTests {
    static let inner = Array("Content-Type: application/pidf+xml\r\nContent-ID: <4e55@oma.example>\r\n\r\n".utf8)
    static let server = GatewayConfiguration.ContentServer(url: "http://cs.oma.example:8080/presence")

    static func type(_ url: String, extra: String = "") throws -> SIPContentType {
        try SIPContentType("message/external-body;access-type=URL;URL=\"\(url)\"\(extra)")
    }

    static func reference(_ type: SIPContentType, body: [UInt8] = inner, server: GatewayConfiguration.ContentServer = server)
        -> Result<ExternalBodyReference, ContentIndirectionError>
    {
        Result { () throws(ContentIndirectionError) in
            try ExternalBodyReference(contentType: type, body: body, server: server, now: Date())
        }
    }

    /// RFC 4483 §4's own example form (upper-case parameter names, the month spelled out) is read;
    /// only an http or https URL on the content server's scheme, host and port is followed.
    @Test func onlyHTTPOnTheContentServersOriginIsFollowed() throws {
        let ok = try Self.reference(
            SIPContentType(
                #"message/external-body;ACCESS-TYPE=URL;URL="http://cs.oma.example:8080/presence/a.xml";EXPIRATION="Mon, 24 June 2102 09:00:00 GMT";SIZE=23406"#
            )
        ).get()
        #expect(ok.url == "http://cs.oma.example:8080/presence/a.xml" && ok.contentType == "application/pidf+xml")
        for (url, why) in [
            ("http://evil.example:8080/a.xml", "not on the content server"),
            ("http://cs.oma.example/a.xml", "not on the content server"),
            ("https://cs.oma.example:8080/a.xml", "not on the content server"),
            ("http://user@cs.oma.example:8080/a.xml", "not on the content server"),
            ("ftp://cs.oma.example:8080/a.xml", "not an http or https URL"),
            ("file:///etc/passwd", "not an http or https URL"),
        ] {
            let result = Self.reference(try Self.type(url))
            #expect(result.failure?.status == 415, "\(url)")
            #expect(result.failure?.reason.contains(why) == true, "\(url): \(String(describing: result.failure))")
        }
    }

    @Test func anExpiredTooLargeOrUntypedReferenceIsRefusedBeforeAnyFetch() throws {
        let url = "http://cs.oma.example:8080/presence/a.xml"
        var small = Self.server
        small.maximumBytes = 1_024
        let refusals: [(SIPContentType, [UInt8], String)] = [
            (try Self.type(url, extra: #";expiration="Mon, 24 Jun 2002 09:00:00 GMT""#), Self.inner, "expired"),
            (try Self.type(url, extra: ";size=1025"), Self.inner, "over max-bytes 1024"),
            (try Self.type(url), [], "names no Content-Type"),
            (try Self.type(url), Array("Content-ID: <x@y>\r\n\r\nContent-Type: text/plain".utf8), "names no Content-Type"),
            (try SIPContentType("message/external-body;access-type=anon-ftp;site=cs.oma.example"), Self.inner, "access-type URL"),
        ]
        for (type, body, why) in refusals {
            let result = Self.reference(type, body: body, server: small)
            #expect(result.failure?.status == 415 && result.failure?.reason.contains(why) == true,
                    "\(type): \(String(describing: result.failure))")
        }
        #expect((try? Self.reference(try Self.type(url, extra: ";size=1024"), server: small).get()) != nil)
    }

    /// The `expiration` the gateway writes is one it reads back (RFC 1123 form, GMT).
    @Test func offeredExpirationsReadBack() {
        let date = Date(timeIntervalSince1970: 1_800_000_000)
        let text = ExternalBodyReference.httpDate(date)
        #expect(text == "Fri, 15 Jan 2027 08:00:00 GMT")
        #expect(ExternalBodyReference.date(text) == date)
    }

    /// Every relayed request is asked whether it carries a reference: only message/external-body
    /// (any case) does; no Content-Type, or another message/ type, does not.
    @Test func onlyMessageExternalBodyIsAReference() throws {
        func request(_ type: String?) throws -> SIPRequest {
            var r = SIPRequest(method: .notify, uri: try SIPURI("sip:gw@127.0.0.1"))
            if let type { r.headers.append(.contentType, type) }
            return r
        }
        #expect(ContentIndirection.isIndirect(try request(" Message/External-Body;access-type=URL;URL=\"http://a/b\"")))
        for type in [nil, "application/pidf+xml", "message/sipfrag", "message/", "text/external-body"] {
            #expect(!ContentIndirection.isIndirect(try request(type)), "\(type ?? "none")")
        }
    }

    static let base = ConfigurationTests.valid

    @Test func theSettingIsReadWithItsDefaultsAndMistakesAtTheirLine() throws {
        let config = try GatewayConfiguration(yaml: Self.base + #"content-server: { url: "https://cs.oma.example/presence/" }"# + "\n")
        let server = try #require(config.contentServer)
        #expect(server.url == "https://cs.oma.example/presence" && server.maximumBytes == 262_144)
        #expect(server.timeoutSeconds == 5 && server.offer)
        #expect(config.xcapRoots.contains("https://cs.oma.example/presence"))
        #expect(try GatewayConfiguration(yaml: Self.base).contentServer == nil)
        let line = Self.base.split(separator: "\n", omittingEmptySubsequences: false).count
        for (entry, message) in [
            ("{ max-bytes: 2048 }", "needs url"),
            (#"{ url: "ftp://cs.oma.example" }"#, "not an http"),
            (#"{ url: "http://cs.oma.example", max-bytes: 10 }"#, "1024"),
            (#"{ url: "http://cs.oma.example", timeout: 0 }"#, "1"),
            (#"{ url: "http://cs.oma.example", offer: maybe }"#, "true or false"),
            (#"{ url: "http://cs.oma.example", size: 3 }"#, "size"),
        ] {
            do {
                _ = try GatewayConfiguration(yaml: Self.base + "content-server: " + entry + "\n")
                Issue.record("accepted: \(entry)")
            } catch {
                let text = error.description
                #expect(text.contains(message) && text.hasPrefix("\(line):"), "\(text)")
            }
        }
    }

    /// `xcap-auth:` may name the content server, as an XCAP root.
    @Test func xcapAuthMayNameTheContentServer() throws {
        try ConfigurationXCAPAuthTests.withSecrets { directory in
            let config = try GatewayConfiguration(yaml: Self.base + """
                content-server: { url: "http://cs.oma.example/presence" }
                xcap-auth:
                  "http://cs.oma.example/presence": { username: gw, password-file: \(directory)/ap-password }
                """)
            #expect(config.xcapAuth["http://cs.oma.example/presence"] == .digest(.init(username: "gw", password: "Circle of Life")))
        }
    }

    static func subscribe(accept: String?) throws -> SIPRequest {
        let acceptLine = accept.map { "Accept: \($0)\r\n" } ?? ""
        let text = "SUBSCRIBE sip:bob@contoso.com SIP/2.0\r\nVia: SIP/2.0/UDP 192.0.2.1;branch=z9hG4bKa\r\n"
            + "From: <sip:dave@oma.example>;tag=1\r\nTo: <sip:bob@contoso.com>\r\nCall-ID: c1\r\nCSeq: 1 SUBSCRIBE\r\n"
            + "Contact: <sip:dave@192.0.2.1>\r\nEvent: presence\r\n\(acceptLine)Expires: 600\r\nContent-Length: 0\r\n\r\n"
        return try #require(try SIPMessage(parsing: Array(text.utf8)).request)
    }

    /// RFC 4483 §5.1: a watcher takes references when its Accept lists message/external-body
    /// (with a q above 0); the terms of others encode as before (no new key in stored records).
    @Test func aSubscribeSaysWhetherItsWatcherTakesReferences() throws {
        func terms(_ accept: String?) throws -> SubscriptionTerms {
            guard case .accept(let terms) = SubscriptionTerms.evaluate(try Self.subscribe(accept: accept), registry: SIPEventPackageRegistry())
            else { throw ContentIndirectionError.refused("refused") }
            return terms
        }
        #expect(try terms("application/pidf+xml, message/external-body").acceptsExternalBody == true)
        #expect(try terms("application/pidf+xml, message/external-body;q=0").acceptsExternalBody == nil)
        #expect(try terms("application/pidf+xml").acceptsExternalBody == nil)
        #expect(try terms(nil).acceptsExternalBody == nil)
        let encoded = String(decoding: try JSONEncoder().encode(try terms("application/pidf+xml")), as: UTF8.self)
        #expect(!encoded.contains("acceptsExternalBody"))
    }

    /// RFC 3261 §18.1.1: a request over 1300 bytes with its Via cannot go over UDP; with a TCP
    /// listener it moves there, without one it cannot go at all.
    @Test func theLayerSaysWhenARequestCannotGoOverUDP() throws {
        let loop = EmbeddedEventLoop()
        let network = SIPLoopbackNetwork(eventLoop: loop)
        let udpOnly = SIPTransactionLayer(transport: network.endpoint(SIPTarget(.udp, host: "127.0.0.1", port: 5060)),
                                          configuration: .presenceEvents)
        let target = SIPTarget(.udp, host: "127.0.0.2", port: 5060)
        var notify = SIPRequest(method: .notify, uri: try SIPURI("sip:dave@127.0.0.2"))
        notify.headers.append(.callID, "c1")
        notify.headers.append(.cseq, "2 NOTIFY")
        notify.body = Array(repeating: UInt8(ascii: "x"), count: 1_100)
        #expect(!udpOnly.exceedsUDP(notify, to: target))
        notify.body = Array(repeating: UInt8(ascii: "x"), count: 1_250)
        #expect(udpOnly.exceedsUDP(notify, to: target))
        #expect(!udpOnly.exceedsUDP(notify, to: SIPTarget(.tcp, host: "127.0.0.2", port: 5060)))
    }
}
