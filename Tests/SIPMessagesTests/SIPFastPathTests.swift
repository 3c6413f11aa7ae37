import SIPMessages
import Testing

/// The parser accepts common Via, From/To/Contact and Request-URI shapes in one pass and hands
/// everything else to the full grammar. These tests check the two agree, through the public API:
/// a whole message must parse exactly when the full parser (`SIPVia(_:)`, `SIPAddress(_:)`,
/// `SIPURI(_:)`) accepts the value, and a plain Request-URI must equal the fully parsed one.
@Suite("Fast paths agree with the full grammar")
struct SIPFastPathTests {
    static func message(uri: String = "sip:bob@example.com", via: String = "SIP/2.0/TCP h.example.com;branch=z9hG4bK1",
                        from: String = "<sip:a@example.com>;tag=1", contact: String? = nil) -> [UInt8] {
        let c = contact.map { "Contact: \($0)\r\n" } ?? ""
        return Array("OPTIONS \(uri) SIP/2.0\r\nVia: \(via)\r\nFrom: \(from)\r\nTo: <sip:b@example.com>\r\nCall-ID: c1@h\r\nCSeq: 1 OPTIONS\r\n\(c)Content-Length: 0\r\n\r\n".utf8)
    }

    static let addresses = [
        "<sip:a@example.com>", "\"A\" <sip:a@example.com>;tag=1", "\"A B\"<sips:a@h:5061;transport=tls>;tag=x;epid=y",
        "<sip:a@h:65535>", "<sip:a@h:65536>", "<sip:a@h:099999>", "<sip:a@h:>", "<sip:@h>", "<sip:a@>", "<sip:>",
        "<sip:a@h;>", "<sip:a@h;x=>", "<sip:a@h;lr>", "<sip:a@h;x=a:b>", "<sip:a@h>;", "<sip:a@h>;tag=",
        "<sip:a@h>;tag", "<sip:a@h> ;tag=1", "<sip:a@h>x", "<sip:a@b@h>", "<sip:a@h;p=a@b>", "<sip:h?x=y>",
        "<SIP:a@h>", "<sipx:a@h>", "<tel:+1234>", "\"A\\\"\" <sip:a@h>", "\"unterminated <sip:a@h>", "\" \" <sip:a@h>",
        "A <sip:a@h>", "<sip:a%41@h>", "< sip:a@h>", "<sip:a@h >", "<sip:a@[::1]>", "sip:a@h", "sip:a@h;tag=1",
        "<sip:a@h>;tag=\"q\"", "<sip:a@h>,<sip:b@h>", "<sip:a_b.c-d@h_1.x-y>", "<sip:a@h:5060;maddr=1.2.3.4;ttl=5>",
    ]

    @Test(arguments: addresses)
    func fromIsAcceptedExactlyWhenTheAddressGrammarAcceptsIt(_ value: String) {
        let full = (try? SIPAddress(value)) != nil
        let whole = (try? SIPMessage(parsing: Self.message(from: value))) != nil
        #expect(whole == full, "From: \(value)")
    }

    @Test(arguments: addresses.filter { !$0.contains(",") })
    func contactIsAcceptedExactlyWhenTheAddressGrammarAcceptsIt(_ value: String) {
        let full = (try? SIPAddress(value)) != nil
        let whole = (try? SIPMessage(parsing: Self.message(contact: value))) != nil
        #expect(whole == full, "Contact: \(value)")
    }

    @Test(arguments: [
        "SIP/2.0/UDP h", "SIP/2.0/TLS 192.0.2.1:5061;branch=z9hG4bK1;rport", "SIP/2.0/UDP h:65536", "SIP/2.0/UDP h:",
        "SIP/2.0/UDP  h;rport=", "SIP/2.0/UDP h;;", "SIP/2.0/UDPh", "SIP/2.0 /UDP h", "SIP/2.0/UDP [::1]:5060",
        "SIP/2.0/UDP h;received=[::1]", "SIP/2.0/UDP h;branch=\"x\"", "SIP/2.0/UDP h!", "SIP//UDP h", "SIP/2.0/UDP h ;x=1",
        "SIP/2.0/UDP h;x=1 ", "SIP/2.0/UDP h_1.x-y:099999",
    ])
    func viaIsAcceptedExactlyWhenTheViaGrammarAcceptsIt(_ value: String) {
        let full = (try? SIPVia(value)) != nil
        let whole = (try? SIPMessage(parsing: Self.message(via: value))) != nil
        #expect(whole == full, "Via: \(value)")
    }

    @Test(arguments: [
        "sip:bob@example.com", "sips:bob@example.com:5061", "sip:h", "sip:h:5060;transport=tcp;lr", "sip:a@h;maddr=1.2.3.4",
        "sip:a_b@h-1.x;opaque=user:epid:Zq8;gruu", "sip:h:065535", "sip:h:65536", "sip:a%41@h", "SIP:a@h", "sip:a@h;x",
        "sip:a@b@h", "tel:+1234", "sip:a:pw@h", "sip:[::1]:5060", "sip:h;x=", "sip:@h",
    ])
    func requestURIEqualsTheFullyParsedURI(_ text: String) throws {
        let full = try? SIPURI(text)
        let parsed = try? SIPMessage(parsing: Self.message(uri: text))
        #expect((parsed != nil) == (full != nil && full?.headers.isEmpty == true), "\(text)")
        guard let uri = parsed?.request?.uri, let full else { return }
        #expect(uri == full)
        #expect(uri.description == full.description && uri.description == text)
        #expect(uri.user == full.user && uri.host == full.host && uri.port == full.port)
        #expect(uri.parameters.elements == full.parameters.elements)
    }
}
