import PresenceGateway
import Testing
import UPnPDevice

/// `upnp:`: the UPnP Presence:1 device, off unless configured; mistakes at their line.
@Suite struct ConfigurationUPnPTests {
    @Test func withoutTheSectionThereIsNoDevice() throws {
        #expect(try GatewayConfiguration(yaml: ConfigurationTests.valid).upnp == nil)
        #expect(try GatewayConfiguration(yaml: GatewayConfiguration.defaultYAML).upnp == nil)
    }

    @Test func theSectionIsRead() throws {
        let config = try GatewayConfiguration(
            yaml: ConfigurationTests.valid + """
                upnp:
                  user: "sip:Carol@OMA.example;transport=udp"
                  max-registrations: 20
                  address: 192.0.2.10
                  port: 49152
                  uuid: "2fac1234-31f8-11b4-a222-08002b34c003"
                  friendly-name: Front desk
                  callback-networks: ["192.0.2.0/24", "fd00::/8"]
                  multicast-interface: 192.0.2.10
                """)
        let upnp = try #require(config.upnp)
        #expect(upnp.address == "192.0.2.10" && upnp.port == 49152 && upnp.ssdpPort == 1900)
        // The user as an address of record: what PUBLISH's entity and SUBSCRIBE's From carry.
        #expect(upnp.user == "sip:Carol@oma.example" && upnp.maxRegistrations == 20)
        #expect(upnp.maxRegistrationsPerControlPoint == 20)
        let device = upnp.deviceConfiguration
        #expect(device.identity.uuid == "2fac1234-31f8-11b4-a222-08002b34c003")
        #expect(device.identity.friendlyName == "Front desk")
        #expect(device.httpHost == "192.0.2.10" && device.ssdpHost == "0.0.0.0" && device.ssdpPort == 1900)
        #expect(device.eventing.callbackPolicy.allows(["http://192.0.2.77:4000/", "http://[fd00::5]/"]))
        #expect(!device.eventing.callbackPolicy.allows(["http://198.51.100.1/"]))
        #expect(device.multicastInterface == "192.0.2.10")
        // The description labels the payloads provisional, under UDA 1.1 §2.3's 128 characters.
        let label = try #require(device.identity.modelDescription)
        #expect(label.contains("provisional") && label.contains("urn:presencegateway:params:xml:ns:upnp-presence"))
        #expect(label.count < 128)
        let minimal = try GatewayConfiguration(yaml: ConfigurationTests.valid + "upnp: { user: sip:carol@oma.example, address: 127.0.0.1 }\n")
        #expect(minimal.upnp?.port == 0 && minimal.upnp?.maxRegistrations == 100)
        #expect(minimal.upnp?.maxRegistrationsPerControlPoint == 20)
        #expect(minimal.upnp?.uuid == nil)
    }

    @Test(arguments: [
        ("upnp: { address: 127.0.0.1 }\n", "needs user"),
        ("upnp: { user: carol, address: 127.0.0.1 }\n", "address of record"),
        // Its presence is published where the user lives: a domain of the gateway's.
        ("upnp: { user: sip:carol@elsewhere.example, address: 127.0.0.1 }\n", "no domain of the gateway's"),
        ("upnp: { user: sip:carol@oma.example, address: 127.0.0.1, max-registrations: 0 }\n", "whole number"),
        // One control point's share is below the device's whole.
        (
            "upnp: { user: sip:carol@oma.example, address: 127.0.0.1, max-registrations: 5, max-registrations-per-control-point: 6 }\n",
            "whole number"
        ),
        ("upnp: { user: sip:carol@oma.example, port: 1 }\n", "needs address"),
        ("upnp: { user: sip:carol@oma.example, address: gw.example }\n", "IP address"),
        ("upnp: { user: sip:carol@oma.example, address: 10.0.0.0/8 }\n", "IP address"),
        ("upnp: { user: sip:carol@oma.example, address: 127.0.0.1, ssdp-port: 0 }\n", "whole number"),
        ("upnp: { user: sip:carol@oma.example, address: 127.0.0.1, callback-networks: [\"10.0.0.0/40\"] }\n", "no network"),
        ("upnp: { user: sip:carol@oma.example, address: 127.0.0.1, colour: blue }\n", "unknown key 'colour'"),
        ("upnp: { user: sip:carol@oma.example, address: 127.0.0.1, multicast-interface: \"::1\" }\n", "IPv4 address"),
    ])
    func aMalformedSectionIsRefusedAtItsLine(_ line: String, _ words: String) {
        let error = #expect(throws: ConfigurationError.self) {
            try GatewayConfiguration(yaml: ConfigurationTests.valid + line)
        }
        #expect(error?.line == 6, "\(error?.description ?? "")")
        #expect(error?.message.contains(words) == true, "\(error?.description ?? "")")
    }
}
