import SIPMessages
import Testing

/// A Lync-style SUBSCRIBE (about 700 bytes) used by several tests.
let lyncSubscribe = """
    SUBSCRIBE sip:bob@contoso.com SIP/2.0\r
    Via: SIP/2.0/TLS 192.0.2.10:50926;branch=z9hG4bK6e0d1b0c;ms-received-port=50926;ms-received-cid=1A2B00;rport\r
    Max-Forwards: 70\r
    From: "Alice" <sip:alice@contoso.com>;tag=4c6a1f7e;epid=a1b2c3d4e5\r
    To: <sip:bob@contoso.com>\r
    Call-ID: 9f1e2d3c4b5a69788796a5b4c3d2e1f0\r
    CSeq: 1 SUBSCRIBE\r
    Contact: <sip:alice@contoso.com;opaque=user:epid:Zq8aXbYc;gruu>\r
    User-Agent: UCCAPI/16.0.4849.1000 OC/16.0.4849.1000 (Skype for Business)\r
    Event: presence\r
    Accept: application/msrtc-event-categories+xml, application/xpidf+xml, text/xml+msrtc.pidf;q=0.5, application/pidf+xml\r
    Supported: com.microsoft.autoextend, ms-benotify, ms-piggyback-first-notify\r
    Require: adhoclist, categoryList\r
    Supported: eventlist\r
    Expires: 3600\r
    Content-Type: application/msrtc-adrl-categorylist+xml\r
    Content-Length: 10\r
    \r
    <batchSub>
    """

@Suite("Message parsing")
struct SIPMessageParserTests {
    @Test func parsesRequestLineAndKeepsHeadersInOrder() throws {
        let m = try parse(lyncSubscribe)
        let r = try #require(m.request)
        #expect(r.method == .subscribe)
        #expect(r.uri.user == "bob" && r.uri.host == "contoso.com")
        #expect(m.headers.map(\.name) == [
            .via, .maxForwards, .from, .to, .callID, .cseq, .contact, .userAgent, .event, .accept, .supported,
            .require, .supported, .expires, .contentType, .contentLength,
        ])
        #expect(m.body == Array("<batchSub>".utf8))
    }

    @Test func compactFormsMapToTheirLongNames() throws {
        let m = try parse("""
            OPTIONS sip:a@example.com SIP/2.0\r
            v: SIP/2.0/UDP h.example.com;branch=z9hG4bK1\r
            f: <sip:b@example.com>;tag=1\r
            t: <sip:a@example.com>\r
            i: abc@h\r
            CSeq: 1 OPTIONS\r
            m: <sip:b@h.example.com>\r
            c: text/plain\r
            e: gzip\r
            k: path\r
            s: hello\r
            o: presence;id=7\r
            u: presence, dialog\r
            l: 2\r
            \r
            hi
            """)
        let h = m.headers
        #expect(try h.via.first?.host == "h.example.com")
        #expect(try h.from?.tag == "1")
        #expect(try h.to?.uri.user == "a")
        #expect(h.callID == "abc@h")
        #expect(try h.contact.count == 1)
        #expect(try h.contentType?.mediaType == "text/plain")
        #expect(h[.contentEncoding] == "gzip")
        #expect(try h.supported == ["path"])
        #expect(h[.subject] == "hello")
        #expect(try h.event?.package == "presence" && h.event?.id == "7")
        #expect(try h.allowEvents == ["presence", "dialog"])
        #expect(try h.contentLength == 2)
        #expect(m.body == Array("hi".utf8))
    }

    @Test(arguments: [
            .via, .from, .to, .callID, .cseq, .maxForwards, .contact, .route, .recordRoute, .expires, .minExpires,
            .event, .allowEvents, .subscriptionState, .accept, .allow, .contentType, .contentLength,
            .contentEncoding, .supported, .require, .proxyRequire, .unsupported, .sipETag, .sipIfMatch, .retryAfter,
            .subject, .date, .userAgent, .server, .authorization, .wwwAuthenticate, .proxyAuthenticate,
            .proxyAuthorization, .referTo, .referredBy, .sessionExpires, .acceptContact, .rejectContact,
            .requestDisposition, .identity, .identityInfo, .warning, .msPiggybackCSeq, .msEdgeProxyMessageTrust,
            .msSourceNetwork,
    ] as [SIPHeaderName])
    func everyWellKnownNameIsFoundFromItsTextInAnyCase(_ name: SIPHeaderName) {
        #expect(SIPHeaderName(name.displayName) == name)
        #expect(SIPHeaderName(name.displayName.uppercased()) == name)
        #expect(SIPHeaderName(name.canonical) == name)
        #expect(SIPHeaderName(name.displayName).displayName == name.displayName)
        #expect(name.canonical == name.displayName.lowercased())
        #expect(SIPHeaderName(name.displayName + "x") != name)
    }

    @Test func headerNamesMatchCaseInsensitively() {
        #expect(SIPHeaderName("cAlL-iD") == .callID)
        #expect(SIPHeaderName("I") == .callID)
        #expect(SIPHeaderName("x-unknown") == SIPHeaderName("X-Unknown"))
        #expect(SIPHeaderName("x-unknown") != SIPHeaderName("x-unknown2"))
    }

    @Test func methodsAreCaseSensitiveOpenVocabulary() {
        #expect(SIPMethod("SUBSCRIBE") == .subscribe)
        #expect(SIPMethod("subscribe") != .subscribe)
        #expect(SIPMethod("BENOTIFY") == .benotify)
        #expect([SIPMethod.notify, .publish, .message, .options, .service, .info, .invite, .ack, .bye, .cancel,
                 .register, .prack, .update, .refer].count == 14)
    }

    @Test func unknownHeadersAreForwardedByteForByte() throws {
        let text = "NOTIFY sip:a@h SIP/2.0\r\nVia: SIP/2.0/TCP h;branch=z9hG4bK2\r\nFrom: <sip:b@h>;tag=x\r\nTo: <sip:a@h>;tag=y\r\nCall-ID: c\r\nCSeq: 2 NOTIFY\r\nX-Odd  :  ;;,,  \r\n  folded  value\r\nms-diagnostics: 1000;reason=\"x\";source=\"y\"\r\nContent-Length: 0\r\n\r\n"
        let m = try parse(text)
        let out = String(decoding: m.serialized(), as: UTF8.self)
        #expect(out.contains("X-Odd  :  ;;,,  \r\n  folded  value\r\n"))
        #expect(out.contains("ms-diagnostics: 1000;reason=\"x\";source=\"y\"\r\n"))
        #expect(out == text)
        #expect(m.headers[SIPHeaderName("x-odd")] == ";;,, folded  value")
    }

    @Test func multipleValuesInOneLineAndAcrossLinesAreCombined() throws {
        let m = try parse("""
            OPTIONS sip:a@h SIP/2.0\r
            Via: SIP/2.0/UDP p1.example.com;branch=z9hG4bK1, SIP/2.0/TCP p2.example.com:5061;branch=z9hG4bK2\r
            Via: SIP/2.0/TLS [2001:db8::1]:5061;branch=z9hG4bK3\r
            From: <sip:b@h>;tag=x\r
            To: <sip:a@h>\r
            Call-ID: c\r
            CSeq: 1 OPTIONS\r
            Route: <sip:r1@h;lr>, <sip:r2@h;lr>\r
            Route: <sip:r3@h;lr>\r
            \r

            """)
        let via = try m.headers.via
        #expect(via.map(\.host) == ["p1.example.com", "p2.example.com", "[2001:db8::1]"])
        #expect(via[1].port == 5061 && via[2].port == 5061)
        #expect(try m.headers.route.map(\.uri.user) == ["r1", "r2", "r3"])
    }

    @Test func viaParametersAreReadTypedAndKeptInOrder() throws {
        let via = try SIPVia("SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bKabc;received=192.0.2.1;rport=5062;maddr=224.2.0.1;ttl=16;ms-received-port=49152;ms-received-cid=2F00;x-foo")
        #expect(via.protocolName == "SIP" && via.protocolVersion == "2.0" && via.transport == "UDP")
        #expect(via.host == "10.0.0.1" && via.port == 5060)
        #expect(via.branch == "z9hG4bKabc" && via.hasMagicCookie)
        #expect(via.received == "192.0.2.1")
        #expect(via.rport == .port(5062))
        #expect(via.maddr == "224.2.0.1")
        #expect(via.ttl == 16)
        #expect(via.msReceivedPort == 49152)
        #expect(via.msReceivedCID == "2F00")
        #expect(via.parameters.map(\.name) == ["branch", "received", "rport", "maddr", "ttl", "ms-received-port", "ms-received-cid", "x-foo"])
        #expect(try SIPVia("SIP/2.0/TCP h;rport").rport == .requested)
        #expect(try SIPVia("SIP/2.0/TCP h").rport == nil)
    }

    @Test func fromAndToExposeDisplayNameTagAndEpid() throws {
        let m = try parse(lyncSubscribe)
        let from = try #require(try m.headers.from)
        #expect(from.displayName == "Alice")
        #expect(from.tag == "4c6a1f7e")
        #expect(from.epid == "a1b2c3d4e5")
        #expect(from.usesAngleBrackets)
        let to = try #require(try m.headers.to)
        #expect(to.displayName == nil && to.tag == nil)
        let spec = try SIPAddress("sip:carol@chicago.com;tag=88")
        #expect(!spec.usesAngleBrackets && spec.tag == "88" && spec.uri.parameters.isEmpty)
    }

    @Test func contactHandlesWildcardGruuOpaqueInstanceQAndExpires() throws {
        var s = lyncSubscribe
        s = s.replacingOccurrences(of: "Contact: <sip:alice@contoso.com;opaque=user:epid:Zq8aXbYc;gruu>",
                                   with: "Contact: <sip:alice@192.0.2.10:50926;transport=tls;ms-opaque=d3470f2e1d>;proxy=replace;+sip.instance=\"<urn:uuid:2a1f-77>\";q=0.7;expires=600, <sip:alice@contoso.com;opaque=user:epid:Zq8aXbYc;gruu>;gruu=\"sip:alice@contoso.com;opaque=user:epid:Zq8aXbYc;gruu\"")
        let contacts = try parse(s).headers.contact
        #expect(contacts.count == 2)
        #expect(contacts[0].isProxyReplace)
        #expect(contacts[0].instance == "<urn:uuid:2a1f-77>")
        #expect(contacts[0].q == 700)
        #expect(contacts[0].expires == 600)
        #expect(contacts[0].address?.uri.transport == "tls")
        #expect(contacts[1].address?.uri.isGRUU == true)
        #expect(contacts[1].address?.uri.opaqueParameter == "user:epid:Zq8aXbYc")
        #expect(contacts[1].gruu == "sip:alice@contoso.com;opaque=user:epid:Zq8aXbYc;gruu")

        let star = try parse("REGISTER sip:h SIP/2.0\r\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\r\nFrom: <sip:a@h>;tag=1\r\nTo: <sip:a@h>\r\nCall-ID: c\r\nCSeq: 1 REGISTER\r\nContact: *\r\nExpires: 0\r\n\r\n")
        #expect(try star.headers.contact == [.wildcard])
        #expect(try star.headers.expires == 0)
    }

    @Test func subscriptionHeadersAreTyped() throws {
        let m = try parse("""
            NOTIFY sip:a@h SIP/2.0\r
            Via: SIP/2.0/TCP h;branch=z9hG4bK9\r
            From: <sip:b@h>;tag=x\r
            To: <sip:a@h>;tag=y\r
            Call-ID: c\r
            CSeq: 5 NOTIFY\r
            Event: presence.winfo;id=33;x=1\r
            Allow-Events: presence\r
            Allow-Events: dialog, message-summary\r
            Subscription-State: Terminated;reason=timeout;retry-after=30\r
            Min-Expires: 60\r
            SIP-ETag: dx200xyz\r
            SIP-If-Match: kwj449x\r
            Retry-After: 18000 (in a meeting);duration=3600\r
            ms-piggyback-cseq: 1836\r
            ms-edge-proxy-message-trust: ms-source-type=AutoFederation;ms-ep-fqdn=lcsproxy-internal.fabrikam.com;ms-source-verified-user=verified;ms-source-network=federation;ms-remote-fqdn=fabrikam.com\r
            ms-source-network: federation\r
            \r

            """)
        let h = m.headers
        let event = try #require(try h.event)
        #expect(event.package == "presence.winfo" && event.id == "33" && event.parameters.value("x") == "1")
        #expect(try h.allowEvents == ["presence", "dialog", "message-summary"])
        let st = try #require(try h.subscriptionState)
        #expect(st.state == .terminated && st.reason == "timeout" && st.retryAfter == 30 && st.expires == nil)
        #expect(try h.minExpires == 60)
        #expect(try h.sipETag == "dx200xyz")
        #expect(try h.sipIfMatch == "kwj449x")
        let ra = try #require(try h.retryAfter)
        #expect(ra.seconds == 18000 && ra.comment == "in a meeting" && ra.duration == 3600)
        #expect(try h.msPiggybackCSeq == 1836)
        let trust = try #require(try h.msEdgeProxyMessageTrust)
        #expect(trust.sourceType == "AutoFederation")
        #expect(trust.edgeProxyFQDN == "lcsproxy-internal.fabrikam.com")
        #expect(trust.sourceVerifiedUser == "verified")
        #expect(trust.sourceNetwork == "federation")
        #expect(trust.remoteFQDN == "fabrikam.com")
        #expect(try h.msSourceNetwork == "federation")
    }

    @Test func acceptIsSortedByQValueAndStableForEqualQ() throws {
        let h = try parse(lyncSubscribe).headers
        let order = try #require(try h.acceptByPreference).map(\.subtype)
        #expect(order == ["msrtc-event-categories+xml", "xpidf+xml", "pidf+xml", "xml+msrtc.pidf"])
        #expect(try h.accept?.count == 4)
        #expect(try h.accept?[2].q == 500)
    }

    @Test func contentTypeExposesMultipartParameters() throws {
        let ct = try SIPContentType("Multipart/Related; type=\"application/rlmi+xml\";start=resourceList;boundary=\"--=_b0\"")
        #expect(ct.mediaType == "multipart/related" && ct.isMultipart)
        #expect(ct.typeParameter == "application/rlmi+xml")
        #expect(ct.start == "resourceList")
        #expect(ct.boundary == "--=_b0")
    }

    @Test func optionTagsListsCombineAcrossLines() throws {
        let h = try parse(lyncSubscribe).headers
        #expect(try h.supported == ["com.microsoft.autoextend", "ms-benotify", "ms-piggyback-first-notify", "eventlist"])
        #expect(try h.require == ["adhoclist", "categoryList"])
        #expect(try h.proxyRequire == [])
    }

    @Test func lineFoldingIsLinearWhitespace() throws {
        let m = try parse("OPTIONS sip:a@h SIP/2.0\r\nVia: SIP/2.0/UDP\r\n h;branch=z9hG4bK1\r\nFrom:\r\n\t<sip:b@h>\r\n ;tag=x\r\nTo: <sip:a@h>\r\nCall-ID: c\r\nCSeq: 1\r\n  OPTIONS\r\n\r\n")
        #expect(try m.headers.via.first?.host == "h")
        #expect(try m.headers.from?.tag == "x")
        #expect(try m.headers.cseq == SIPCSeq(1, .options))
    }

    @Test func bareLFLineEndsAreAccepted() throws {
        let m = try parse("SIP/2.0 200 OK\nVia: SIP/2.0/UDP h;branch=z9hG4bK1\nFrom: <sip:b@h>;tag=x\nTo: <sip:a@h>;tag=y\nCall-ID: c\nCSeq: 1 OPTIONS\n\n")
        #expect(m.response?.statusCode == 200 && m.response?.reasonPhrase == "OK")
    }
}
