import SIPMessages
import SIPTransport
import Testing

/// RFC 3261 §18.2.1 and RFC 3581 §4 applied to a received request's top Via.
@Suite struct SIPReceivedViaTests {
    private func headers(_ vias: String...) -> SIPHeaders {
        SIPHeaders(vias.map { SIPHeaderField(name: .via, value: $0) })
    }

    @Test func domainSentByGetsReceived() throws {
        var h = headers("SIP/2.0/UDP pc33.example.com;branch=z9hG4bK776asdhds")
        #expect(try h.stampTopVia(source: SIPTarget(.udp, host: "192.0.2.1", port: 5060)))
        let top = try #require(try h.via.first)
        #expect(top.received == "192.0.2.1")
        #expect(top.rport == nil)
    }

    @Test func sentByEqualToTheSourceAddressIsLeftAlone() throws {
        var h = headers("SIP/2.0/UDP 192.0.2.1:5070;branch=z9hG4bK1")
        #expect(try !h.stampTopVia(source: SIPTarget(.udp, host: "192.0.2.1", port: 40000)))
        #expect(try h.via.first?.received == nil)
    }

    @Test func emptyRportIsFilledAndReceivedAddedEvenWhenTheAddressMatches() throws {
        var h = headers("SIP/2.0/UDP 192.0.2.1:5070;rport;branch=z9hG4bK1")
        try h.stampTopVia(source: SIPTarget(.udp, host: "192.0.2.1", port: 40000))
        let top = try #require(try h.via.first)
        #expect(top.rport == .port(40000))
        #expect(top.received == "192.0.2.1")
    }

    @Test func ipv6SentByIsComparedAsAnAddress() throws {
        var h = headers("SIP/2.0/TCP [::1]:5070;branch=z9hG4bK1")
        #expect(try !h.stampTopVia(source: SIPTarget(.tcp, host: "0:0:0:0:0:0:0:1", port: 40000)))
        var other = headers("SIP/2.0/TCP [2001:db8::1]:5070;branch=z9hG4bK1")
        try other.stampTopVia(source: SIPTarget(.tcp, host: "::1", port: 40000))
        #expect(try other.via.first?.received == "::1")
    }

    @Test func onlyTheTopViaChangesAndLowerViasKeepTheirValues() throws {
        var h = headers("SIP/2.0/UDP proxy.example.com;branch=z9hG4bK2, SIP/2.0/UDP 192.0.2.5;branch=z9hG4bK1",
                        "SIP/2.0/UDP 192.0.2.6;branch=z9hG4bK0")
        try h.stampTopVia(source: SIPTarget(.udp, host: "192.0.2.3", port: 5060))
        let vias = try h.via
        #expect(vias.count == 3)
        #expect(vias[0].received == "192.0.2.3")
        #expect(vias[1].received == nil && vias[1].host == "192.0.2.5")
        #expect(h.fields[1].value == "SIP/2.0/UDP 192.0.2.6;branch=z9hG4bK0")
    }
}
