import SIPMessages
import SIPStack
import SIPTransport
import Testing

/// RFC 3261 §18.2.2 (with RFC 3581 §4) as a pure function.
@Suite struct TransactionResponseRoutingTests {
    private func destination(via: String, source: SIPTarget, connection: SIPConnectionID? = nil) -> SIPResponseRouting.Destination? {
        var headers = SIPHeaders()
        headers.append(.via, via)
        let request = SIPRequest(method: .message, uri: SIPURI(host: "gw.example.com"), headers: headers)
        let received = SIPReceivedMessage(message: .request(request), source: source,
                                          local: SIPTarget(source.kind, host: "127.0.0.1", port: 5060), connection: connection)
        return SIPResponseRouting.destination(for: request, receivedOver: received)
    }

    @Test func reliableTransportsReuseTheConnectionAndFallBackToReceivedAtTheSentByPort() {
        let d = destination(via: "SIP/2.0/TCP client.example.com:5080;branch=z9hG4bK1;received=192.0.2.4",
                            source: SIPTarget(.tcp, host: "192.0.2.4", port: 40001), connection: SIPConnectionID(7))
        #expect(d == SIPResponseRouting.Destination(target: SIPTarget(.tcp, host: "192.0.2.4", port: 5080),
                                                    connection: SIPConnectionID(7)))
    }

    @Test func tlsWithoutAPortUses5061() {
        let d = destination(via: "SIP/2.0/TLS 192.0.2.4;branch=z9hG4bK1", source: SIPTarget(.tls, host: "192.0.2.4", port: 40001))
        #expect(d?.target == SIPTarget(.tls, host: "192.0.2.4", port: 5061))
    }

    @Test func maddrWinsOverReceivedOnUDP() {
        let d = destination(via: "SIP/2.0/UDP 192.0.2.4;branch=z9hG4bK1;maddr=239.255.255.1;received=192.0.2.9",
                            source: SIPTarget(.udp, host: "192.0.2.9", port: 5060))
        #expect(d?.target == SIPTarget(.udp, host: "239.255.255.1", port: 5060))
    }

    @Test func rportSendsToTheSourceAddressAndPort() {
        let d = destination(via: "SIP/2.0/UDP 10.0.0.1:5060;branch=z9hG4bK1;received=192.0.2.9;rport=33333",
                            source: SIPTarget(.udp, host: "192.0.2.9", port: 33333))
        #expect(d?.target == SIPTarget(.udp, host: "192.0.2.9", port: 33333))
    }

    @Test func receivedWithoutRportUsesTheSentByPortOr5060() {
        #expect(destination(via: "SIP/2.0/UDP 10.0.0.1:5070;branch=z9hG4bK1;received=192.0.2.9",
                            source: SIPTarget(.udp, host: "192.0.2.9", port: 1))?.target
                == SIPTarget(.udp, host: "192.0.2.9", port: 5070))
        #expect(destination(via: "SIP/2.0/UDP 10.0.0.1;branch=z9hG4bK1;received=192.0.2.9",
                            source: SIPTarget(.udp, host: "192.0.2.9", port: 1))?.target
                == SIPTarget(.udp, host: "192.0.2.9", port: 5060))
    }

    @Test func otherwiseTheSentByItself() {
        let d = destination(via: "SIP/2.0/UDP [2001:db8::1]:5070;branch=z9hG4bK1", source: SIPTarget(.udp, host: "2001:db8::1", port: 5070))
        #expect(d?.target == SIPTarget(.udp, host: "2001:db8::1", port: 5070))
    }

    @Test func transportsThisStackLacksGetNoDestination() {
        #expect(destination(via: "SIP/2.0/SCTP 192.0.2.4;branch=z9hG4bK1", source: SIPTarget(.udp, host: "192.0.2.4", port: 5060)) == nil)
    }
}
