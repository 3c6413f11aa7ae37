import NIOCore
import PresenceGateway
import SIPMessages

/// NOTIFYs of an OMA presence server's watcher information (RFC 3857, RFC 3858) into the
/// gateway's `presence.winfo` subscription for a linked identity with `mirror-watchers`, as
/// ``GatewayRuntime`` would deliver them.
///
/// The harness keeps the subscription of alice@oma.example answered. Each input is parsed as one
/// SIP request; its Call-ID, tags and CSeq are set to the subscription's next, so that whatever
/// headers and body it has reach the watcher information handling: versions, full and partial
/// tables, and the stand-ins made and ended toward the enterprise. It checks that every stand-in
/// subscribes from an OMA watcher (never the enterprise's own domain nor alice) to alice's
/// enterprise identity, and that no more than the limit stand in at once. The subscription is
/// made again when an input ended it, and every ``resetEvery`` inputs.
public final class WinfoNotifyFuzzHarness {
    nonisolated(unsafe) public static let shared = WinfoNotifyFuzzHarness()

    public static let resetEvery = 256
    static let yaml = """
        listen:
          - { side: oma, transport: udp, address: 127.0.0.1, port: 5060 }
          - { side: enterprise, transport: tcp, address: 127.0.0.1, port: 5061 }
        enterprise: { domains: [contoso.com], next-hop: "sip:127.0.0.1:5062;transport=tcp" }
        oma: { domains: [oma.example], next-hop: "sip:127.0.0.1:5070;transport=udp" }
        linked-identities:
          - { oma: "sip:alice@oma.example", enterprise: "sip:alice@contoso.com", mirror-watchers: true }
        presentities:
          default:
            defaults: { sameEnterprise: allow, federated: allow, publicCloud: polite-block }
        """

    var core: GatewayCore?
    /// The winfo subscription's SUBSCRIBE (Call-ID, From tag).
    var watch: SIPRequest?
    var cseq: UInt32 = 0
    var inputs = 0
    var now = NIODeadline.uptimeNanoseconds(1_000_000_000)
    var nextID: GatewayCore.ServerRequestID = 0
    /// The status the last input was answered with (nil: none).
    public private(set) var lastStatus: Int?
    /// Stand-ins made for the last input (category SUBSCRIBEs toward the enterprise from a watcher).
    public private(set) var lastStandIns = 0

    public init() {}

    /// A core with alice's winfo subscription answered; nil (with `watch` nil) when it cannot be built.
    func makeWatch() {
        watch = nil
        cseq = 0
        inputs = 0
        guard var core = GatewayCore.harnessCore(yaml: Self.yaml) else { return }
        for case .send(let request, .oma, let context) in core.start(now: now)
        where request.headers[.event] == "presence.winfo" {
            _ = core.receive(
                SIPResponse(
                    replyingTo: request, statusCode: 200, toTag: "kam",
                    headers: [(.expires, "3600"), (.contact, "<sip:127.0.0.1:5070>")]),
                to: request, context: context, now: now)
            watch = request
        }
        self.core = core
    }

    /// Runs one input; nil unless the harness cannot run or a property failed.
    public func check(_ bytes: [UInt8]) -> String? {
        lastStatus = nil
        lastStandIns = 0
        if watch == nil || inputs >= Self.resetEvery { makeWatch() }
        guard let watch, var core else { return "winfo-notify: the subscription could not be set up" }
        inputs += 1
        guard var notify = try? SIPMessage(parsing: bytes).request else { return nil }
        cseq += 1
        notify.method = .notify
        notify.headers.set(.callID, watch.headers.callID ?? "")
        notify.headers.set(.from, "<sip:alice@oma.example>;tag=kam")
        notify.headers.set(.to, "<sip:alice@oma.example>;tag=\((try? watch.headers.from)?.tag ?? "")")
        notify.headers.set(.cseq, "\(cseq) NOTIFY")
        now = now + .milliseconds(10)
        nextID += 1
        let actions = core.receive(notify, id: nextID, from: .oma, watcher: nil, now: now)
        self.core = core
        var failure: String?
        for action in actions {
            switch action {
            case .respond(let id, let response) where id == nextID: lastStatus = response.statusCode
            case .send(let request, .enterprise, _) where request.method == .subscribe:
                guard (try? request.headers.to)?.tag == nil else { continue }
                lastStandIns += 1
                let from = ((try? request.headers.from) ?? nil)?.uri
                if from?.host == "contoso.com" || from?.description == "sip:alice@oma.example" {
                    failure = "winfo-notify: a stand-in from \(from?.description ?? "nothing")"
                }
                if !String(decoding: request.body, as: UTF8.self).contains("sip:alice@contoso.com") {
                    failure = "winfo-notify: a stand-in not for alice@contoso.com"
                }
            case .send(let request, .oma, _) where request.headers[.event] == "presence.winfo":
                // Made again in a new dialog, or given up: set up afresh for the next input.
                if (try? request.headers.to)?.tag == nil || request.headers[.expires] == "0" { self.watch = nil }
            default: break
            }
        }
        if core.mirroredWatcherCount > GatewayCore.mirroredWatchersLimit {
            failure = "winfo-notify: \(core.mirroredWatcherCount) stand-ins"
        }
        return failure
    }
}
