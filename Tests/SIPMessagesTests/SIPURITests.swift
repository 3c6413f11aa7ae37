import SIPMessages
import Testing

@Suite("URIs")
struct SIPURITests {
    @Test func sipURIComponentsAreParsed() throws {
        let u = try SIPURI("sips:alice:secret@atlanta.com:5061;transport=tcp;lr?subject=project%20x&priority=urgent")
        #expect(u.scheme == .sips && u.user == "alice" && u.password == "secret")
        #expect(u.host == "atlanta.com" && u.port == 5061)
        #expect(u.parameters.map(\.name) == ["transport", "lr"])
        #expect(u.isLooseRouting && u.transport == "tcp")
        #expect(u.headers.value("subject") == "project x" && u.headers.value("priority") == "urgent")
    }

    @Test func ipv6ReferencesKeepTheirBrackets() throws {
        let u = try SIPURI("sip:[2001:db8::10]:5070;maddr=[2001:db8::1]")
        #expect(u.host == "[2001:db8::10]" && u.port == 5070 && u.maddr == "[2001:db8::1]")
    }

    @Test func telURIsKeepTheNumberAndParameters() throws {
        let u = try SIPURI("tel:+1-201-555-0123;phone-context=example.com;ext=22")
        #expect(u.scheme == .tel && u.user == "+1-201-555-0123")
        #expect(u.parameters.value("phone-context") == "example.com" && u.parameters.value("ext") == "22")
        #expect(u.description == "tel:+1-201-555-0123;phone-context=example.com;ext=22")
    }

    @Test func escapesAreResolvedOnceAndWrittenBack() throws {
        var u = try SIPURI("sip:I%20have%20spaces@example.net;n%61me=v%61lue%25%34%31")
        #expect(u.user == "I have spaces")
        #expect(u.parameters.value("name") == "value%41")
        #expect(u.description == "sip:I%20have%20spaces@example.net;n%61me=v%61lue%25%34%31")
        u.port = 5060
        #expect(u.description == "sip:I%20have%20spaces@example.net:5060;name=value%2541")
        #expect(try SIPURI(u.description) == u)
    }

    @Test func malformedURIsAreRejected() {
        #expect(throws: SIPParseError.self) { try SIPURI("sip:") }
        #expect(throws: SIPParseError.self) { try SIPURI("sip:a@h:99999") }
        #expect(throws: SIPParseError.self) { try SIPURI("sip:a@h;%zz") }
        #expect(throws: SIPParseError.self) { try SIPURI("sip:a b@h") }
        #expect(throws: SIPParseError.self) { try SIPURI("<sip:a@h>") }
    }

    /// RFC 3261 §19.1.4: the URIs in each pair are equivalent.
    @Test(arguments: [
        ("sip:%61lice@atlanta.com;transport=TCP", "sip:alice@AtLanTa.CoM;Transport=tcp"),
        ("sip:carol@chicago.com", "sip:carol@chicago.com;newparam=5"),
        ("sip:carol@chicago.com", "sip:carol@chicago.com;security=on"),
        ("sip:carol@chicago.com;newparam=5", "sip:carol@chicago.com;security=on"),
        ("sip:biloxi.com;transport=tcp;method=REGISTER?to=sip:bob%40biloxi.com",
         "sip:biloxi.com;method=REGISTER;transport=tcp?to=sip:bob%40biloxi.com"),
        ("sip:alice@atlanta.com?subject=project%20x&priority=urgent",
         "sip:alice@atlanta.com?priority=urgent&subject=project%20x"),
    ])
    func rfc3261EquivalentURIsCompareEqual(_ pair: (String, String)) throws {
        let a = try SIPURI(pair.0), b = try SIPURI(pair.1)
        #expect(a.isEquivalent(to: b))
        #expect(b.isEquivalent(to: a))
    }

    /// RFC 3261 §19.1.4: the URIs in each pair are not equivalent.
    @Test(arguments: [
        ("SIP:ALICE@AtLanTa.CoM;Transport=udp", "sip:alice@AtLanTa.CoM;Transport=UDP"),
        ("sip:bob@biloxi.com", "sip:bob@biloxi.com:5060"),
        ("sip:bob@biloxi.com", "sip:bob@biloxi.com;transport=udp"),
        ("sip:bob@biloxi.com", "sip:bob@biloxi.com:6000;transport=tcp"),
        ("sip:carol@chicago.com", "sip:carol@chicago.com?Subject=next%20meeting"),
        ("sip:bob@phone21.boxesbybob.com", "sip:bob@192.0.2.4"),
        ("sip:alice@atlanta.com", "sips:alice@atlanta.com"),
    ])
    func rfc3261DifferentURIsCompareUnequal(_ pair: (String, String)) throws {
        let a = try SIPURI(pair.0), b = try SIPURI(pair.1)
        #expect(!a.isEquivalent(to: b))
        #expect(!b.isEquivalent(to: a))
    }
}
