import Foundation

/// The series of one Prometheus text exposition (format 0.0.4, as `GET /metrics` renders the
/// registry) that ``StatusSampler`` needs, read back as numbers: a series that is not there is
/// nil, never 0, so the sampler shows "no data" rather than a rate of 0 for a counter this build
/// does not export.
///
/// ```
/// line   = name [ "{" label *( "," label ) [","] "}" ] SP value [ SP timestamp ]
/// label  = label-name "=" DQUOTE *( escaped / char ) DQUOTE   ; escaped: \\ \" \n
/// ```
///
/// Comment lines (`# HELP`, `# TYPE`) and lines that do not read as a sample are skipped. Only
/// the names in `keeping` (and their `_bucket` series) are kept, so a registry of many series
/// costs a pass over its text and no more.
struct MetricsSnapshot: Sendable, Equatable {
    struct Series: Sendable, Equatable {
        var labels: [String: String]
        var value: Double
    }

    /// Series by metric name.
    private(set) var series: [String: [Series]] = [:]

    /// Reads `text`, keeping the series named in `keeping` (all when nil).
    init(text: String, keeping names: Set<String>? = nil) {
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            guard let (name, labels, value) = Self.sample(line) else { continue }
            if let names, !names.contains(name), !names.contains(String(name.dropLast("_bucket".count))) {
                continue
            }
            series[name, default: []].append(Series(labels: labels, value: value))
        }
    }

    /// The sum of every series of `name`, nil when there is none.
    func total(_ name: String) -> Double? {
        guard let all = series[name], !all.isEmpty else { return nil }
        return all.reduce(0) { $0 + $1.value }
    }

    /// The sums of the series of `name` by the value of `label` (series without it are left
    /// out); nil when no series of `name` has the label.
    func totals(_ name: String, by label: String) -> [String: Double]? {
        var out: [String: Double] = [:]
        for s in series[name] ?? [] {
            guard let key = s.labels[label] else { continue }
            out[key, default: 0] += s.value
        }
        return out.isEmpty ? nil : out
    }

    /// The cumulative buckets of histogram `name` (its `name_bucket` series) summed over every
    /// other label, by upper bound, ascending (`+Inf` last); nil when it has none.
    func buckets(_ name: String) -> [Bucket]? {
        guard let totals = totals(name + "_bucket", by: "le") else { return nil }
        let bounds = totals.compactMap { le, count in Self.number(Substring(le)).map { Bucket(le: $0, count: count) } }
        return bounds.isEmpty ? nil : bounds.sorted { $0.le < $1.le }
    }

    /// One cumulative histogram bucket: how many observations were at most `le`.
    struct Bucket: Sendable, Equatable {
        var le: Double
        var count: Double
    }

    /// The `q` quantile (0…1) of the observations `buckets` (cumulative, ascending, `+Inf` last)
    /// count, interpolated linearly within its bucket as Prometheus' `histogram_quantile` does;
    /// in the `+Inf` bucket, the largest finite bound. Nil without observations.
    static func quantile(_ q: Double, of buckets: [Bucket]) -> Double? {
        guard let total = buckets.last?.count, total > 0 else { return nil }
        let rank = q * total
        var lower = (le: 0.0, count: 0.0)
        for bucket in buckets {
            if bucket.count >= rank {
                guard bucket.le.isFinite else { return lower.le }
                let inBucket = bucket.count - lower.count
                guard inBucket > 0 else { return bucket.le }
                return lower.le + (bucket.le - lower.le) * (rank - lower.count) / inBucket
            }
            lower = (bucket.le, bucket.count)
        }
        return lower.le
    }

    /// The observations counted between `earlier` and `later` (both cumulative, of the same
    /// histogram): per bound, the difference; a bound whose count fell (a restart) counts
    /// `later` alone.
    static func difference(_ later: [Bucket], since earlier: [Bucket]?) -> [Bucket] {
        guard let earlier else { return later }
        let before = Dictionary(earlier.map { ($0.le, $0.count) }, uniquingKeysWith: +)
        let reset = later.contains { $0.count < (before[$0.le] ?? 0) }
        return later.map { Bucket(le: $0.le, count: reset ? $0.count : $0.count - (before[$0.le] ?? 0)) }
    }

    /// A number as the exposition format writes one (`+Inf`, `-Inf`, `NaN` included).
    static func number(_ text: Substring) -> Double? {
        switch text {
        case "+Inf", "Inf": return .infinity
        case "-Inf": return -.infinity
        case "NaN": return .nan
        default: return Double(text)
        }
    }

    /// One sample line: its name, labels and value; nil for a line that is not one.
    private static func sample(_ line: Substring) -> (String, [String: String], Double)? {
        if let brace = line.firstIndex(of: "{") {
            guard let (labels, after) = Self.labels(line[line.index(after: brace)...]) else { return nil }
            let name = line[..<brace].trimmingCharacters(in: .whitespaces)
            guard !name.isEmpty, let value = after.split(separator: " ").first.flatMap(number) else { return nil }
            return (name, labels, value)
        }
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 2, let value = number(fields[1]) else { return nil }
        return (String(fields[0]), [:], value)
    }

    /// The labels after `{` up to the closing `}`, and what follows it; nil when they do not read.
    private static func labels(_ text: Substring) -> ([String: String], Substring)? {
        var labels: [String: String] = [:]
        var index = text.startIndex
        while index < text.endIndex {
            let c = text[index]
            if c == "}" { return (labels, text[text.index(after: index)...]) }
            if c == "," || c == " " {
                index = text.index(after: index)
                continue
            }
            guard let equals = text[index...].firstIndex(of: "="),
                text.index(after: equals) < text.endIndex, text[text.index(after: equals)] == "\""
            else { return nil }
            let name = String(text[index..<equals])
            var value = ""
            var cursor = text.index(equals, offsetBy: 2)
            var closed = false
            while cursor < text.endIndex {
                let v = text[cursor]
                if v == "\"" {
                    closed = true
                    break
                }
                if v == "\\", text.index(after: cursor) < text.endIndex {
                    cursor = text.index(after: cursor)
                    value.append(text[cursor] == "n" ? "\n" : text[cursor])
                } else {
                    value.append(v)
                }
                cursor = text.index(after: cursor)
            }
            guard closed else { return nil }
            labels[name] = value
            index = text.index(after: cursor)
        }
        return nil
    }
}
