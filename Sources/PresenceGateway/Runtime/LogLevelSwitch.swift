public import Logging
import Synchronization

/// The log level every logger of the process follows, changed while the gateway runs by
/// `PUT /log-level` (README, "Runtime control"). swift-log gives each `Logger` a copy of its
/// handler, made once per label, so a level set on one handler reaches no other logger: the
/// handlers ``SwitchedLogHandler`` wraps all read this one atomic instead, at the cost of one
/// relaxed load per log call.
public final class LogLevelSwitch: Sendable {
    private let raw: Atomic<UInt8>

    public init(_ level: Logger.Level) {
        raw = Atomic(Self.code(level))
    }

    /// The level in force: a message below it is not written.
    public var level: Logger.Level {
        get { Logger.Level.allCases[Int(raw.load(ordering: .relaxed))] }
        set { raw.store(Self.code(newValue), ordering: .relaxed) }
    }

    private static func code(_ level: Logger.Level) -> UInt8 {
        UInt8(Logger.Level.allCases.firstIndex(of: level) ?? 0)
    }
}

/// A log handler whose level is a ``LogLevelSwitch``'s, unless the code holding the logger set
/// one of its own.
public struct SwitchedLogHandler: LogHandler {
    public var wrapped: any LogHandler
    public let levels: LogLevelSwitch
    private var own: Logger.Level?

    public init(_ wrapped: any LogHandler, levels: LogLevelSwitch) {
        self.wrapped = wrapped
        self.levels = levels
    }

    public var logLevel: Logger.Level {
        get { own ?? levels.level }
        set { own = newValue }
    }

    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    public func log(event: LogEvent) {
        wrapped.log(event: event)
    }
}
