import NIOCore
import Testing

@testable import UPnPDevice

/// SSDP discovery, UPnP Device Architecture 1.1 §1.2 (advertisement) and §1.3 (search).
@Suite struct SSDPTests {
    static let uuid = "2fac1234-31f8-11b4-a222-08002b34c003"
    static let advertiser = SSDPAdvertiser(
        deviceUUID: uuid, location: "http://127.0.0.1:8080/description.xml", maxAge: 1800,
        server: "Linux/6 UPnP/1.1 Test/1.0", bootID: 7, configID: 1)

    static func datagram(_ lines: [String]) -> [UInt8] {
        Array((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    static func search(_ target: String, host: String = "127.0.0.1:1900", mx: String? = "1") -> SSDPSearchRequest? {
        var lines = ["M-SEARCH * HTTP/1.1", "HOST: \(host)", "MAN: \"ssdp:discover\"", "ST: \(target)"]
        if let mx { lines.append("MX: \(mx)") }
        return SSDPMessage.parse(datagram(lines)).flatMap(SSDPSearchRequest.init)
    }

    /// §1.1.2: header field names are case-insensitive; lines end in CR LF.
    @Test func headerNamesAreCaseInsensitive() throws {
        let message = try #require(
            SSDPMessage.parse(Self.datagram(["M-SEARCH * HTTP/1.1", "host: 239.255.255.250:1900", "St: ssdp:all"])))
        #expect(message["HOST"] == "239.255.255.250:1900")
        #expect(message["st"] == "ssdp:all")
    }

    /// §1.3.3: ssdp:all is answered for the root device (3 entries) and its one service.
    @Test func searchAllAnswersEveryTarget() throws {
        let responses = Self.advertiser.responses(to: try #require(Self.search("ssdp:all")), date: nil)
        #expect(
            responses.compactMap { $0["ST"] } == [
                "upnp:rootdevice", "uuid:\(Self.uuid)", "urn:schemas-upnp-org:device:TelephonyServer:2",
                "urn:schemas-upnp-org:service:Presence:1",
            ])
        #expect(responses.compactMap { $0["USN"] }.contains("uuid:\(Self.uuid)::upnp:rootdevice"))
        for response in responses {
            #expect(response.startLine == "HTTP/1.1 200 OK")
            // §1.3.3: CACHE-CONTROL, EXT (empty), LOCATION, SERVER, ST, USN, BOOTID and CONFIGID.
            #expect(response["CACHE-CONTROL"] == "max-age=1800")
            #expect(response["EXT"] == "")
            #expect(response["LOCATION"] == "http://127.0.0.1:8080/description.xml")
            #expect(response["SERVER"]?.contains("UPnP/1.1") == true)
            #expect(response["BOOTID.UPNP.ORG"] == "7")
            #expect(response["CONFIGID.UPNP.ORG"] == "1")
        }
    }

    @Test(arguments: [
        ("upnp:rootdevice", "uuid:\(uuid)::upnp:rootdevice"),
        ("uuid:\(uuid)", "uuid:\(uuid)"),
        (
            "urn:schemas-upnp-org:device:TelephonyServer:2",
            "uuid:\(uuid)::urn:schemas-upnp-org:device:TelephonyServer:2"
        ),
        ("urn:schemas-upnp-org:service:Presence:1", "uuid:\(uuid)::urn:schemas-upnp-org:service:Presence:1"),
    ])
    func searchForOneTargetGetsOneAnswer(target: String, usn: String) throws {
        let responses = Self.advertiser.responses(to: try #require(Self.search(target)), date: nil)
        #expect(responses.count == 1)
        #expect(responses.first?["ST"] == target)
        #expect(responses.first?["USN"] == usn)
    }

    /// §1.3.2: a device answers a search for a lower version of its type, with ST as searched;
    /// a higher version or another type is not answered.
    @Test func olderVersionIsAnsweredNewerIsNot() throws {
        let older = Self.advertiser.responses(
            to: try #require(Self.search("urn:schemas-upnp-org:device:TelephonyServer:1")), date: nil)
        #expect(older.map { $0["ST"] } == ["urn:schemas-upnp-org:device:TelephonyServer:1"])
        #expect(older.first?["USN"] == "uuid:\(Self.uuid)::urn:schemas-upnp-org:device:TelephonyServer:2")
        for target in [
            "urn:schemas-upnp-org:device:TelephonyServer:3", "urn:schemas-upnp-org:service:Messaging:1",
            "uuid:00000000-0000-0000-0000-000000000000",
        ] {
            #expect(Self.advertiser.responses(to: try #require(Self.search(target)), date: nil).isEmpty)
        }
    }

    /// §1.3.2: MX is required on a multicast search and at least 1; values above 5 count as 5.
    @Test func multicastSearchNeedsMX() throws {
        #expect(Self.search("ssdp:all", host: "239.255.255.250:1900", mx: nil) == nil)
        #expect(Self.search("ssdp:all", host: "239.255.255.250:1900", mx: "0") == nil)
        #expect(Self.search("ssdp:all", host: "239.255.255.250:1900", mx: "120")?.maxWait == 5)
        #expect(Self.search("ssdp:all", host: "239.255.255.250:1900", mx: "2")?.isMulticast == true)
        // A unicast search is answered at once, MX or not.
        #expect(try #require(Self.search("ssdp:all", mx: nil)).maxWait == nil)
        #expect(try #require(Self.search("ssdp:all", mx: "3")).maxWait == nil)
    }

    /// §1.3.2: MAN must be "ssdp:discover"; other methods are not searches.
    @Test func otherRequestsAreNoSearch() throws {
        let wrongMAN = SSDPMessage.parse(
            Self.datagram(["M-SEARCH * HTTP/1.1", "HOST: 127.0.0.1:1900", "MAN: \"ssdp:other\"", "ST: ssdp:all"]))
        #expect(wrongMAN.flatMap(SSDPSearchRequest.init) == nil)
        let notify = SSDPMessage.parse(Self.datagram(["NOTIFY * HTTP/1.1", "NT: upnp:rootdevice", "NTS: ssdp:alive"]))
        #expect(notify != nil)
        #expect(notify.flatMap(SSDPSearchRequest.init) == nil)
    }

    @Test(arguments: [
        [UInt8](), [0xFF, 0xFE, 0x00], Array("\r\n\r\n".utf8),
        Array("M-SEARCH * HTTP/1.1\r\nno colon here\r\n\r\n".utf8),
        Array(repeating: UInt8(ascii: "A"), count: 10_000), Array("M-SEARCH * HTTP/1.1\r\n: empty name\r\n\r\n".utf8),
    ])
    func badDatagramsAreIgnored(bytes: [UInt8]) {
        #expect(SSDPMessage.parse(bytes).flatMap(SSDPSearchRequest.init) == nil)
    }

    @Test func tooManyHeadersAreIgnored() {
        let lines = ["M-SEARCH * HTTP/1.1"] + (0..<100).map { "X-\($0): y" }
        #expect(SSDPMessage.parse(Self.datagram(lines)) == nil)
    }

    /// §1.2.2: one ssdp:alive per target, to the multicast address, with the fields it lists.
    @Test func aliveAnnouncesEveryTarget() {
        let alive = Self.advertiser.aliveMessages()
        #expect(alive.count == 4)
        for message in alive {
            #expect(message.startLine == "NOTIFY * HTTP/1.1")
            #expect(message["HOST"] == "239.255.255.250:1900")
            #expect(message["NTS"] == "ssdp:alive")
            #expect(message["CACHE-CONTROL"] == "max-age=1800")
            #expect(message["LOCATION"] != nil && message["SERVER"] != nil && message["USN"] != nil)
        }
        #expect(Self.advertiser.reannounceInterval < 1800 / 2)
    }

    /// §1.2.3: ssdp:byebye carries NT, NTS and USN, and no LOCATION.
    @Test func byebyeLeavesEveryTarget() {
        let byebye = Self.advertiser.byebyeMessages()
        #expect(byebye.map { $0["NT"] } == Self.advertiser.aliveMessages().map { $0["NT"] })
        #expect(byebye.allSatisfy { $0["NTS"] == "ssdp:byebye" && $0["LOCATION"] == nil })
    }

    /// A message written and read back is the same message.
    @Test func writtenMessagesParseBack() throws {
        let message = try #require(Self.advertiser.aliveMessages().first)
        #expect(SSDPMessage.parse(message.bytes) == message)
    }
}

/// Searches answered per source: a burst, then a steady rate, each address on its own.
@Suite struct SSDPSearchLimiterTests {
    @Test func burstThenRatePerSource() {
        var limiter = SSDPSearchLimiter(burst: 3, perSecond: 2)
        let t0 = GENATests.t0
        var burst: [Bool] = []
        for _ in 0..<5 { burst.append(limiter.allows("192.0.2.1", now: t0)) }
        #expect(burst == [true, true, true, false, false])
        let other = limiter.allows("192.0.2.2", now: t0)
        let afterHalfASecond = limiter.allows("192.0.2.1", now: t0 + .milliseconds(500))
        let tooSoon = limiter.allows("192.0.2.1", now: t0 + .milliseconds(600))
        #expect(other && afterHalfASecond && !tooSoon)
        var later: [Bool] = []
        for _ in 0..<4 { later.append(limiter.allows("192.0.2.1", now: t0 + .seconds(60))) }
        #expect(later == [true, true, true, false])
    }

    @Test func aFullTableStartsAgain() {
        var limiter = SSDPSearchLimiter(burst: 1, perSecond: 0, maxSources: 2)
        let t0 = GENATests.t0
        let first = [limiter.allows("a", now: t0), limiter.allows("b", now: t0), limiter.allows("a", now: t0)]
        #expect(first == [true, true, false])
        let newcomer = limiter.allows("c", now: t0)
        let againAfterReset = limiter.allows("a", now: t0)
        #expect(newcomer && againAfterReset)
    }
}
