import SIPTransport
import Testing

@Suite struct DNSResolvConfTests {
    @Test func nameserverLinesAreReadAndEverythingElseIgnored() {
        let text = """
            # generated
            search example.com
            nameserver 192.0.2.53
            nameserver\t2001:db8::53   # second
            ; comment
            nameserver resolver.example.com
            options ndots:2
            nameserver 198.51.100.1
            nameserver 203.0.113.1
            """
        #expect(DNSResolvConf(parsing: text).nameservers == ["192.0.2.53", "2001:db8::53", "198.51.100.1"])
    }

    @Test func aFileWithoutNameserversGivesNoConfiguration() {
        #expect(throws: SIPTransportError.self) { try DNSClient.Configuration(resolvConf: DNSResolvConf(parsing: "search x\n")) }
    }

    @Test func anUnreadableFileIsAConfigurationError() {
        let error = #expect(throws: SIPTransportError.self) {
            try DNSClient.Configuration.system(resolvConfPath: "/nonexistent/presence-gateway/resolv.conf")
        }
        #expect(error?.code == .dnsConfiguration)
    }

    @Test func configurationUsesPort53() throws {
        let configuration = try DNSClient.Configuration(resolvConf: DNSResolvConf(parsing: "nameserver 192.0.2.53"))
        #expect(configuration.nameservers.map(\.port) == [53])
    }
}
