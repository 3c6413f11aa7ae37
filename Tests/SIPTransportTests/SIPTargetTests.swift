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

/// RFC 5630 §3.1.1: requests inside a TLS dialog do not fall back to TCP or UDP.
@Suite struct SIPTargetSecurityTests {
    @Test func tcpOrUDPContactWithoutAPortBecomesTLSOnTheTLSPortInATLSDialog() throws {
        for kind in [SIPTransportKind.tcp, .udp] {
            let target = SIPTarget(kind, host: "192.0.2.7", port: 5060, serverName: "edge.contoso.com")
            let kept = try target.keepingSecurity(of: .tls, portWasGiven: false)
            #expect(kept.kind == .tls)
            #expect(kept.port == 5061)
            #expect(kept.host == "192.0.2.7")
            #expect(kept.serverName == "edge.contoso.com")
        }
    }

    @Test func tcpContactWithAPortInATLSDialogCannotBeKeptSecure() {
        let target = SIPTarget(.tcp, host: "192.0.2.7", port: 5070)
        #expect {
            try target.keepingSecurity(of: .tls, portWasGiven: true)
        } throws: { error in
            (error as? SIPTransportError)?.code == .downgradeRefused
        }
    }

    @Test func tlsTargetsAndDialogsNotOverTLSAreLeftAlone() throws {
        let tls = SIPTarget(.tls, host: "192.0.2.7", port: 5071)
        #expect(try tls.keepingSecurity(of: .tls, portWasGiven: true).port == 5071)
        let udp = SIPTarget(.udp, host: "192.0.2.7", port: 5070)
        #expect(try udp.keepingSecurity(of: .tcp, portWasGiven: true).kind == .udp)
        #expect(try udp.keepingSecurity(of: .udp, portWasGiven: false).kind == .udp)
    }
}
