import Testing

@testable import UPnPDevice

/// Whatever arrives, the parsers return a value or a refusal, never trap: random bytes and
/// mutated valid messages through SSDP, SOAP and GENA parsing.
@Suite struct GarbageInputTests {
    /// xorshift64*: the same inputs on every run.
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
        mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
    }

    /// Flips, drops and inserts bytes of `valid`.
    static func mutations(of valid: [UInt8], count: Int, seed: UInt64) -> [[UInt8]] {
        var random = Random(state: seed)
        return (0..<count).map { _ in
            var bytes = valid
            for _ in 0..<(1 + Int(random.next() % 8)) where !bytes.isEmpty {
                let at = Int(random.next() % UInt64(bytes.count))
                switch random.next() % 3 {
                case 0: bytes[at] = UInt8(truncatingIfNeeded: random.next())
                case 1: bytes.remove(at: at)
                default:
                    let specials = Array(":<>\r\n\"& ".utf8)
                    bytes.insert(specials[Int(random.next() % UInt64(specials.count))], at: at)
                }
            }
            return bytes
        }
    }

    @Test func ssdpSurvivesGarbage() {
        var random = Random(state: 0x5EED)
        let search = Array(
            "M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 2\r\nST: ssdp:all\r\n\r\n"
                .utf8)
        let inputs =
            (0..<500).map { _ in random.bytes(Int(random.next() % 600)) }
            + Self.mutations(of: search, count: 2000, seed: 7)
        let advertiser = SSDPTests.advertiser
        var answered = 0
        for input in inputs {
            guard let message = SSDPMessage.parse(input), let request = SSDPSearchRequest(message) else { continue }
            let responses = advertiser.responses(to: request, date: nil)
            #expect(responses.count <= 4)
            answered += responses.isEmpty ? 0 : 1
        }
        #expect(answered > 0, "some mutations are still valid searches")
    }

    @Test func soapSurvivesGarbage() {
        let valid = SOAPTests.envelope(
            "AuthorizePresenceProactive",
            "<UserPresenceInfo>&lt;p/&gt;</UserPresenceInfo><Expire>5</Expire><WatcherList>&lt;w/&gt;</WatcherList>")
        let action = "\"urn:schemas-upnp-org:service:Presence:1#AuthorizePresenceProactive\""
        var random = Random(state: 0xC0FFEE)
        let inputs =
            (0..<300).map { _ in random.bytes(Int(random.next() % 400)) }
            + Self.mutations(of: valid, count: 2000, seed: 11)
        for input in inputs {
            switch SOAPCodec.parseRequest(body: input, soapAction: action) {
            case .success(let request):
                #expect(request.arguments.count == 3)
            case .failure:
                break
            }
        }
    }

    @Test func genaSurvivesGarbage() {
        var random = Random(state: 0x6E4A)
        for _ in 0..<2000 {
            let value = String(decoding: random.bytes(Int(random.next() % 40)), as: UTF8.self)
            let names = ["CALLBACK", "NT", "SID", "TIMEOUT"]
            let headers = (0..<Int(random.next() % 4)).map { _ in (name: names[Int(random.next() % 4)], value: value) }
            let method = random.next() % 2 == 0 ? "SUBSCRIBE" : "UNSUBSCRIBE"
            if case .success(.subscribe(let callbacks, _)) = GENARequest.parse(method: method, headers: headers) {
                #expect(!callbacks.isEmpty)
                _ = CallbackPolicy().allows(callbacks)
            }
            _ = GENATimeout(value)
            _ = IPNetwork(value)
        }
    }
}
