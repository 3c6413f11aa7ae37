/// The gateway's own cost, in process, on one core: no sockets, so it measures what
/// the gateway adds per message — parsing the incoming SIP bytes, the bridging core with its
/// mapping through the tables, and writing the outgoing message — and what it keeps per bridged
/// subscription pair.
///
///     swift run -c release gateway-bench [SECONDS] [PAIRS]
///
/// - relay, enterprise → OMA: a category BENOTIFY of an enterprise presentity in, the mapped PIDF
///   NOTIFY to the OMA watcher out (flow 2);
/// - relay, OMA → enterprise: a PIDF NOTIFY from the OMA presence server in, the categories
///   BENOTIFY to the enterprise watcher out (flow 1);
/// - relay into a resource list (RFC 4662): a member's BENOTIFY in, the list's partial NOTIFY
///   (RLMI and that member's PIDF) out, for a list of 100 members;
/// - relay out of an OMA resource list (RFC 4662, `oma: rls`): the RLS's NOTIFY with all 100
///   members of an enterprise watcher's list changed (RLMI and 100 PIDF parts) in, one batch
///   BENOTIFY with their 100 categories documents out;
/// - memory: PAIRS (default 100,000) OMA watcher ↔ enterprise subscription pairs established
///   through the core, resident memory before and after (/proc/self/statm), per pair.
/// The states alternate so that every message is a real change (unchanged states are not sent).
/// Throughput over sockets with sipp is measured separately (docs/performance.md).
import BenchSupport
import Foundation
import MSPresenceEvents
import NIOCore
import PresenceDocuments
import PresenceGateway
import PresenceMapping
import SIPMessages

@main
enum GatewayBench {
    static func main() async throws {
        if CommandLine.arguments.dropFirst().first == "state-file" {
            return try await stateFile(CommandLine.arguments.dropFirst(2))
        }
        if CommandLine.arguments.dropFirst().first == "state" {
            return try await state(CommandLine.arguments.dropFirst(2))
        }
        if CommandLine.arguments.dropFirst().first == "threads" {
            return try threads(CommandLine.arguments.dropFirst(2))
        }
        let arguments = CommandLine.arguments.dropFirst()
        let seconds = arguments.first.flatMap(Double.init) ?? 2.0
        let pairs = arguments.dropFirst().first.flatMap(Int.init) ?? 100_000
        let configuration = try GatewayConfiguration(
            yaml: GatewayConfiguration.defaultYAML.replacingOccurrences(
                of: #"publish-to-oma: true"#, with: #"publish-to-oma: false"#))
        let mapper = PresenceMapper(tables: try MappingTables.builtIn())
        print("gateway-bench: \(seconds) s per relay measurement, one thread; \(pairs) pairs for memory")

        var enterpriseToOMA = try Bridge.flow2(configuration: configuration, mapper: mapper, pairs: 1000)
        let e2o = rate(seconds) { enterpriseToOMA.relayOne() }
        print("relay enterprise BENOTIFY -> OMA PIDF NOTIFY:  \(pad(e2o)) msg/s  (parse + map + serialize)")
        var omaToEnterprise = try Bridge.flow1(configuration: configuration, mapper: mapper, pairs: 1000)
        let o2e = rate(seconds) { omaToEnterprise.relayOne() }
        print("relay OMA PIDF NOTIFY -> enterprise BENOTIFY:  \(pad(o2e)) msg/s  (parse + map + serialize)")

        var list = try Bridge.listFlow(configuration: configuration, mapper: mapper, members: 100)
        let listRate = rate(seconds) { list.relayOne() }
        print(
            "relay enterprise BENOTIFY -> OMA list NOTIFY:  \(pad(listRate)) msg/s  "
                + "(RFC 4662, one member of 100 changed: RLMI + its PIDF)")
        list = Bridge(core: try Bridge.makeCore(configuration, mapper), inputs: [])
        var rlmi = try Bridge.omaListFlow(configuration: configuration, mapper: mapper, members: 100)
        let rlmiRate = rate(seconds) { rlmi.relayOne() }
        print(
            "relay OMA list NOTIFY -> enterprise BENOTIFY:  \(pad(rlmiRate)) msg/s  "
                + "(RFC 4662, 100 members changed: RLMI + 100 PIDF in, 100 categories out; "
                + String(format: "%.1f", 1e6 / rlmiRate / 100) + " us per member)")
        rlmi = Bridge(core: try Bridge.makeCore(configuration, mapper), inputs: [])

        // The relay inputs are the bench's, not the gateway's: none are made for this core.
        enterpriseToOMA = Bridge(core: try Bridge.makeCore(configuration, mapper), inputs: [])
        omaToEnterprise = Bridge(core: try Bridge.makeCore(configuration, mapper), inputs: [])
        ProcessMemory.trimHeap()
        let before = ProcessMemory.residentBytes()
        let heapBefore = ProcessMemory.heapInUse()
        let held = try Bridge.flow2(configuration: configuration, mapper: mapper, pairs: pairs, keepInputs: false)
        let after = ProcessMemory.residentBytes()
        let heapAfter = ProcessMemory.heapInUse()
        ProcessMemory.trimHeap()
        let trimmed = ProcessMemory.residentBytes()
        let perPair = Double(after - before) / Double(pairs)
        let perPairTrimmed = Double(trimmed - before) / Double(pairs)
        print(
            "memory: \(pairs) bridged pairs (OMA watch + enterprise subscription): \(String(format: "%.0f", perPair)) bytes/pair "
                + "(RSS \(before / 1_048_576) -> \(after / 1_048_576) MiB); \(String(format: "%.0f", perPairTrimmed)) bytes/pair "
                + "after malloc_trim (RSS \(trimmed / 1_048_576) MiB: live state without freed heap the allocator kept); "
                + "target <= 2048  \(perPair <= 2048 ? "MET" : perPairTrimmed <= 2048 ? "MET after trim only" : "NOT MET")"
        )
        print(
            "layout: inline bytes (stride) of the core's state: "
                + GatewayCore.stateLayout.map { "\($0.name) \($0.stride)" }.joined(separator: ", "))
        print(
            "memory: live heap allocations (malloc_stats in use): \(String(format: "%.0f", Double(heapAfter - heapBefore) / Double(pairs))) bytes/pair"
        )
        held.keepAlive()
    }

    /// A core with `pairs` established subscriptions and the messages to drive it.
    struct Bridge {
        var core: GatewayCore
        /// Per pair, the wire bytes of the two alternating incoming notifications.
        var inputs: [([UInt8], [UInt8])]
        var next = 0
        var flip = false
        var sent = 0
        /// An RLS's notifications (RFC 4662 §5.2): the RLMI version each must carry, one higher
        /// than the last, written into the input's 10 digits after `version="`.
        var listVersion: UInt32?
        let now = NIODeadline.uptimeNanoseconds(1_000_000_000)

        static func makeCore(_ configuration: GatewayConfiguration, _ mapper: PresenceMapper, shard: Int = 0) throws
            -> GatewayCore
        {
            GatewayCore(
                configuration: configuration, mapper: mapper,
                contacts: [
                    .oma: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5060")),
                    .enterprise: SIPAddress(uri: try SIPURI("sip:gw@127.0.0.1:5061;transport=tcp")),
                ],
                ids: .random(shard: shard))
        }

        /// Flow 2 pairs: OMA watcher i subscribes (PIDF) to enterprise presentity i, for i from
        /// `first`, in the core of `shard`. `keepInputs` false: the pairs only, for measuring
        /// what the core holds.
        static func flow2(
            configuration: GatewayConfiguration, mapper: PresenceMapper, pairs: Int, keepInputs: Bool = true,
            journaling: Bool = false, shard: Int = 0, first: Int = 0
        ) throws -> Bridge {
            var core = try makeCore(configuration, mapper, shard: shard)
            core.journaling = journaling
            var inputs: [([UInt8], [UInt8])] = []
            if keepInputs { inputs.reserveCapacity(pairs) }
            let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
            for i in first..<first + pairs {
                let subscribe = try message(
                    """
                    SUBSCRIBE sip:p\(i)@contoso.com SIP/2.0\r
                    Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKs\(i)\r
                    Max-Forwards: 69\r
                    From: <sip:w\(i)@oma.example>;tag=w\(i)\r
                    To: <sip:p\(i)@contoso.com>\r
                    Call-ID: s\(i)@oma\r
                    CSeq: 1 SUBSCRIBE\r
                    Contact: <sip:w\(i)@127.0.0.1:5070>\r
                    Event: presence\r
                    Accept: application/pidf+xml\r
                    Expires: 3600\r
                    Content-Length: 0\r
                    \r\n
                    """)
                let watcher = WatcherIdentity(uri: "sip:w\(i)@oma.example", network: .federated)
                let actions = core.receive(subscribe, id: UInt64(i), from: .oma, watcher: watcher, now: now)
                guard
                    case .send(let out, _, let context)? = actions.first(where: {
                        if case .send = $0 { true } else { false }
                    })
                else {
                    fatalError("no enterprise SUBSCRIBE")
                }
                let document = state(uri: "sip:p\(i)@contoso.com", availability: 3500)
                let body = BatchSubscribeResponse(list: RLMIList(uri: "sip:w\(i)@oma.example"), categories: [document])
                    .multipart(boundary: "b")
                let ok = SIPResponse(
                    replyingTo: out, statusCode: 200, toTag: "e\(i)",
                    headers: [
                        (.contact, "<sip:127.0.0.1:5062;transport=tcp>"), (.expires, "3600"),
                        (.contentType, BatchCategorySubscription.multipartContentType(boundary: "b")),
                        (.event, "presence"),
                        (.subscriptionState, "active;expires=3600"), (.msPiggybackCSeq, "1"),
                    ], body: body.bytes)
                _ = core.receive(ok, to: out, context: context, now: now)
                guard let from = try out.headers.from, let tag = from.tag, let callID = out.headers.callID else {
                    fatalError("bad SUBSCRIBE")
                }
                func benotify(_ availability: UInt32) -> [UInt8] {
                    let body = state(uri: "sip:p\(i)@contoso.com", availability: availability).serialized()
                    let head =
                        "BENOTIFY sip:gw@127.0.0.1:5061;transport=tcp SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKb\(i)\r\n"
                        + "Max-Forwards: 70\r\nFrom: <sip:w\(i)@oma.example>;tag=e\(i)\r\nTo: <sip:w\(i)@oma.example>;tag=\(tag)\r\n"
                        + "Call-ID: \(callID)\r\nCSeq: 2 BENOTIFY\r\nEvent: presence\r\nSubscription-State: active;expires=3000\r\n"
                        + "Require: eventlist\r\nContent-Type: application/msrtc-event-categories+xml\r\nContent-Length: \(body.count)\r\n\r\n"
                    return Array(head.utf8) + body
                }
                if keepInputs { inputs.append((benotify(6500), benotify(15500))) }
            }
            guard core.counts.omaWatches == pairs else {
                fatalError("only \(core.counts.omaWatches) of \(pairs) pairs established")
            }
            return Bridge(core: core, inputs: inputs)
        }

        /// One OMA watcher subscribed to a resource list (RFC 4662) of `members` enterprise
        /// presentities, each member's dialog answered; the inputs change one member at a time.
        static func listFlow(configuration: GatewayConfiguration, mapper: PresenceMapper, members: Int) throws -> Bridge
        {
            var configuration = configuration
            configuration.resourceLists["sip:team@contoso.com"] = (0..<members).map { "sip:m\($0)@contoso.com" }
            var core = try makeCore(configuration, mapper)
            let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
            let subscribe = try message(
                """
                SUBSCRIBE sip:team@contoso.com SIP/2.0\r
                Via: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKlist\r
                Max-Forwards: 69\r
                From: <sip:w@oma.example>;tag=w\r
                To: <sip:team@contoso.com>\r
                Call-ID: list@oma\r
                CSeq: 1 SUBSCRIBE\r
                Contact: <sip:w@127.0.0.1:5070>\r
                Event: presence\r
                Supported: eventlist\r
                Accept: multipart/related, application/rlmi+xml, application/pidf+xml\r
                Expires: 3600\r
                Content-Length: 0\r
                \r\n
                """)
            let watcher = WatcherIdentity(uri: "sip:w@oma.example", network: .federated)
            var inputs: [([UInt8], [UInt8])] = []
            for case .send(let out, _, let context) in core.receive(
                subscribe, id: 0, from: .oma, watcher: watcher, now: now)
            {
                let uri = out.uri.description
                let body = BatchSubscribeResponse(
                    list: RLMIList(uri: "sip:w@oma.example"), categories: [state(uri: uri, availability: 3500)]
                ).multipart(boundary: "b")
                let ok = SIPResponse(
                    replyingTo: out, statusCode: 200, toTag: "e",
                    headers: [
                        (.contact, "<sip:127.0.0.1:5062;transport=tcp>"), (.expires, "3600"),
                        (.contentType, BatchCategorySubscription.multipartContentType(boundary: "b")),
                        (.event, "presence"), (.subscriptionState, "active;expires=3600"), (.msPiggybackCSeq, "1"),
                    ], body: body.bytes)
                _ = core.receive(ok, to: out, context: context, now: now)
                guard let tag = try out.headers.from?.tag, let callID = out.headers.callID else {
                    fatalError("bad SUBSCRIBE")
                }
                func benotify(_ availability: UInt32) -> [UInt8] {
                    let body = state(uri: uri, availability: availability).serialized()
                    let head =
                        "BENOTIFY sip:gw@127.0.0.1:5061;transport=tcp SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKl\r\n"
                        + "Max-Forwards: 70\r\nFrom: <sip:w@oma.example>;tag=e\r\nTo: <sip:w@oma.example>;tag=\(tag)\r\n"
                        + "Call-ID: \(callID)\r\nCSeq: 2 BENOTIFY\r\nEvent: presence\r\nSubscription-State: active;expires=3000\r\n"
                        + "Require: eventlist\r\nContent-Type: application/msrtc-event-categories+xml\r\nContent-Length: \(body.count)\r\n\r\n"
                    return Array(head.utf8) + body
                }
                inputs.append((benotify(6500), benotify(15500)))
            }
            guard inputs.count == members, core.counts.omaWatches == 1 else {
                fatalError("the list's \(members) members were not all subscribed")
            }
            return Bridge(core: core, inputs: inputs)
        }

        /// One enterprise watcher whose batch of `members` OMA presentities is one list at the OMA
        /// domain's RLS (`oma: rls`): the document written, the list subscribed and given full state;
        /// the inputs are the RLS's NOTIFYs with every member changed.
        static func omaListFlow(configuration: GatewayConfiguration, mapper: PresenceMapper, members: Int) throws
            -> Bridge
        {
            var configuration = configuration
            configuration.oma.rls["oma.example"] = "http://127.0.0.1:8080/xcap-root"
            var core = try makeCore(configuration, mapper)
            let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
            let resources = (0..<members).map { "sip:o\($0)@oma.example" }
            let batch = BatchSubscribe(
                uri: "sip:c@contoso.com",
                actions: [
                    .init(kind: .subscribe, resources: resources.map { .init(uri: $0) }, categories: [.state, .note])
                ]
            ).serialized()
            let head =
                "SUBSCRIBE sip:c@contoso.com SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKel\r\n"
                + "Max-Forwards: 69\r\nFrom: <sip:c@contoso.com>;tag=c\r\nTo: <sip:c@contoso.com>\r\nCall-ID: el@ent\r\n"
                + "CSeq: 1 SUBSCRIBE\r\nContact: <sip:c@127.0.0.1:5062;transport=tcp>\r\nEvent: presence\r\n"
                + "Accept: application/msrtc-event-categories+xml, application/rlmi+xml, multipart/related\r\n"
                + "Supported: ms-benotify, ms-piggyback-first-notify, eventlist\r\nRequire: adhoclist, categoryList\r\n"
                + "Expires: 3600\r\nContent-Type: application/msrtc-adrl-categorylist+xml\r\nContent-Length: \(batch.count)\r\n\r\n"
            let watcher = WatcherIdentity(uri: "sip:c@contoso.com", network: .sameEnterprise)
            let actions = core.receive(
                try message(Array(head.utf8) + batch), id: 0, from: .enterprise, watcher: watcher, now: now)
            guard
                case .writeListDocument(let document, _)? = actions.first(where: {
                    if case .writeListDocument = $0 { true } else { false }
                })
            else { fatalError("no list document") }
            guard case .send(let out, _, let context)? = core.listDocumentWritten(document, status: 201, now: now).first
            else { fatalError("no list SUBSCRIBE") }
            _ = core.receive(
                SIPResponse(
                    replyingTo: out, statusCode: 200, toTag: "rls",
                    headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>"), (.require, "eventlist")]),
                to: out, context: context, now: now)
            guard let tag = try out.headers.from?.tag, let callID = out.headers.callID else {
                fatalError("bad SUBSCRIBE")
            }
            func notify(_ activity: String, full: Bool) -> [UInt8] {
                var rlmi =
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<list xmlns=\"urn:ietf:params:xml:ns:rlmi\" uri=\"\(out.uri)\" "
                    + "version=\"0000000000\" fullState=\"\(full)\">"
                var parts = ""
                for (i, uri) in resources.enumerated() {
                    rlmi +=
                        "<resource uri=\"\(uri)\"><instance id=\"i\(i)\" state=\"active\" cid=\"p\(i)@rls\"/></resource>"
                    parts +=
                        "--rb\r\nContent-Transfer-Encoding: binary\r\nContent-ID: <p\(i)@rls>\r\nContent-Type: application/pidf+xml\r\n\r\n"
                        + "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<presence xmlns=\"urn:ietf:params:xml:ns:pidf\" "
                        + "xmlns:dm=\"urn:ietf:params:xml:ns:pidf:data-model\" xmlns:rpid=\"urn:ietf:params:xml:ns:pidf:rpid\" "
                        + "entity=\"\(uri)\">\n<tuple id=\"t1\"><status><basic>open</basic></status></tuple>\n"
                        + "<dm:person id=\"p1\"><rpid:activities><rpid:\(activity)/></rpid:activities></dm:person>\n</presence>\r\n"
                }
                let body = Array(
                    ("--rb\r\nContent-Transfer-Encoding: binary\r\nContent-ID: <list@rls>\r\n"
                        + "Content-Type: application/rlmi+xml\r\n\r\n\(rlmi)</list>\r\n\(parts)--rb--\r\n").utf8)
                let head =
                    "NOTIFY sip:gw@127.0.0.1:5060 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKrl\r\n"
                    + "Max-Forwards: 70\r\nFrom: <\(out.uri)>;tag=rls\r\nTo: <sip:c@contoso.com>;tag=\(tag)\r\n"
                    + "Call-ID: \(callID)\r\nCSeq: 1 NOTIFY\r\nContact: <sip:127.0.0.1:5070>\r\nEvent: presence\r\n"
                    + "Subscription-State: active;expires=3000\r\nRequire: eventlist\r\n"
                    + "Content-Type: multipart/related;type=\"application/rlmi+xml\";start=\"<list@rls>\";boundary=rb\r\n"
                    + "Content-Length: \(body.count)\r\n\r\n"
                return Array(head.utf8) + body
            }
            // The full state (version 0) answers the watcher; the alternating partial ones follow.
            let answered = core.receive(
                try message(notify("away", full: true)), id: 1, from: .oma, watcher: nil, now: now)
            guard answered.contains(where: { if case .respond(0, _) = $0 { true } else { false } }) else {
                fatalError("the watcher was not answered")
            }
            var bridge = Bridge(core: core, inputs: [(notify("busy", full: false), notify("away", full: false))])
            bridge.listVersion = 1
            return bridge
        }

        /// Flow 1 pairs: enterprise watcher i subscribes (categories) to OMA presentity i.
        static func flow1(configuration: GatewayConfiguration, mapper: PresenceMapper, pairs: Int) throws -> Bridge {
            var core = try makeCore(configuration, mapper)
            var inputs: [([UInt8], [UInt8])] = []
            let now = NIODeadline.uptimeNanoseconds(1_000_000_000)
            for i in 0..<pairs {
                let batch = BatchSubscribe(
                    uri: "sip:c\(i)@contoso.com",
                    actions: [
                        .init(
                            kind: .subscribe, resources: [.init(uri: "sip:o\(i)@oma.example")],
                            categories: [.state, .note])
                    ]
                ).serialized()
                let head =
                    "SUBSCRIBE sip:c\(i)@contoso.com SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKe\(i)\r\n"
                    + "Max-Forwards: 69\r\nFrom: <sip:c\(i)@contoso.com>;tag=c\(i)\r\nTo: <sip:c\(i)@contoso.com>\r\nCall-ID: e\(i)@ent\r\n"
                    + "CSeq: 1 SUBSCRIBE\r\nContact: <sip:c\(i)@127.0.0.1:5062;transport=tcp>\r\nEvent: presence\r\n"
                    + "Accept: application/msrtc-event-categories+xml, application/rlmi+xml, multipart/related\r\n"
                    + "Supported: ms-benotify, ms-piggyback-first-notify, eventlist\r\nRequire: adhoclist, categoryList\r\nExpires: 3600\r\n"
                    + "Content-Type: application/msrtc-adrl-categorylist+xml\r\nContent-Length: \(batch.count)\r\n\r\n"
                let subscribe = try message(Array(head.utf8) + batch)
                let watcher = WatcherIdentity(uri: "sip:c\(i)@contoso.com", network: .sameEnterprise)
                let actions = core.receive(subscribe, id: UInt64(i), from: .enterprise, watcher: watcher, now: now)
                guard
                    case .send(let out, _, let context)? = actions.first(where: {
                        if case .send = $0 { true } else { false }
                    })
                else {
                    fatalError("no OMA SUBSCRIBE")
                }
                _ = core.receive(
                    SIPResponse(
                        replyingTo: out, statusCode: 200, toTag: "k\(i)",
                        headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                    to: out, context: context, now: now)
                guard let from = try out.headers.from, let tag = from.tag, let callID = out.headers.callID else {
                    fatalError("bad SUBSCRIBE")
                }
                func notify(_ activity: String, cseq: Int) -> [UInt8] {
                    let body = Array(
                        """
                        <?xml version="1.0" encoding="UTF-8"?>
                        <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" \
                        xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="sip:o\(i)@oma.example">
                        <tuple id="t1"><status><basic>open</basic></status></tuple>
                        <dm:person id="p1"><rpid:activities><rpid:\(activity)/></rpid:activities></dm:person>
                        </presence>
                        """.utf8)
                    let head =
                        "NOTIFY sip:gw@127.0.0.1:5060 SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKn\(i)x\(cseq)\r\n"
                        + "Max-Forwards: 70\r\nFrom: <sip:o\(i)@oma.example>;tag=k\(i)\r\nTo: <sip:c\(i)@contoso.com>;tag=\(tag)\r\n"
                        + "Call-ID: \(callID)\r\nCSeq: \(cseq) NOTIFY\r\nContact: <sip:127.0.0.1:5070>\r\nEvent: presence\r\n"
                        + "Subscription-State: active;expires=3000\r\nContent-Type: application/pidf+xml\r\nContent-Length: \(body.count)\r\n\r\n"
                    return Array(head.utf8) + body
                }
                // The first NOTIFY answers the enterprise watcher; the two alternating ones follow.
                _ = core.receive(
                    try message(notify("away", cseq: 2)), id: UInt64(i), from: .oma, watcher: nil, now: now)
                inputs.append((notify("busy", cseq: 3), notify("away", cseq: 4)))
            }
            return Bridge(core: core, inputs: inputs)
        }

        /// One incoming notification through parse → core → serialize of what goes out.
        mutating func relayOne() -> Int {
            let (a, b) = inputs[next]
            var input = flip ? b : a
            if let version = listVersion {
                listVersion = version + 1
                Self.writeVersion(version, into: &input)
            }
            guard let request = try? SIPMessage(parsing: input).request else {
                fatalError("input stopped parsing")
            }
            // The same bytes come back again and again: the CSeq is raised each time, as a dialog
            // refuses a request whose CSeq went backwards (RFC 3261 §12.2.2).
            var stamped = request
            sent += 1
            if let cseq = try? request.headers.cseq {
                stamped.headers.set(.cseq, "\(cseq.sequence + UInt32(sent)) \(cseq.method)")
            }
            let actions = core.receive(
                stamped, id: UInt64(sent), from: request.method == .benotify ? .enterprise : .oma, watcher: nil,
                now: now)
            var bytes = 0
            for case .send(let out, _, _) in actions { bytes += SIPMessage.request(out).serialized().count }
            guard bytes > 0 else { fatalError("no notification relayed") }
            next += 1
            if next == inputs.count {
                next = 0
                flip.toggle()
            }
            return bytes
        }

        func keepAlive() { withExtendedLifetime(core) {} }

        /// Writes `version` as the 10 digits of the RLMI `version="00…"` in `bytes` (the XML
        /// declaration's `version="1.0"` is not it).
        static func writeVersion(_ version: UInt32, into bytes: inout [UInt8]) {
            let marker = Array("version=\"00".utf8)
            guard let start = bytes.indices.first(where: { bytes[$0...].starts(with: marker) }) else {
                fatalError("no RLMI version in the input")
            }
            let digits = Array(String(format: "%010u", version).utf8)
            bytes.replaceSubrange((start + 9)..<(start + 19), with: digits)
        }
    }

    static func state(uri: String, availability: UInt32) -> CategoriesDocument {
        CategoriesDocument(
            uri: uri,
            categories: [
                Category(
                    name: .state, instance: 1, publishTime: "2026-11-22T10:00:00.000",
                    payload: .state(MSState(type: .aggregateState, availability: availability)))
            ])
    }

    static func message(_ text: String) throws -> SIPRequest { try message(Array(text.utf8)) }

    static func message(_ bytes: [UInt8]) throws -> SIPRequest {
        guard let request = try SIPMessage(parsing: bytes).request else { fatalError("not a request") }
        return request
    }

    static func rate(_ seconds: Double, _ body: () -> Int) -> Double {
        var count = 0
        var sink = 0
        let start = DispatchTime.now().uptimeNanoseconds
        let end = start + UInt64(seconds * 1e9)
        var now = start
        while now < end {
            for _ in 0..<100 { sink &+= body() }
            count += 100
            now = DispatchTime.now().uptimeNanoseconds
        }
        if sink == 42 { print("") }
        return Double(count) / (Double(now - start) / 1e9)
    }

    static func pad(_ value: Double) -> String {
        let s = String(Int(value + 0.5))
        return String(repeating: " ", count: max(0, 9 - s.count)) + s
    }
}
