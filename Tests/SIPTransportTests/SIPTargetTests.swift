import SIPTransport
import Testing

@Suite struct SIPTargetTests {
    @Test func ipv6TargetsBracketTheirHostInHostPort() {
        #expect(SIPTarget(.udp, host: "::1", port: 5060).hostPort == "[::1]:5060")
        #expect(SIPTarget(.tls, host: "127.0.0.1", port: 5061).hostPort == "127.0.0.1:5061")
    }

    @Test func viaTransportTokensAreCaseInsensitiveAndClosed() {
        #expect(SIPTransportKind(viaToken: "tls") == .tls)
        #expect(SIPTransportKind(viaToken: "SCTP") == nil)
        #expect(SIPTransportKind.tls.defaultPort == 5061)
        #expect(!SIPTransportKind.udp.isReliable)
    }
}
