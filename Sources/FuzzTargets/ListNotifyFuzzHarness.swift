import NIOCore
import PresenceGateway
import SIPMessages

/// NOTIFYs of an OMA resource list server (RFC 4662) into a list subscription of the gateway
/// (`oma: rls`, flow 1), as ``GatewayRuntime`` would deliver them.
///
/// The harness keeps one list: an enterprise watcher's batch of three OMA presentities, its
/// rls-services document written, its SUBSCRIBE answered with `Require: eventlist`. Each input is
/// parsed as one SIP request; its Call-ID, tags and CSeq are set to the list dialog's next, and
/// ``listPlaceholder`` in its body becomes the list's URI, so that whatever headers and body it
/// has reach the list's notification handling: the RLMI and PIDF parts, versions, member states,
/// and what the watcher is sent. The list is made again when an input ended it (a terminated
/// state, a refusal) and every ``resetEvery`` inputs.
public final class ListNotifyFuzzHarness {
    nonisolated(unsafe) public static let shared = ListNotifyFuzzHarness()

    public static let resetEvery = 256
    public static let members = ["sip:o1@oma.example", "sip:o2@oma.example", "sip:o3@oma.example"]
    /// Written in a body where the list's URI goes (the gateway makes it: the seeds cannot know it).
    public static let listPlaceholder = "sip:gw-list-LIST@oma.example"
    static let yaml = """
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1, port: 5060 }
          - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 5061 }
        enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:5062;transport=tcp" }
        oma:
          domains: [oma.example]
          next-hop: "sip:127.0.0.1:5070;transport=udp"
          rls: { oma.example: "http://127.0.0.1:5080/xcap-root" }
        presentities:
          default:
            defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
        """

    var core: GatewayCore?
    /// The list dialog: its SUBSCRIBE (Call-ID, From tag) and the RLS's tag.
    var list: SIPRequest?
    var cseq: UInt32 = 0
    var inputs = 0
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    var nextID: GatewayCore.ServerRequestID = 0
    /// The status the list answered the last input with (nil: none).
    public private(set) var lastStatus: Int?
    /// Notifications the watcher was sent for the last input.
    public private(set) var lastNotifications = 0

    public init() {}

    /// A core with the list set up; nil (with `list` nil) when the harness cannot build one.
    func makeList() {
        list = nil
        cseq = 0
        inputs = 0
        guard var core = GatewayCore.harnessCore(yaml: Self.yaml) else { return }
        let resources = Self.members.map { "<resource uri=\"\($0)\"/>" }.joined()
        let batch = """
            <batchSub xmlns="http://schemas.microsoft.com/2006/01/sip/batch-subscribe" uri="sip:c@contoso.com" name=""><action name="subscribe" id="1"><adhocList>\(resources)</adhocList><categoryList xmlns="http://schemas.microsoft.com/2006/09/sip/categorylist"><category name="state"/><category name="note"/></categoryList></action></batchSub>
            """
        let head =
            "SUBSCRIBE sip:c@contoso.com SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5062;branch=z9hG4bKe1\r\n"
            + "Max-Forwards: 69\r\nFrom: <sip:c@contoso.com>;tag=c1\r\nTo: <sip:c@contoso.com>\r\nCall-ID: e1@ent\r\n"
            + "CSeq: 1 SUBSCRIBE\r\nContact: <sip:c@127.0.0.1:5062;transport=tcp>\r\nEvent: presence\r\n"
            + "Accept: application/msrtc-event-categories+xml, application/rlmi+xml, multipart/related\r\n"
            + "Supported: ms-benotify, ms-piggyback-first-notify, eventlist\r\nRequire: adhoclist, categoryList\r\n"
            + "Expires: 3600\r\nContent-Type: application/msrtc-adrl-categorylist+xml\r\n"
            + "Content-Length: \(batch.utf8.count)\r\n\r\n\(batch)"
        guard let subscribe = try? SIPMessage(parsing: Array(head.utf8)).request,
            let watcher = WatcherIdentity(uri: "sip:c@contoso.com", network: .sameEnterprise)
        else { return }
        let actions = core.receive(subscribe, id: 0, from: .enterprise, watcher: watcher, now: now)
        // The watcher is answered at once, without the members' state: every later change is a notification.
        for case .schedule(let timer, _) in actions { _ = core.fire(timer, now: now) }
        guard
            case .writeListDocument(let document, _)? = actions.first(where: {
                if case .writeListDocument = $0 { true } else { false }
            }),
            case .send(let out, _, let context)? = core.listDocumentWritten(document, status: 201, now: now).first
        else { return }
        _ = core.receive(
            SIPResponse(
                replyingTo: out, statusCode: 200, toTag: "rls",
                headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>"), (.require, "eventlist")]),
            to: out, context: context, now: now)
        self.core = core
        list = out
    }

    /// `bytes` with each occurrence of `pattern` replaced by `replacement`.
    static func replacing(_ pattern: [UInt8], with replacement: [UInt8], in bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == pattern[0], bytes[i...].starts(with: pattern) {
                out += replacement
                i += pattern.count
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return out
    }

    /// Runs one input; nil unless the harness itself cannot run.
    public func check(_ bytes: [UInt8]) -> String? {
        lastStatus = nil
        lastNotifications = 0
        if list == nil || inputs >= Self.resetEvery { makeList() }
        guard let list, var core else { return "list-notify: the list could not be set up" }
        inputs += 1
        guard var notify = try? SIPMessage(parsing: bytes).request else { return nil }
        let from = (try? list.headers.from)?.tag ?? ""
        cseq += 1
        notify.method = .notify
        notify.headers.set(.callID, list.headers.callID ?? "")
        notify.headers.set(.from, "<\(list.uri)>;tag=rls")
        notify.headers.set(.to, "<sip:c@contoso.com>;tag=\(from)")
        notify.headers.set(.cseq, "\(cseq) NOTIFY")
        notify.body = Self.replacing(
            Array(Self.listPlaceholder.utf8), with: Array(list.uri.description.utf8), in: notify.body)
        now = now + .milliseconds(10)
        nextID += 1
        let actions = core.receive(notify, id: nextID, from: .oma, watcher: nil, now: now)
        self.core = core
        for action in actions {
            switch action {
            case .respond(let id, let response) where id == nextID: lastStatus = response.statusCode
            case .send(_, .enterprise, _): lastNotifications += 1
            case .send(let request, .oma, _)
            where (try? request.headers.to)?.tag == nil || request.headers[.expires] == "0":
                // The list was given up or made again in a new dialog: set up afresh for the next input.
                self.list = nil
            default: break
            }
        }
        return nil
    }
}
