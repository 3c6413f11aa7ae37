import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import PeerTestSupport
import Testing
import UPnPDevice

/// The device on real sockets (127.0.0.1, free ports): SSDP over UDP, HTTP for descriptions,
/// control and eventing.
@Suite struct DeviceSocketTests {
    static func search(_ target: String, port: Int) -> [UInt8] {
        Array(
            "M-SEARCH * HTTP/1.1\r\nHOST: 127.0.0.1:\(port)\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\nST: \(target)\r\n\r\n"
                .utf8)
    }

    /// UDA 1.1 §1.2.2 alive at start, §1.3.3 unicast answers to M-SEARCH sent to the socket, bad
    /// datagrams ignored, §1.2.3 byebye at stop.
    @Test func ssdpAnnouncesAnswersAndLeaves() async throws {
        let announcements = try await UDPProbe()
        let searcher = try await UDPProbe()
        let leaving = try await withDevice(announceTo: announcements.port) { device in
            let alive = try await announcements.take(count: 4, seconds: 5)
            #expect(alive.count == 4)
            #expect(alive.allSatisfy { $0.hasPrefix("NOTIFY * HTTP/1.1\r\n") && $0.contains("NTS: ssdp:alive\r\n") })
            let port = try #require(device.ssdpAddress.port)
            try await searcher.send([0xFF, 0x00, 0x13], to: port)
            try await searcher.send(Array("GET / HTTP/1.1\r\n\r\n".utf8), to: port)
            try await searcher.send(Self.search("ssdp:all", port: port), to: port)
            let answers = try await searcher.take(count: 4, seconds: 5)
            #expect(answers.count == 4)
            #expect(answers.allSatisfy { $0.contains("LOCATION: \(device.descriptionURL)\r\n") })
            try await searcher.send(Self.search("urn:schemas-upnp-org:service:Presence:1", port: port), to: port)
            let one = try await searcher.take(count: 1, seconds: 5)
            #expect(one.count == 1)
            #expect(one.first?.contains("ST: urn:schemas-upnp-org:service:Presence:1\r\n") == true)
            return announcements
        }
        let byebye = try await leaving.take(count: 4, seconds: 5)
        #expect(byebye.count == 4)
        #expect(byebye.allSatisfy { $0.contains("NTS: ssdp:byebye\r\n") })
        await announcements.close()
        await searcher.close()
    }

    static func request(
        _ url: String, method: HTTPMethod, headers: [(String, String)] = [], body: String? = nil
    ) async throws -> (status: Int, headers: HTTPHeaders, body: String) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), response.headers, String(buffer: bytes))
    }

    static func soap(_ action: String, _ arguments: String = "") -> String {
        """
        <?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" \
        s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body>\
        <u:\(action) xmlns:u="urn:schemas-upnp-org:service:Presence:1">\(arguments)</u:\(action)></s:Body></s:Envelope>
        """
    }

    static func soapAction(_ action: String) -> [(String, String)] {
        [("SOAPACTION", "\"urn:schemas-upnp-org:service:Presence:1#\(action)\""), ("CONTENT-TYPE", "text/xml")]
    }

    /// UDA 1.1 §2.3, §2.5: the descriptions over HTTP GET; other paths 404.
    @Test func descriptionsAreServed() async throws {
        try await withDevice { device in
            let base = "http://127.0.0.1:\(device.httpAddress.port ?? 0)"
            let description = try await Self.request(device.descriptionURL, method: .GET)
            #expect(description.status == 200)
            #expect(description.headers["content-type"].first?.hasPrefix("text/xml") == true)
            #expect(description.body.contains("urn:schemas-upnp-org:device:TelephonyServer:2"))
            let scpd = try await Self.request(base + "/presence.xml", method: .GET)
            #expect(scpd.status == 200 && scpd.body.contains("<name>AuthorizePresenceProactive</name>"))
            #expect(try await Self.request(base + "/nothing", method: .GET).status == 404)
            #expect(try await Self.request(base + "/control/presence", method: .GET).status == 405)
        }
    }

    /// UDA 1.1 §3.2.2: 200 with the OUT arguments; 500 with a UPnPError fault; an oversized body 413.
    @Test func controlAnswersAndFaults() async throws {
        try await withDevice { device in
            let url = "http://127.0.0.1:\(device.httpAddress.port ?? 0)/control/presence"
            let ok = try await Self.request(
                url, method: .POST, headers: Self.soapAction("GetPresence"), body: Self.soap("GetPresence"))
            #expect(ok.status == 200)
            #expect(
                ok.body.contains("GetPresenceResponse")
                    && ok.body.contains("<UserPresence>&lt;presence/&gt;</UserPresence>"))
            let unknown = try await Self.request(
                url, method: .POST, headers: Self.soapAction("Reboot"), body: Self.soap("Reboot"))
            #expect(unknown.status == 500)
            #expect(unknown.body.contains("<errorCode>401</errorCode>"))
            let notXML = try await Self.request(
                url, method: .POST, headers: Self.soapAction("UpdatePresence"),
                body: Self.soap("UpdatePresence", "<UpdatedUserPresence>&lt;oops</UpdatedUserPresence>"))
            #expect(notXML.status == 500 && notXML.body.contains("<errorCode>600</errorCode>"))
            let garbage = try await Self.request(
                url, method: .POST, headers: Self.soapAction("GetPresence"), body: "\u{0}\u{1}<<")
            #expect(garbage.status == 400)
            let huge = String(repeating: "x", count: 80_000)
            let tooLarge = try await Self.request(
                url, method: .POST, headers: Self.soapAction("GetPresence"), body: huge)
            #expect(tooLarge.status == 413)
        }
    }

    /// RFC 9110 §10.1.1: `Expect: 100-continue` gets 100 Continue before the body when the body
    /// fits, and 413 at once when the announced length is over the limit.
    @Test func expectContinue() async throws {
        try await withDevice { device in
            let port = try #require(device.httpAddress.port)
            let body = DeviceSocketTests.soap("GetPresence")
            let fits = try await RawConnection(port: port)
            try await fits.send(
                "POST /control/presence HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n"
                    + "SOAPACTION: \"urn:schemas-upnp-org:service:Presence:1#GetPresence\"\r\n"
                    + "Expect: 100-continue\r\n\r\n")
            #expect(try await fits.received(containing: "\r\n\r\n", seconds: 3).hasPrefix("HTTP/1.1 100 Continue\r\n"))
            try await fits.send(body)
            let answered = try await fits.received(containing: "GetPresenceResponse", seconds: 3)
            #expect(answered.contains("HTTP/1.1 200 OK\r\n") && answered.contains("GetPresenceResponse"))
            await fits.close()
            let tooLarge = try await RawConnection(port: port)
            try await tooLarge.send(
                "POST /control/presence HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\n"
                    + "Expect: 100-continue\r\n\r\n")
            #expect(try await tooLarge.received(containing: "\r\n\r\n", seconds: 3).hasPrefix("HTTP/1.1 413 "))
            await tooLarge.close()
        }
    }

    /// UDA 1.1 §4.1.2 to §4.1.4 on the wire: SID and TIMEOUT granted; 412 for a callback outside
    /// the allowed networks and for unknown SIDs; 400 for SID with NT.
    @Test func eventSubscriptionStatuses() async throws {
        try await withDevice { device in
            let url = "http://127.0.0.1:\(device.httpAddress.port ?? 0)/event/presence"
            let subscribed = try await Self.request(
                url, method: .SUBSCRIBE,
                headers: [("CALLBACK", "<http://127.0.0.1:9/none>"), ("NT", "upnp:event"), ("TIMEOUT", "Second-1800")])
            #expect(subscribed.status == 200)
            let sid = try #require(subscribed.headers["SID"].first)
            #expect(sid.hasPrefix("uuid:"))
            #expect(subscribed.headers["TIMEOUT"].first == "Second-1800")
            let renewed = try await Self.request(
                url, method: .SUBSCRIBE, headers: [("SID", sid), ("TIMEOUT", "Second-600")])
            #expect(renewed.status == 200 && renewed.headers["TIMEOUT"].first == "Second-600")
            let outside = try await Self.request(
                url, method: .SUBSCRIBE, headers: [("CALLBACK", "<http://203.0.113.9/x>"), ("NT", "upnp:event")])
            #expect(outside.status == 412)
            let both = try await Self.request(url, method: .SUBSCRIBE, headers: [("SID", sid), ("NT", "upnp:event")])
            #expect(both.status == 400)
            #expect(try await Self.request(url, method: .UNSUBSCRIBE, headers: [("SID", sid)]).status == 200)
            #expect(try await Self.request(url, method: .UNSUBSCRIBE, headers: [("SID", sid)]).status == 412)
        }
    }
}

/// GENA event messages on the wire (UDA 1.1 §4.3.2).
@Suite struct DeviceEventingTests {
    static func subscribe(_ device: PresenceDevice, callback: String) async throws -> String {
        let url = "http://127.0.0.1:\(device.httpAddress.port ?? 0)/event/presence"
        let response = try await DeviceSocketTests.request(
            url, method: .SUBSCRIBE, headers: [("CALLBACK", callback), ("NT", "upnp:event")])
        return try #require(response.headers["SID"].first)
    }

    /// The initial event (SEQ 0, every evented variable) right after SUBSCRIBE, then SEQ 1 for a
    /// change; NT upnp:event, NTS upnp:propchange, the SID; a subscriber that never answers does
    /// not hold up another one.
    @Test func initialEventThenChangesWhileAnotherSubscriberIsSilent() async throws {
        let backend = InMemoryPresenceBackend()
        let silent = try await NotifyCollector(silent: true)
        let collector = try await NotifyCollector()
        try await withDevice(backend: backend) { device in
            _ = try await Self.subscribe(device, callback: silent.callback)
            let sid = try await Self.subscribe(device, callback: collector.callback)
            let initial = try await collector.wait(for: 1, seconds: 3)
            try #require(initial.count == 1)
            #expect(initial[0].method == "NOTIFY")
            #expect(initial[0].headers["NT"] == "upnp:event" && initial[0].headers["NTS"] == "upnp:propchange")
            #expect(initial[0].headers["SID"] == sid && initial[0].headers["SEQ"] == "0")
            for name in ["UserPresenceInfo", "PresenceOfContactsUpdate", "Watcher"] {
                #expect(initial[0].body.contains("<\(name)"))
            }
            await backend.updatePresence("<presence status='busy'/>")
            let both = try await collector.wait(for: 2, seconds: 3)
            try #require(both.count == 2, "the second event came late: the silent subscriber held it up")
            #expect(both[1].headers["SEQ"] == "1")
            #expect(
                both[1].body.contains("&lt;presence status='busy'/&gt;")
                    || both[1].body.contains("&lt;presence status=&apos;busy&apos;/&gt;"))
            #expect(!both[1].body.contains("Watcher"))
        }
        await silent.close()
        await collector.close()
    }

    /// UDA 1.1 §4.3.2: an event message the subscriber could not be reached for (nothing
    /// listens yet: connection refused) past one NOTIFY's time-out is tried again within 30 s,
    /// and arrives once it listens.
    @Test func anUnreachableSubscriberGetsTheEventOnceItListens() async throws {
        let port = Int(try LoopbackPorts.free())
        try await withDevice(notifyTimeoutSeconds: 1) { device in
            _ = try await Self.subscribe(device, callback: "<http://127.0.0.1:\(port)/notify>")
            try await Task.sleep(for: .milliseconds(1_800))
            let late = try await NotifyCollector(port: port)
            let initial = try await late.wait(for: 1, seconds: 10)
            #expect(initial.first?.headers["SEQ"] == "0")
            await late.close()
        }
    }

    /// UDA 1.1 §4.3.2: a subscriber that answered an event message with an error is not sent it
    /// again (it may no longer know the SID; the subscription still ends only by expiry).
    @Test func anEventAnsweredWithAnErrorIsNotSentAgain() async throws {
        let refusing = try await NotifyCollector(status: .preconditionFailed)
        try await withDevice { device in
            _ = try await Self.subscribe(device, callback: refusing.callback)
            #expect(try await refusing.wait(for: 1, seconds: 10).count == 1)
            try await Task.sleep(for: .milliseconds(600))
            #expect(try await refusing.wait(for: 2, seconds: 0.1).count == 1)
        }
        await refusing.close()
    }

    /// ISO/IEC 29341-26-16 §5.4: changes within the moderation interval are coalesced; the last
    /// value goes out once the interval has passed. After UNSUBSCRIBE nothing more is sent.
    @Test func moderationAndUnsubscribe() async throws {
        let backend = InMemoryPresenceBackend()
        let collector = try await NotifyCollector()
        let eventing = GENAConfiguration(moderationInterval: .milliseconds(500))
        try await withDevice(backend: backend, eventing: eventing) { device in
            let sid = try await Self.subscribe(device, callback: collector.callback)
            _ = try await collector.wait(for: 1, seconds: 3)
            for n in 1...5 { await backend.updatePresence("<p n='\(n)'/>") }
            let events = try await collector.wait(for: 3, seconds: 2)
            #expect(events.count == 3, "initial, the first change, then the last after 500 ms")
            #expect(
                events.last?.body.contains("n=&apos;5&apos;") == true || events.last?.body.contains("n='5'") == true)
            let url = "http://127.0.0.1:\(device.httpAddress.port ?? 0)/event/presence"
            _ = try await DeviceSocketTests.request(url, method: .UNSUBSCRIBE, headers: [("SID", sid)])
            await backend.updatePresence("<p n='6'/>")
            try await Task.sleep(for: .milliseconds(700))
            #expect(try await collector.wait(for: 4, seconds: 0.1).count == 3)
        }
        await collector.close()
    }
}
