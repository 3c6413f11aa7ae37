import SIPMessages
import SIPTransport
import Testing

/// RFC 3261 §18.2.2 and RFC 3581 §4: where a response goes.
@Suite struct SIPResponseRouteTests {
    private func via(_ text: String) throws -> SIPVia { try SIPVia(text) }

    @Test func reliableResponseUsesTheRequestConnectionThenReceivedWithSentByPort() throws {
        let route = try SIPResponseRoute.forResponse(
            topVia: via("SIP/2.0/TCP client.example.com:5070;branch=z9hG4bK1;received=192.0.2.7;rport=41000"),
            requestConnection: SIPConnectionID(4))
        #expect(route.connection == SIPConnectionID(4))
        // §18.2.2: "the IP address in the received parameter [...] using the port in the sent-by value"
        #expect(route.target == SIPTarget(.tcp, host: "192.0.2.7", port: 5070))
    }

    @Test func reliableResponseWithoutReceivedGoesToSentByWithTheDefaultPort() throws {
        let route = try SIPResponseRoute.forResponse(topVia: via("SIP/2.0/TLS 192.0.2.9;branch=z9hG4bK1"), requestConnection: nil)
        #expect(route.connection == nil)
        #expect(route.target == SIPTarget(.tls, host: "192.0.2.9", port: 5061))
    }

    @Test func unreliableResponseGoesToMaddrWithSentByPort() throws {
        let route = try SIPResponseRoute.forResponse(
            topVia: via("SIP/2.0/UDP 192.0.2.1:5080;maddr=239.255.255.1;ttl=1;received=192.0.2.2;branch=z9hG4bK1"),
            requestConnection: nil)
        #expect(route.target == SIPTarget(.udp, host: "239.255.255.1", port: 5080))
    }

    @Test func unreliableResponseGoesToReceivedAndRport() throws {
        let route = try SIPResponseRoute.forResponse(
            topVia: via("SIP/2.0/UDP 10.0.0.5:5060;branch=z9hG4bK1;received=192.0.2.99;rport=62000"),
            requestConnection: SIPConnectionID(1))
        #expect(route.connection == nil)
        #expect(route.target == SIPTarget(.udp, host: "192.0.2.99", port: 62000))
    }

    @Test func unreliableResponseWithReceivedButNoRportUsesSentByPortOr5060() throws {
        let withPort = try SIPResponseRoute.forResponse(
            topVia: via("SIP/2.0/UDP pc.example.com:5090;branch=z9hG4bK1;received=192.0.2.4"), requestConnection: nil)
        #expect(withPort.target == SIPTarget(.udp, host: "192.0.2.4", port: 5090))
        let noPort = try SIPResponseRoute.forResponse(
            topVia: via("SIP/2.0/UDP pc.example.com;branch=z9hG4bK1;received=192.0.2.4"), requestConnection: nil)
        #expect(noPort.target == SIPTarget(.udp, host: "192.0.2.4", port: 5060))
    }

    @Test func unreliableResponseWithOnlySentByKeepsTheNameForResolution() throws {
        let route = try SIPResponseRoute.forResponse(topVia: via("SIP/2.0/UDP pc.example.com:5070;branch=z9hG4bK1"),
                                                     requestConnection: nil)
        #expect(route.target == SIPTarget(.udp, host: "pc.example.com", port: 5070))
    }

    @Test func ipv6SentByLosesItsBrackets() throws {
        let route = try SIPResponseRoute.forResponse(topVia: via("SIP/2.0/UDP [2001:db8::9]:5070;branch=z9hG4bK1"),
                                                     requestConnection: nil)
        #expect(route.target == SIPTarget(.udp, host: "2001:db8::9", port: 5070))
    }

    @Test func unknownViaTransportIsUnsupported() throws {
        #expect(throws: SIPTransportError.self) {
            try SIPResponseRoute.forResponse(topVia: try self.via("SIP/2.0/SCTP 192.0.2.1;branch=z9hG4bK1"), requestConnection: nil)
        }
    }

    @Test func targetEqualityIgnoresTheTLSServerName() {
        let named = SIPTarget(.tls, host: "192.0.2.1", port: 5061, serverName: "sip.example.com")
        let bare = SIPTarget(.tls, host: "192.0.2.1", port: 5061)
        #expect(named == bare)
        #expect(Set([named, bare]).count == 1)
        #expect(named.serverName == "sip.example.com")
    }
}
