import Foundation

/// The status page's figures: the tiles of current values and the charts of the samples
/// (``StatusSampler``), drawn as inline SVG with no library. The page's script
/// (``statusScript``) draws the same markup from `/status.json` every 5 s; what is drawn here is
/// the first view and the view without script.
extension AdminAPI {
    /// One line of a chart: a value (or none) per sample.
    struct ChartLine {
        var label: String
        var color: String
        var values: [Double?]
    }

    static let chartWidth = 380.0
    static let chartHeight = 130.0

    /// `value` as the page writes it: "–" for none, fewer decimals as it grows.
    static func figure(_ value: Double?) -> String {
        guard let value, value.isFinite else { return "–" }
        return String(format: value >= 100 ? "%.0f" : value >= 10 ? "%.1f" : "%.2f", value)
    }

    /// The smallest of 1, 2, 5 × 10ⁿ at least `value` (1 for none): the top of a chart's scale.
    static func scaleTop(_ value: Double) -> Double {
        guard value > 0, value.isFinite else { return 1 }
        let power = pow(10, floor(log10(value)))
        let mantissa = value / power
        return (mantissa <= 1 ? 1 : mantissa <= 2 ? 2 : mantissa <= 5 ? 5 : 10) * power
    }

    /// An SVG chart of `lines` over `times` (one per sample), the last at the right edge, the
    /// span that of the samples (at least a minute), with its legend.
    static func chart(_ lines: [ChartLine], times: [Date]) -> String {
        let (w, h, left, bottom, top) = (chartWidth, chartHeight, 44.0, 18.0, 8.0)
        let last = times.last ?? Date()
        let span = max(60, times.first.map { last.timeIntervalSince($0) } ?? 0)
        let highest = scaleTop(lines.flatMap { $0.values.compactMap { $0 } }.max() ?? 0)
        func x(_ time: Date) -> String { coordinate(left + (w - left - 4) * (1 - last.timeIntervalSince(time) / span)) }
        func y(_ value: Double) -> String { coordinate(top + (h - top - bottom) * (1 - value / highest)) }
        var svg =
            "<svg class=\"chart\" viewBox=\"0 0 \(Int(w)) \(Int(h))\" width=\"\(Int(w))\" height=\"\(Int(h))\">"
            + "<path class=\"axis\" d=\"M\(Int(left)) \(Int(top))V\(Int(h - bottom))H\(Int(w - 4))\"/>"
            + "<text x=\"\(Int(left - 4))\" y=\"\(Int(top + 8))\" text-anchor=\"end\">\(figure(highest))</text>"
            + "<text x=\"\(Int(left - 4))\" y=\"\(Int(h - bottom))\" text-anchor=\"end\">0</text>"
            + "<text x=\"\(Int(left))\" y=\"\(Int(h - 4))\">−\(spanText(span))</text>"
            + "<text x=\"\(Int(w - 4))\" y=\"\(Int(h - 4))\" text-anchor=\"end\">now</text>"
        var drawn = false
        for line in lines {
            var d = ""
            var run = 0
            for (time, value) in zip(times, line.values) {
                guard let value, value.isFinite else {
                    if run == 1 { d += "l0 0" }
                    run = 0
                    continue
                }
                d += (run == 0 ? "M" : "L") + x(time) + " " + y(value)
                run += 1
            }
            if run == 1 { d += "l0 0" }
            guard !d.isEmpty else { continue }
            drawn = true
            svg += "<path class=\"line\" stroke=\"\(line.color)\" d=\"\(d)\"/>"
        }
        if !drawn {
            svg +=
                "<text class=\"nodata\" x=\"\(Int((w + left) / 2))\" y=\"\(Int(h / 2))\" text-anchor=\"middle\">"
                + "no data yet</text>"
        }
        let legend = lines.map { "<span style=\"color:\($0.color)\">■</span> \($0.label)" }.joined(separator: " ")
        return svg + "</svg><div class=\"legend\">\(legend)</div>"
    }

    /// `value` with one decimal, for the SVG coordinates.
    private static func coordinate(_ value: Double) -> String { String(format: "%.1f", value) }

    /// How long `seconds` is, for a chart's axis: `45 s`, `15 min`.
    static func spanText(_ seconds: Double) -> String {
        seconds < 120 ? "\(Int(seconds.rounded())) s" : "\(Int((seconds / 60).rounded())) min"
    }

    /// The colours of the sides, subscription kinds and latencies, the script's too.
    static let colors: [String: String] = [
        "enterprise": "#1f6feb", "oma": "#e8590c", "all": "#555555", "notifies": "#2f9e44",
        "rejected": "#c92a2a", "refused": "#7048e8", "enterprise_watchers": "#1f6feb", "oma_watchers": "#e8590c",
        "oma_legs": "#74c0fc", "enterprise_legs": "#ffa94d",
    ]

    /// The subscription kinds charted, in order.
    static let chartedKinds = ["enterprise_watchers", "oma_watchers", "oma_legs", "enterprise_legs"]

    /// The five charts of `samples`, each in a `<figure id="chart-…">`.
    static func charts(_ samples: [StatusSampler.Sample]) -> String {
        let times = samples.map(\.time)
        let sides = Set(samples.flatMap(\.requestsPerSecond.keys)).sorted()
        func ms(_ value: Double?) -> Double? { value.map { $0 * 1000 } }
        let figures: [(String, String, [ChartLine])] = [
            (
                "requests", "Requests received /s",
                sides.map { side in
                    ChartLine(
                        label: side, color: colors[side] ?? "#555555",
                        values: samples.map { $0.requestsPerSecond[side] }
                    )
                }
            ),
            (
                "notifies", "NOTIFYs relayed /s",
                [ChartLine(label: "NOTIFY", color: "#2f9e44", values: samples.map(\.notifiesPerSecond))]
            ),
            (
                "rejections", "Rejected and refused /s",
                [
                    ChartLine(label: "rejected", color: "#c92a2a", values: samples.map(\.rejectionsPerSecond)),
                    ChartLine(label: "refused", color: "#7048e8", values: samples.map(\.refusalsPerSecond)),
                ]
            ),
            (
                "subscriptions", "Active subscriptions",
                chartedKinds.map { kind in
                    ChartLine(
                        label: kind.replacingOccurrences(of: "_", with: " "), color: colors[kind] ?? "#555555",
                        values: samples.map { $0.subscriptions[kind].map(Double.init) })
                }
            ),
            (
                "latency", "Latency (ms)",
                [
                    ChartLine(
                        label: "response p50", color: "#1f6feb", values: samples.map { ms($0.responseLatency?.p50) }),
                    ChartLine(
                        label: "response p99", color: "#0b3d91", values: samples.map { ms($0.responseLatency?.p99) }),
                    ChartLine(label: "relay p50", color: "#2f9e44", values: samples.map { ms($0.relayLatency?.p50) }),
                    ChartLine(label: "relay p99", color: "#1b5e20", values: samples.map { ms($0.relayLatency?.p99) }),
                ]
            ),
        ]
        return figures.map { id, title, lines in
            "<figure id=\"chart-\(id)\"><figcaption>\(title)</figcaption>\(chart(lines, times: times))</figure>"
        }.joined(separator: "\n")
    }

    /// The tiles of the last sample's values, each value in an element the script updates by id.
    static func tiles(_ last: StatusSampler.Sample?) -> String {
        let requests = last.flatMap { $0.requestsPerSecond.isEmpty ? nil : $0.requestsPerSecond.values.reduce(0, +) }
        let watchers = last.map {
            Double(($0.subscriptions["enterprise_watchers"] ?? 0) + ($0.subscriptions["oma_watchers"] ?? 0))
        }
        let tiles: [(String, String, Double?)] = [
            ("requests", "requests /s", requests),
            ("notifies", "NOTIFYs relayed /s", last?.notifiesPerSecond),
            ("rejected", "rejected /s", last?.rejectionsPerSecond),
            ("refused", "refused /s", last?.refusalsPerSecond),
            ("watchers", "watchers bridged", watchers),
            ("response-p99", "response p99 (ms)", last?.responseLatency.map { $0.p99 * 1000 }),
            ("relay-p99", "relay p99 (ms)", last?.relayLatency.map { $0.p99 * 1000 }),
        ]
        return "<div class=\"tiles\">"
            + tiles.map { id, label, value in
                let text = id == "watchers" ? value.map { String(Int($0)) } ?? "–" : figure(value)
                return "<div class=\"tile\"><div class=\"v\" id=\"v-\(id)\">\(text)</div>"
                    + "<div class=\"k\">\(label)</div></div>"
            }.joined() + "</div>"
    }
}
