import Foundation
import NIOCore

extension AdminAPI {
    /// `GET /`: a page an operator can open in a browser, plain HTML without scripts: the bridged
    /// subscriptions per side, each peer with its health, and the last failures.
    /// Each side's first ``statusPageRows`` subscriptions only, and their number: a load costs
    /// the relay's loop two pages, not the whole table.
    func statusPage(on loop: any EventLoop) -> EventLoopFuture<Reply> {
        subscriptions(nil, .enterprise, 0, Self.statusPageRows)
            .and(subscriptions(nil, .oma, 0, Self.statusPageRows)).and(peers())
            .map { sides, peers in
                let (enterprise, oma) = sides
                return Reply(
                    status: .ok, type: "text/html; charset=utf-8",
                    body: Array(Self.page([.enterprise: enterprise, .oma: oma], peers, at: Date()).utf8))
            }
    }

    static let statusPageRows = 200

    static func escape(_ text: String) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }

    static func page(
        _ sides: [GatewayConfiguration.Side: (total: Int, page: [Subscription])], _ peers: [PeerHealth], at now: Date
    ) -> String {
        let time = ISO8601DateFormatter()
        var sections: [String] = []
        for side in GatewayConfiguration.Side.allCases {
            let (total, mine) = sides[side] ?? (0, [])
            sections.append(subscriptionsSection(side, total: total, page: mine))
        }
        sections.append(peersSection(peers, at: now))
        sections.append(failuresSection(peers, time: time))
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>PresenceGateway</title>
            <style>
            body { font-family: sans-serif; margin: 1.5em; color: #222; }
            table { border-collapse: collapse; margin-bottom: 1em; }
            th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
            th { background: #eee; }
            .ok { color: #1a7f37; } .bad { color: #c0392b; }
            </style></head>
            <body>
            <h1>PresenceGateway</h1>
            <p>At \(time.string(from: now)). JSON: <code>/subscriptions</code>, <code>/peers</code>; metrics: <code>/metrics</code>.</p>
            \(sections.joined(separator: "\n"))
            </body></html>

            """
    }

    /// How long before `now` `date` was, in seconds ("never" without one).
    private static func ago(_ date: Date?, now: Date) -> String {
        guard let date else { return "never" }
        return "\(Int(now.timeIntervalSince(date)))&nbsp;s ago"
    }

    /// An HTML table of `rows` (their cells already escaped) under `header`; one "none" row
    /// when there are none.
    private static func table(_ header: [String], _ rows: [[String]]) -> String {
        let head = "<tr>" + header.map { "<th>\($0)</th>" }.joined() + "</tr>"
        let body =
            rows.isEmpty
            ? "<tr><td colspan=\"\(header.count)\">none</td></tr>"
            : rows.map { "<tr>" + $0.map { "<td>\($0)</td>" }.joined() + "</tr>" }.joined(separator: "\n")
        return "<table>\n\(head)\n\(body)\n</table>"
    }

    /// The section of one side's bridged subscriptions: the rows of `page`, and their number
    /// (`total`) with a pointer to the API when the page holds fewer.
    private static func subscriptionsSection(
        _ side: GatewayConfiguration.Side, total: Int, page mine: [Subscription]
    ) -> String {
        let title =
            side == .enterprise
            ? "Enterprise watchers → OMA presentities" : "OMA watchers → enterprise presentities"
        let rows = mine.map { s in
            [
                escape(s.id), escape(s.watcher), escape(s.state), escape(s.format ?? ""),
                s.resources.map { r in escape(r.uri) + (r.leg.map { " (" + escape($0.state) + ")" } ?? "") }.joined(
                    separator: "<br>"),
                s.expiresIn.map { "\($0)&nbsp;s" } ?? "",
            ]
        }
        let more =
            total > mine.count ? "<p>… and \(total - mine.count) more: <code>GET /subscriptions</code>.</p>" : ""
        return "<h2>\(title): \(total)</h2>\n"
            + table(["id", "watcher", "state", "format", "resources (leg)", "expires"], rows) + more
    }

    /// The section of the peers, each with its health: healthy unless its last failure came
    /// after its last success.
    private static func peersSection(_ peers: [PeerHealth], at now: Date) -> String {
        let peerRows = peers.map { p in
            let healthy = p.lastFailure.map { failure in p.lastSuccess.map { $0 > failure.time } ?? false } ?? true
            return [
                "<span class=\"\(healthy ? "ok" : "bad")\">\(healthy ? "●" : "▲")</span> " + escape(p.name),
                escape(p.side),
                p.configured ? "yes" : "no", ago(p.lastSuccess, now: now),
                p.lastFailure.map { ago($0.time, now: now) + ": " + escape($0.reason) } ?? "none",
                String(format: "%.1f", p.requestsPerSecond), String(format: "%.1f", p.rejectionsPerSecond),
            ]
        }
        return "<h2>Peers</h2>\n"
            + table(
                ["peer", "side", "configured", "last success", "last failure", "requests/s", "rejected/s"], peerRows
            )
    }

    /// The section of the peers' last failures, the latest 20, latest first.
    private static func failuresSection(_ peers: [PeerHealth], time: ISO8601DateFormatter) -> String {
        let failures = peers.compactMap { p in p.lastFailure.map { (p.name, $0) } }.sorted { $0.1.time > $1.1.time }
            .prefix(20)
        return "<h2>Last failures</h2>\n"
            + table(
                ["time", "peer", "reason"],
                failures.map {
                    [time.string(from: $0.1.time), escape($0.0), escape($0.1.reason)]
                })
    }
}
