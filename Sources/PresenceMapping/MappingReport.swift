/// What a conversion did with each input field: mapped, or dropped and why.
public struct MappingReport: Sendable, Hashable, CustomStringConvertible {
    public struct Entry: Sendable, Hashable {
        /// The input field, as a path ("state/availability", "person/rpid:mood").
        public var field: String
        /// Where it went, or why it was dropped.
        public var detail: String
    }

    public var mapped: [Entry] = []
    public var dropped: [Entry] = []

    public init() {}

    mutating func map(_ field: @autoclosure () -> String, _ detail: @autoclosure () -> String) {
        mapped.append(Entry(field: field(), detail: detail()))
    }

    mutating func drop(_ field: @autoclosure () -> String, _ reason: @autoclosure () -> String) {
        dropped.append(Entry(field: field(), detail: reason()))
    }

    /// The report of one conversion followed by the next one's.
    static func + (a: MappingReport, b: MappingReport) -> MappingReport {
        var r = a
        r.mapped += b.mapped
        r.dropped += b.dropped
        return r
    }

    public var description: String {
        (mapped.map { "mapped  \($0.field) -> \($0.detail)" } + dropped.map { "dropped \($0.field): \($0.detail)" })
            .joined(separator: "\n")
    }
}

/// Where a conversion notes what it did with each input field: a ``MappingReport`` keeps
/// every entry; ``NoMappingReport`` keeps none, and since the texts are autoclosures a
/// conversion specialised for it builds none of them.
protocol MappingReporting {
    /// Whether the entries are kept: a conversion skips the tests that only decide what to
    /// report when they are not (the texts alone are autoclosures; the tests were still made).
    static var keepsEntries: Bool { get }
    mutating func map(_ field: @autoclosure () -> String, _ detail: @autoclosure () -> String)
    mutating func drop(_ field: @autoclosure () -> String, _ reason: @autoclosure () -> String)
}

extension MappingReport: MappingReporting {
    static var keepsEntries: Bool { true }
}

/// The reporter of a caller that discards the report.
struct NoMappingReport: MappingReporting {
    static var keepsEntries: Bool { false }
    func map(_ field: @autoclosure () -> String, _ detail: @autoclosure () -> String) {}
    func drop(_ field: @autoclosure () -> String, _ reason: @autoclosure () -> String) {}
}
