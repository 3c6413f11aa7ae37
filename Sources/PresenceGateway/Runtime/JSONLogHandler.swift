public import Foundation
public import Logging

/// A swift-log handler that writes one JSON object (RFC 8259) per line, for journald and log
/// shippers: `presence-gateway --log-format json`.
///
///     {"level":"notice","time":"2026-11-25T00:08:01.123Z","label":"presence-gateway",
///      "message":"refused NOTIFY in a dialog of edge ...","call-id":"a84b4c76e66710","side":"oma"}
///
/// (one line in the output). `level`, `time` (RFC 3339 §5.6, UTC, milliseconds), `label` and
/// `message` come first; then the metadata of the handler, its metadata provider and the log
/// call, in that order of precedence, sorted by key. A metadata key that is one of the four
/// fixed names is written as `metadata.<key>`, so metadata never hides a fixed field. An error
/// attached to the event adds `error.message` and `error.type`, as swift-log's
/// `StreamLogHandler` does. Nested metadata becomes nested JSON objects and arrays; every other
/// value is a string.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public let label: String
    /// Each line starts with its syslog priority, `<N>` (sd-daemon(3)), which journald takes as
    /// the entry's priority and strips (`journalctl -p warning` then filters, and `-o cat` shows
    /// the JSON alone). ``standardError(label:)`` sets it when standard error is the journal.
    public var journalPriority = false
    private let clock: @Sendable () -> Date
    private let output: @Sendable (String) -> Void

    /// The four fields every line has, in this order.
    public static let fixedFields = ["level", "time", "label", "message"]

    /// A handler that passes each line, with its final newline, to `output`; `clock` gives the
    /// time of each event.
    public init(
        label: String, metadataProvider: Logger.MetadataProvider? = nil,
        clock: @escaping @Sendable () -> Date = { Date() },
        output: @escaping @Sendable (String) -> Void
    ) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.clock = clock
        self.output = output
    }

    /// A handler writing to standard error, each line with one `write`, so lines of concurrent
    /// loggers do not interleave. A failed write is dropped: logging never stops the gateway.
    public static func standardError(label: String) -> JSONLogHandler {
        var handler = JSONLogHandler(label: label, metadataProvider: LoggingSystem.metadataProvider) { line in
            try? FileHandle.standardError.write(contentsOf: Data(line.utf8))
        }
        handler.journalPriority = writesToJournal(descriptor: STDERR_FILENO)
        return handler
    }

    /// Whether `descriptor` is the stream systemd connected to the journal: `$JOURNAL_STREAM`
    /// (`DEVICE:INODE`, systemd.exec(5)) names its device and inode. Not merely set: a child
    /// whose standard error was redirected inherits the variable.
    public static func writesToJournal(
        descriptor: Int32, environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return false }
        return UInt64(status.st_dev) == device && UInt64(status.st_ino) == inode
    }

    /// The syslog priority of a level (RFC 5424 §6.2.1 severities, as sd-daemon(3) prefixes them).
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { _, new in new } }
        if let explicit = event.metadata { fields.merge(explicit) { _, new in new } }
        if let error = event.error {
            fields["error.message"] = "\(error)"
            fields["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        let prefix = journalPriority ? "<\(Self.priority(event.level))>" : ""
        output(
            prefix
                + Self.line(
                    level: event.level, time: clock(), label: label, message: event.message.description,
                    metadata: fields) + "\n")
    }

    @available(*, deprecated, renamed: "log(event:)")
    public func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String,
        file: String, function: String, line: UInt
    ) {
        log(
            event: LogEvent(
                level: level, message: message, metadata: metadata, source: source, file: file,
                function: function, line: line))
    }

    /// One event as a JSON object, without the newline.
    public static func line(
        level: Logger.Level, time: Date, label: String, message: String,
        metadata: Logger.Metadata
    ) -> String {
        var out = "{"
        appendMember("level", .string(level.rawValue), to: &out)
        appendMember("time", .string(timestamp(time)), to: &out)
        appendMember("label", .string(label), to: &out)
        appendMember("message", .string(message), to: &out)
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            appendMember(fixedFields.contains(key) ? "metadata." + key : key, value, to: &out)
        }
        out += "}"
        return out
    }

    private static func appendMember(_ key: String, _ value: Logger.MetadataValue, to out: inout String) {
        if out.last != "{" { out += "," }
        appendString(key, to: &out)
        out += ":"
        appendValue(value, to: &out)
    }

    private static func appendValue(_ value: Logger.MetadataValue, to out: inout String) {
        switch value {
        case .string(let text):
            appendString(text, to: &out)
        case .stringConvertible(let item):
            appendString(item.description, to: &out)
        case .dictionary(let members):
            out += "{"
            for (key, member) in members.sorted(by: { $0.key < $1.key }) { appendMember(key, member, to: &out) }
            out += "}"
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                appendValue(item, to: &out)
            }
            out += "]"
        }
    }

    /// A JSON string (RFC 8259 §7): `"` and `\` escaped with a backslash, the control characters
    /// U+0000 to U+001F as `\u00XX`; everything else as it is (the output is UTF-8).
    static func appendString(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x00...0x1F:
                let hex = String(scalar.value, radix: 16, uppercase: false)
                out += "\\u00" + (hex.count == 1 ? "0" + hex : hex)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// A JSON string for `text`, quotes included.
    public static func quoted(_ text: String) -> String {
        var out = ""
        appendString(text, to: &out)
        return out
    }

    /// RFC 3339 §5.6 `date-time` in UTC with milliseconds: `2026-11-25T00:08:01.123Z`. Times
    /// outside the years 0000 to 9999 are clamped to them (a clock cannot produce them, and the
    /// field must stay a valid date-time).
    public static func timestamp(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        // 0000-01-01 and 9999-12-31T23:59:59.999 in Unix time.
        let clamped = seconds.isNaN ? 0 : min(max(seconds, -62_167_219_200), 253_402_300_799.999)
        // Whole microseconds first: 0.123 s is 0.12299999... as a Double and must still be .123.
        let (milliseconds, _) = floorDivision(Int64((clamped * 1_000_000).rounded()), 1000)
        let (wholeSeconds, millisecond) = floorDivision(milliseconds, 1000)
        let (days, secondOfDay) = floorDivision(wholeSeconds, 86_400)
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2) + "T"
            + pad(secondOfDay / 3600, 2) + ":" + pad(secondOfDay / 60 % 60, 2) + ":" + pad(secondOfDay % 60, 2)
            + "." + pad(millisecond, 3) + "Z"
    }

    private static func floorDivision(_ a: Int64, _ b: Int64) -> (quotient: Int64, remainder: Int64) {
        let remainder = a % b
        return remainder < 0 ? (a / b - 1, remainder + b) : (a / b, remainder)
    }

    /// The proleptic Gregorian date of a day counted from 1970-01-01 (H. Hinnant, "chrono-Compatible
    /// Low-Level Date Algorithms", `civil_from_days`).
    private static func civilDate(daysSinceEpoch: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
