extension GatewayConfiguration {
    /// How `presence-gateway` writes its log lines on standard error.
    public enum LogFormat: String, Sendable, Hashable, CaseIterable {
        /// swift-log's `StreamLogHandler`: one readable line per event, metadata inline.
        case text
        /// ``JSONLogHandler``: one JSON object per line, metadata as fields (for journald and
        /// log shippers).
        case json

        /// The format in effect: the command line's, else the configuration file's, else text.
        public static func effective(flag: LogFormat?, configured: LogFormat?) -> LogFormat {
            flag ?? configured ?? .text
        }
    }

    static let logFormats: [String: LogFormat] = Dictionary(
        uniqueKeysWithValues: LogFormat.allCases.map { ($0.rawValue, $0) })
}
