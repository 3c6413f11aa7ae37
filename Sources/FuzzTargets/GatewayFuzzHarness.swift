import Foundation
import NIOCore
import PresenceDocuments
import PresenceGateway
import PresenceMapping
import SIPMessages
import SIPTransport

/// Whole SIP messages into the gateway: ``FederationRouter`` and ``GatewayCore`` as
/// ``GatewayRuntime`` drives them, without sockets, transactions or a clock.
///
/// Input: the first byte chooses the side the message arrives from (even: enterprise, odd: OMA)
/// and, in its other bits, how the canned peers behave; the rest is parsed as one SIP message. A
/// request goes through the router (out of dialog) or straight to the core (To tag present), as
/// the runtime does; a response answers the first request the core sends. Every request the
/// core sends is answered (200 with a tag, or an error the input chose); a SUBSCRIBE it sends is
/// followed by a NOTIFY in the new dialog (a canned document, or the input's own body); a
/// subscription the core accepted is refreshed and ended by its watcher; then the timers the core
/// scheduled fire in deadline order. All of it is bounded (``maxSteps`` actions, ``maxTimers``
/// timers per input), and the core is rebuilt every ``resetEvery`` inputs so that state from
/// earlier inputs cannot grow without limit (after ``GatewayCore/shutdown(now:)``).
///
/// Not thread-safe: libFuzzer calls it from one thread, and the tests make their own.
public final class GatewayFuzzHarness {
    /// The harness the fuzz entry point uses.
    nonisolated(unsafe) public static let shared = GatewayFuzzHarness()

    /// Inputs per core: the core is rebuilt (after a shutdown) this often.
    public static let resetEvery = 64
    /// Most actions handled per input.
    static let maxSteps = 256
    /// Most timers fired per input.
    static let maxTimers = 32

    static let yaml = """
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1, port: 5060 }
          - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 5061 }
        enterprise:
          domains: [contoso.com]
          next-hop: "sip:127.0.0.1:5062;transport=tcp"
        oma:
          domains: [oma.example]
          next-hop: "sip:127.0.0.1:5070;transport=udp"
          rls: { oma.example: "http://127.0.0.1:5080/xcap-root" }
        partners:
          blocked: [spam.example]
        peers:
          - { name: enterprise-edge, address: 127.0.0.1, side: enterprise, network: sameEnterprise, trusted: true }
          - { name: kamailio, address: 127.0.0.1, port: 5070, side: oma, network: federated }
        linked-identities:
          - { oma: "sip:alice@oma.example", enterprise: "sip:alice@contoso.com", publish-to-enterprise: true, publish-to-oma: true }
        presentities:
          default:
            defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
            containers:
              100: { members: [federated], categories: [state, contactCard] }
              200: { members: [sameEnterprise], categories: [state, note, contactCard, calendarData, services] }
        subscriptions:
          piggyback-wait-ms: 500
          default-expires: 3600
        resource-lists:
          "sip:team@contoso.com": ["sip:p1@contoso.com", "sip:alice@contoso.com"]
        """

    let configuration: GatewayConfiguration?
    let mapper: PresenceMapper?
    let contacts: [GatewayConfiguration.Side: SIPAddress]
    var core: GatewayCore?
    var router: FederationRouter?
    /// Inputs run on the current core.
    var inputs = 0
    /// Every input run, for a total.
    public private(set) var total = 0
    /// Cores built so far (the first one included).
    public private(set) var coresBuilt = 0
    /// Requests the core sent, and responses it gave, for the last input.
    public private(set) var lastSends = 0
    public private(set) var lastResponses = 0
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    var nextID: GatewayCore.ServerRequestID = 0
    var tags = 0
    var timers: [GatewayCore.Timer: NIODeadline] = [:]

    /// Per input.
    var steps = 0
    var variant: UInt8 = 0
    var incoming: SIPMessage?
    /// Out-of-dialog requests delivered, by server request id (for the watcher's follow-ups).
    var delivered: [GatewayCore.ServerRequestID: (request: SIPRequest, side: GatewayConfiguration.Side)] = [:]
    /// Subscriptions the core accepted this input: the watcher's SUBSCRIBE, its side and the To tag.
    var accepted: [(request: SIPRequest, side: GatewayConfiguration.Side, tag: String)] = []

    public init() {
        configuration = try? GatewayConfiguration(yaml: Self.yaml)
        mapper = (try? MappingTables.builtIn()).map { PresenceMapper(tables: $0) }
        var contacts: [GatewayConfiguration.Side: SIPAddress] = [:]
        if let oma = try? SIPURI("sip:gateway@127.0.0.1:5060"),
            let enterprise = try? SIPURI("sip:gateway@127.0.0.1:5061;transport=tcp")
        {
            contacts = [.oma: SIPAddress(uri: oma), .enterprise: SIPAddress(uri: enterprise)]
        }
        self.contacts = contacts
        reset()
    }

    /// A fresh core and router (the old core is shut down first, its actions handled).
    public func reset() {
        if core != nil {
            beginInput(variant: 0, incoming: nil)
            if let actions = core?.shutdown(now: now) { perform(actions) }
        }
        guard let configuration, let mapper else { return }
        core = GatewayCore(
            configuration: configuration, mapper: mapper, contacts: contacts,
            ids: IdentifierSource(token: { "t\($0)" }, jitter: { 0.5 }))
        router = FederationRouter(configuration: configuration, localAddresses: ["127.0.0.1:5060", "127.0.0.1:5061"])
        timers = [:]
        inputs = 0
        coresBuilt += 1
    }

    /// Runs one input; nil unless the harness itself cannot run (configuration or tables).
    public func check(_ bytes: [UInt8]) -> String? {
        guard configuration != nil else { return "gateway: the fuzz configuration does not load" }
        guard mapper != nil else { return "gateway: the built-in mapping tables do not load" }
        total += 1
        if inputs == Self.resetEvery { reset() }
        inputs += 1
        beginInput(variant: 0, incoming: nil)
        guard let selector = bytes.first, let message = try? SIPMessage(parsing: Array(bytes.dropFirst())) else {
            return nil
        }
        let side: GatewayConfiguration.Side = selector & 1 == 0 ? .enterprise : .oma
        beginInput(variant: selector >> 1, incoming: message)
        now = now + .milliseconds(10)
        if case .request(let request) = message { deliver(request, from: side) }
        // The watcher refreshes (RFC 6665 §4.1.2.1) and, half the time, ends (Expires: 0) what was accepted.
        for (request, side, tag) in accepted.prefix(2) {
            deliver(followUp(request, tag: tag, cseqStep: 1, expires: 60), from: side)
            if variant & 4 != 0 { deliver(followUp(request, tag: tag, cseqStep: 2, expires: 0), from: side) }
        }
        // The timers, in deadline order, as the clock reaches them.
        for _ in 0..<Self.maxTimers {
            guard let (timer, deadline) = timers.min(by: { $0.value < $1.value }) else { break }
            timers[timer] = nil
            now = max(now, deadline)
            if let actions = core?.fire(timer, now: now) { perform(actions) }
        }
        return nil
    }

    func beginInput(variant: UInt8, incoming: SIPMessage?) {
        steps = 0
        lastSends = 0
        lastResponses = 0
        self.variant = variant
        self.incoming = incoming
        delivered = [:]
        accepted = []
    }

    /// A request from `side`, routed as ``GatewayRuntime`` does.
    func deliver(_ request: SIPRequest, from side: GatewayConfiguration.Side) {
        nextID += 1
        let id = nextID
        if (try? request.headers.to)?.tag != nil {
            if let actions = core?.receive(request, id: id, from: side, watcher: nil, now: now) { perform(actions) }
            return
        }
        let source = SIPTarget(side == .oma ? .udp : .tcp, host: "127.0.0.1", port: side == .oma ? 5070 : 5062)
        guard var router else { return }
        let decision = router.route(request, arrival: FederationRouter.Arrival(side: side, source: source), now: now)
        self.router = router
        switch decision {
        case .reject: return
        case .forward(_, let watcher, let routed, _), .local(let watcher, let routed):
            delivered[id] = (routed, side)
            if let actions = core?.receive(routed, id: id, from: side, watcher: watcher, now: now) { perform(actions) }
        }
    }

    func perform(_ actions: [GatewayCore.Action]) {
        for action in actions {
            steps += 1
            guard steps <= Self.maxSteps else { return }
            switch action {
            case .respond(let id, let response):
                // Serializing is part of what the runtime does with every response.
                _ = SIPMessage.response(response).serialized()
                lastResponses += 1
                if (200..<300).contains(response.statusCode), let (request, side) = delivered.removeValue(forKey: id),
                    request.method == .subscribe, let tag = (try? response.headers.to)?.tag
                {
                    accepted.append((request, side, tag))
                }
            case .send(let request, let side, let context):
                _ = SIPMessage.request(request).serialized()
                lastSends += 1
                answer(request, to: side, context: context)
            case .schedule(let timer, let deadline):
                timers[timer] = deadline
            case .cancel(let timer):
                timers[timer] = nil
            case .writeListDocument(let uri, _):
                // The XCAP server's answer: written, or (as the input says) refused.
                let status = variant & 64 == 0 ? 200 : 503
                if let actions = core?.listDocumentWritten(uri, status: status, now: now) { perform(actions) }
            case .upnpEvent:
                // For the UPnP device's GENA subscribers; nothing comes back to the core.
                break
            case .xcapDocumentChanged:
                // The runtime fetches the document; the core hears of it as a new policy.
                break
            }
        }
    }

    /// The far side's answer to a request the core sent, and for a SUBSCRIBE its first NOTIFY.
    func answer(_ request: SIPRequest, to side: GatewayConfiguration.Side, context: GatewayCore.Context) {
        tags += 1
        let tag = "r\(tags)"
        var response: SIPResponse
        if case .response(let given)? = incoming {
            // The input's own response answers the first request (once).
            incoming = nil
            response = given
        } else if variant & 8 != 0, request.method != .subscribe || variant & 16 != 0 {
            // 481 to a NOTIFY ends the subscription (RFC 6665 §4.2.2); 408/503 stand for a timeout
            // or a transport failure (RFC 3261 §8.1.3.1), as the runtime reports them.
            response = SIPResponse(
                replyingTo: request, statusCode: [481, 408, 503, 489][Int(variant >> 5) & 3], toTag: tag)
        } else {
            var headers: SIPHeaders = [
                (.contact, side == .oma ? "<sip:peer@127.0.0.1:5070>" : "<sip:peer@127.0.0.1:5062;transport=tcp>")
            ]
            if request.method == .subscribe {
                headers.append(.expires, (try? request.headers.expires).flatMap { $0 }.map(String.init) ?? "600")
            }
            if request.method == .publish { headers.append(.sipETag, "e\(tags)") }
            response = SIPResponse(replyingTo: request, statusCode: 200, toTag: tag, headers: headers)
        }
        let answeredTag = (try? response.headers.to)?.tag ?? tag
        if let actions = core?.receive(response, to: request, context: context, now: now) { perform(actions) }
        guard request.method == .subscribe, (200..<300).contains(response.statusCode) else { return }
        if let notify = firstNotify(for: request, to: side, remoteTag: answeredTag) {
            nextID += 1
            if let actions = core?.receive(notify, id: nextID, from: side, watcher: nil, now: now) { perform(actions) }
        }
    }

    /// The notifier's NOTIFY (BENOTIFY on the enterprise side, [MS-PRES] §3.4.5.1.4, when the
    /// input says so) in the dialog `subscribe` created (RFC 6665 §4.2.1).
    func firstNotify(for subscribe: SIPRequest, to side: GatewayConfiguration.Side, remoteTag: String) -> SIPRequest? {
        guard let from = subscribe.headers.values(named: .from).first,
            let to = subscribe.headers.values(named: .to).first,
            let callID = subscribe.headers.callID
        else { return nil }
        let resource = (try? subscribe.headers.to)?.uri.description ?? "sip:unknown@oma.example"
        let expires = (try? subscribe.headers.expires).flatMap { $0 } ?? 600
        let state = expires == 0 ? "terminated;reason=timeout" : "active;expires=\(expires)"
        var contentType: String
        var body: [UInt8]
        if variant & 2 != 0, let given = incoming?.headers.values(named: .contentType).first,
            let bytes = incoming.map(\.body), !bytes.isEmpty
        {
            (contentType, body) = (given, bytes)
        } else if side == .oma {
            contentType = "application/pidf+xml"
            body = Array(Self.pidf(resource, activity: variant & 1 == 0 ? "busy" : "away").utf8)
        } else {
            let batched = (try? BatchSubscribe(bytes: subscribe.body))?.actions.first?.resources.first?.uri
            contentType = "application/msrtc-event-categories+xml"
            body = Array(Self.categories(batched ?? resource, availability: variant & 1 == 0 ? 6500 : 15500).utf8)
        }
        let method = side == .enterprise && variant & 1 != 0 ? "BENOTIFY" : "NOTIFY"
        let transport = side == .oma ? "UDP 127.0.0.1:5070" : "TCP 127.0.0.1:5062"
        let head =
            "\(method) \(((try? subscribe.headers.contact)?.first?.address?.uri.description) ?? "sip:gateway@127.0.0.1") SIP/2.0\r\n"
            + "Via: SIP/2.0/\(transport);branch=z9hG4bKf\(tags)\r\nMax-Forwards: 70\r\nFrom: \(to);tag=\(remoteTag)\r\nTo: \(from)\r\n"
            + "Call-ID: \(callID)\r\nCSeq: 1 \(method)\r\nContact: <sip:peer@127.0.0.1:5070>\r\nEvent: presence\r\n"
            + "Subscription-State: \(state)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n\r\n"
        return try? SIPMessage(parsing: Array(head.utf8) + body).request
    }

    /// The watcher's next SUBSCRIBE in the dialog the core accepted.
    func followUp(_ request: SIPRequest, tag: String, cseqStep: UInt32, expires: Int) -> SIPRequest {
        var next = request
        if let to = next.headers.values(named: .to).first { next.headers.set(.to, "\(to);tag=\(tag)") }
        let cseq = (try? request.headers.cseq)?.sequence ?? 1
        next.headers.set(.cseq, "\(cseq &+ cseqStep) SUBSCRIBE")
        next.headers.set(.expires, String(expires))
        next.headers.remove(.via)
        next.headers.prepend(.via, "SIP/2.0/UDP 127.0.0.1:5070;branch=z9hG4bKu\(cseq &+ cseqStep)")
        return next
    }

    static func pidf(_ entity: String, activity: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" \
        xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="\(escape(entity))">
        <tuple id="t1"><status><basic>open</basic></status></tuple>
        <dm:person id="p1"><rpid:activities><rpid:\(activity)/></rpid:activities><dm:note>fuzz</dm:note></dm:person>
        </presence>
        """
    }

    static func categories(_ uri: String, availability: Int) -> String {
        """
        <categories xmlns="http://schemas.microsoft.com/2006/09/sip/categories" uri="\(escape(uri))">
        <category name="state" instance="0" publishTime="2026-11-22T10:00:00.000">\
        <state xmlns="http://schemas.microsoft.com/2006/09/sip/state" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
        xsi:type="aggregateState"><availability>\(availability)</availability></state></category>
        <category name="note" instance="0" publishTime="2026-11-22T10:00:00.000">\
        <note xmlns="http://schemas.microsoft.com/2006/09/sip/note"><body type="personal" uri="">fuzz</body></note></category>
        </categories>
        """
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;")
    }
}
