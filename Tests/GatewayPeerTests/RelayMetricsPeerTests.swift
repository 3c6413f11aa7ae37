import Foundation
import PeerTestSupport
import PresenceGateway
import Prometheus
import SIPMessages
import Testing

/// The relay's series by peer and response class, the peer health gauge and the latency
/// histograms (README, "Metrics"), read from the registry `/metrics` renders, while the gateway
/// runs in process between bare UDP peers (``HostilePeerTests/Edge``: `edge` the enterprise
/// edge, `kamailio` the OMA server, both configured; anyone else is `other`).
@Suite(.serialized) struct RelayMetricsPeerTests {
    static func subscribe(_ user: String, callID: String, from edge: LoopbackDatagramPeer) -> String {
        """
        SUBSCRIBE sip:\(user)@oma.example SIP/2.0
        Via: SIP/2.0/UDP \(edge.hostPort);branch=z9hG4bK\(callID);rport
        Max-Forwards: 70
        From: <sip:bob@contoso.com>;tag=\(callID)
        To: <sip:\(user)@oma.example>
        Call-ID: \(callID)@contoso
        CSeq: 1 SUBSCRIBE
        Contact: <sip:bob@\(edge.hostPort)>
        Event: presence
        Accept: application/pidf+xml

        """
    }

    /// The series' value, 0 when absent.
    static func value(_ registry: PrometheusCollectorRegistry, _ series: String) -> Double {
        metricValue(registry, series) ?? 0
    }

    @Test func responsesAreCountedByPeerAndClassAndAPeerAnswering503IsDown() async throws {
        let gw = try await HostilePeerTests.Edge()
        try await withCleanup({ try await Self.countResponses(gw) }, cleanup: { await gw.stop() })
    }

    static func countResponses(_ gw: HostilePeerTests.Edge) async throws {
        let registry = gw.registry
        // kamailio answers the first leg's SUBSCRIBE 503: it is down for the gateway.
        gw.edge.send(Self.subscribe("carol", callID: "m1", from: gw.edge), to: gw.enterprise)
        let first = try #require(await Self.subscribe(for: "carol", at: gw.kamailio))
        #expect(Self.value(registry, #"gateway_peer_up{side="oma",peer="kamailio"}"#) == 1)
        gw.kamailio.send(Self.response(503, "Service Unavailable", to: first), to: gw.oma)
        try await Self.waitFor { Self.value(registry, #"gateway_peer_up{side="oma",peer="kamailio"}"#) == 0 }
        #expect(Self.value(registry, #"gateway_responses_received_total{side="oma",peer="kamailio",class="5xx"}"#) == 1)
        #expect(Self.value(registry, #"gateway_responses_received_total{side="oma",peer="kamailio",class="2xx"}"#) == 0)
        // The next SUBSCRIBE is answered 200: up again.
        gw.edge.send(Self.subscribe("dave", callID: "m2", from: gw.edge), to: gw.enterprise)
        let second = try #require(await Self.subscribe(for: "dave", at: gw.kamailio))
        gw.kamailio.answer(second, to: gw.oma, toTag: "k2", extra: "Expires: 600\n")
        try await Self.waitFor { Self.value(registry, #"gateway_peer_up{side="oma",peer="kamailio"}"#) == 1 }
        #expect(Self.value(registry, #"gateway_responses_received_total{side="oma",peer="kamailio",class="2xx"}"#) == 1)
        // Each SUBSCRIBE's final response was timed, on the OMA side.
        let timed = Self.value(registry, #"gateway_sip_response_seconds_count{side="oma",method="SUBSCRIBE"}"#)
        #expect(timed >= 2)
        #expect(Self.value(registry, #"gateway_sip_response_seconds_bucket{side="oma",method="SUBSCRIBE",le="+Inf"}"#) == timed)
        #expect(Self.value(registry, #"gateway_sip_response_seconds_count{side="oma",method="NOTIFY"}"#) == 0)
        // The watchers' SUBSCRIBEs came from the configured edge and were answered by the gateway.
        let answers = await gw.edge.receive(for: 1).compactMap(\.response).filter { $0.statusCode >= 200 }
        #expect(Self.value(registry, #"gateway_requests_received_total{side="enterprise",peer="edge"}"#) >= 2)
        let sent = (1...6).map {
            Self.value(registry, "gateway_responses_sent_total{side=\"enterprise\",peer=\"edge\",class=\"\($0)xx\"}")
        }.reduce(0, +)
        #expect(sent == Double(Set(answers.compactMap { $0.headers.callID }).count), "\(answers.map(\.statusCode))")
    }

    @Test func aRelayedNotifyIsTimedAndARefusalCountsAgainstOther() async throws {
        let gw = try await HostilePeerTests.Edge()
        try await withCleanup({ try await Self.timeRelay(gw) }, cleanup: { await gw.stop() })
    }

    static func timeRelay(_ gw: HostilePeerTests.Edge) async throws {
        let registry = gw.registry
        gw.edge.send(Self.subscribe("carol", callID: "r1", from: gw.edge), to: gw.enterprise)
        let subscribe = try #require(await gw.kamailio.request(.subscribe, within: 2))
        _ = try #require(try subscribe.headers.from)
        gw.kamailio.answer(subscribe, to: gw.oma, toTag: "k1", extra: "Expires: 600\n")
        for notify in await gw.edge.receive(for: 0.8).compactMap(\.request) where notify.method == .notify {
            gw.edge.answer(notify, to: gw.enterprise)
        }
        let relayed = #"gateway_notification_relay_seconds_count{direction="oma_to_enterprise"}"#
        let before = Self.value(registry, relayed)
        func notify(_ cseq: Int, from peer: LoopbackDatagramPeer) {
            peer.notify(inDialogOf: subscribe, tag: "k1", presentity: "sip:carol@oma.example", cseq: cseq, to: gw.oma)
        }
        // From an address that is no peer: refused, counted as `other`'s.
        let stranger = try LoopbackDatagramPeer(host: "127.0.0.2")
        notify(10, from: stranger)
        let refused = try #require(await stranger.first(within: 5) { $0.response != nil }?.response)
        #expect(refused.statusCode >= 400)
        #expect(Self.value(registry, #"gateway_requests_rejected_total{side="oma",peer="other"}"#) == 1)
        #expect(Self.value(registry, #"gateway_requests_received_total{side="oma",peer="other"}"#) == 1)
        #expect(Self.value(registry, "gateway_responses_sent_total{side=\"oma\",peer=\"other\",class=\"\(refused.statusCode / 100)xx\"}") == 1)
        #expect(Self.value(registry, #"gateway_requests_rejected_total{side="oma",peer="kamailio"}"#) == 0)
        #expect(Self.value(registry, relayed) == before)
        // From the dialog's peer: relayed to the watcher, and timed from its arrival.
        notify(20, from: gw.kamailio)
        let out = await gw.edge.request(.notify, within: 2)
        #expect(out != nil)
        #expect(await metricValue(registry, relayed, reaching: before + 1) == before + 1)
        #expect(Self.value(registry, #"gateway_notification_relay_seconds_bucket{direction="oma_to_enterprise",le="32.0"}"#) == before + 1)
        #expect(Self.value(registry, #"gateway_notification_relay_seconds_count{direction="enterprise_to_oma"}"#) == 0)
        #expect(Self.value(registry, #"gateway_notifies_sent_total{side="enterprise"}"#) >= 1)
        #expect(Self.value(registry, #"gateway_notifies_sent_total{side="oma"}"#) == 0)
        #expect(Self.value(registry, #"gateway_requests_received_total{side="oma",peer="kamailio"}"#) == 1)
    }

    /// The first SUBSCRIBE for `user` that reaches `peer` within 2 s (retries of others skipped).
    static func subscribe(for user: String, at peer: LoopbackDatagramPeer) async -> SIPRequest? {
        let end = Date().addingTimeInterval(2)
        while end.timeIntervalSinceNow > 0 {
            let found = await peer.receive(for: 0.1).compactMap(\.request).first {
                $0.method == .subscribe && $0.uri.description == "sip:\(user)@oma.example"
            }
            if let found { return found }
        }
        return nil
    }

    /// A response to `request` from a bare peer (RFC 3261 §8.2.6 headers copied).
    static func response(_ status: Int, _ reason: String, to request: SIPRequest) -> String {
        let copied: [SIPHeaderName] = [.via, .from, .to, .callID, .cseq]
        let lines = copied.flatMap { name in request.headers.values(named: name).map { "\(name): \($0)\n" } }
        return "SIP/2.0 \(status) \(reason)\n" + lines.joined()
    }

    static func waitFor(_ condition: () -> Bool) async throws {
        for _ in 0..<200 where !condition() { try await Task.sleep(nanoseconds: 10_000_000) }
        #expect(condition())
    }
}
