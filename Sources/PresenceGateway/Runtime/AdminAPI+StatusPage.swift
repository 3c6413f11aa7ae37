import Foundation
import NIOCore

extension AdminAPI {
    /// `GET /`: a page an operator can open in a browser: the version, uptime and store, tiles
    /// of the current rates, charts of the last 15 minutes (inline SVG, ``charts(_:)``), each
    /// peer with its health, the first bridged subscriptions per side and the last failures. Its
    /// script (``statusScript``) redraws all but the subscriptions from `/status.json` every
    /// 5 s; without script the page reloads itself every ``reloadSeconds``.
    /// Each side's first ``statusPageRows`` subscriptions only, and their number: a load costs
    /// the relay's loop two pages, not the whole table; the refreshes cost it the peers alone.
    func statusPage(on loop: any EventLoop) -> EventLoopFuture<Reply> {
        let report = self.report?()
        return subscriptions(nil, .enterprise, 0, Self.statusPageRows)
            .and(subscriptions(nil, .oma, 0, Self.statusPageRows)).and(peers())
            .map { sides, peers in
                let (enterprise, oma) = sides
                return Reply(
                    status: .ok, type: "text/html; charset=utf-8",
                    body: Array(
                        Self.page([.enterprise: enterprise, .oma: oma], peers, report: report, at: Date()).utf8),
                    headers: [("Cache-Control", "no-store")])
            }
    }

    /// `GET /status.json`: the report (``GatewayStatusReport``) with the peers.
    func statusJSON(on loop: any EventLoop) -> EventLoopFuture<Reply> {
        guard let report = report?() else {
            return loop.makeSucceededFuture(Self.error(.notFound, "no status report: the gateway is not running"))
        }
        return peers().map { peers in
            var report = report
            report.peers = peers
            return Reply(status: .ok, body: Self.json(report), headers: [("Cache-Control", "no-store")])
        }
    }

    static let statusPageRows = 200
    /// How often the page reloads itself when its script does not run.
    static let reloadSeconds = 15

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

    static let style = """
        body { font-family: sans-serif; margin: 1.5em; color: #222; }
        table { border-collapse: collapse; margin-bottom: 1em; }
        th, td { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
        th { background: #eee; }
        .ok { color: #1a7f37; } .bad { color: #c0392b; }
        .meta { color: #555; }
        .tiles { display: flex; flex-wrap: wrap; gap: 0.6em; margin: 1em 0; }
        .tile { border: 1px solid #ccc; border-radius: 6px; padding: 0.4em 0.9em; min-width: 7em; }
        .tile .v { font-size: 1.6em; font-weight: bold; } .tile .k { color: #555; font-size: 0.85em; }
        .charts { display: flex; flex-wrap: wrap; gap: 1em; }
        figure { margin: 0; border: 1px solid #ddd; border-radius: 6px; padding: 0.4em; }
        figcaption { font-weight: bold; font-size: 0.9em; margin-bottom: 0.2em; }
        svg.chart text { font-size: 10px; fill: #555; }
        svg.chart .axis { stroke: #999; fill: none; }
        svg.chart .line { fill: none; stroke-width: 1.8; stroke-linecap: round; stroke-linejoin: round; }
        .legend { font-size: 0.8em; color: #333; }
        """

    static func page(
        _ sides: [GatewayConfiguration.Side: (total: Int, page: [Subscription])], _ peers: [PeerHealth],
        report: GatewayStatusReport? = nil, at now: Date
    ) -> String {
        let time = ISO8601DateFormatter()
        var sections: [String] = []
        sections.append(peersSection(peers, at: now))
        for side in GatewayConfiguration.Side.allCases {
            let (total, mine) = sides[side] ?? (0, [])
            sections.append(subscriptionsSection(side, total: total, page: mine))
        }
        sections.append(failuresSection(peers, time: time))
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>PresenceGateway</title>
            <noscript><meta http-equiv="refresh" content="\(reloadSeconds)"></noscript>
            <style>
            \(style)
            </style></head>
            <body>
            <h1>PresenceGateway</h1>
            \(header(report, at: now, time: time))
            \(report.map { tiles($0.samples.last) + "<div class=\"charts\">\n" + charts($0.samples) + "\n</div>" } ?? "")
            \(sections.joined(separator: "\n"))
            <p class="meta">JSON: <code>/status.json</code>, <code>/subscriptions</code>, <code>/peers</code>; \
            metrics: <code>/metrics</code>.</p>
            <script>
            \(statusScript)
            </script>
            </body></html>

            """
    }

    /// The line under the title: version, uptime, store, and when the view was drawn (the
    /// script's mark, `#refreshed`).
    private static func header(_ report: GatewayStatusReport?, at now: Date, time: ISO8601DateFormatter) -> String {
        let drawn = "<span id=\"refreshed\">at \(time.string(from: now))</span>"
        guard let report else { return "<p class=\"meta\">\(drawn)</p>" }
        let s = report.store
        var store = [s.kind + (s.location.map { " " + $0 } ?? ""), s.available ? "available" : "UNAVAILABLE"]
        if let pending = s.pendingChanges { store.append("\(pending) pending") }
        if let node = s.node { store.append("node \(node), lease \(s.leaseSeconds ?? 0) s") }
        return """
            <p class="meta">Version \(escape(report.version)) (Swift \(escape(report.swift))) · up \
            <span id="uptime">\(uptime(report.uptimeSeconds))</span> · store \
            <span id="store" class="\(s.available ? "" : "bad")">\(escape(store.joined(separator: ", ")))</span> · \(drawn)</p>
            """
    }

    /// `seconds` as the page's header says it: `2 d 3 h 4 min 5 s`, the leading zeros left out.
    static func uptime(_ seconds: Int) -> String {
        let (d, h, m, s) = (seconds / 86400, seconds % 86400 / 3600, seconds % 3600 / 60, seconds % 60)
        return (d > 0 ? "\(d) d " : "") + (d > 0 || h > 0 ? "\(h) h " : "") + "\(m) min \(s) s"
    }

    /// How long before `now` `date` was, in seconds ("never" without one).
    private static func ago(_ date: Date?, now: Date) -> String {
        guard let date else { return "never" }
        return "\(Int(now.timeIntervalSince(date)))&nbsp;s ago"
    }

    /// An HTML table of `rows` (their cells already escaped) under `header`; one "none" row
    /// when there are none.
    private static func table(_ header: [String], _ rows: [[String]], bodyID: String? = nil) -> String {
        let head = "<thead><tr>" + header.map { "<th>\($0)</th>" }.joined() + "</tr></thead>"
        let body =
            rows.isEmpty
            ? "<tr><td colspan=\"\(header.count)\">none</td></tr>"
            : rows.map { "<tr>" + $0.map { "<td>\($0)</td>" }.joined() + "</tr>" }.joined(separator: "\n")
        return "<table>\n\(head)\n<tbody\(bodyID.map { " id=\"\($0)\"" } ?? "")>\(body)</tbody>\n</table>"
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
                ["peer", "side", "configured", "last success", "last failure", "requests/s", "rejected/s"], peerRows,
                bodyID: "peers-body")
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
