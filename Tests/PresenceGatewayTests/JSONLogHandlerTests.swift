import Foundation
import Logging
import PresenceGateway
import Testing

/// `--log-format json`: one RFC 8259 object per line, fixed fields first, metadata as fields.
@Suite struct JSONLogHandlerTests {
    /// The lines a handler wrote, collected across threads.
    final class Lines: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: [String] = []
        func append(_ line: String) { lock.withLock { stored.append(line) } }
        var all: [String] { lock.withLock { stored } }
    }

    /// 2026-11-25T00:08:01.123Z
    static let fixedTime = Date(timeIntervalSince1970: 1_795_565_281.123)

    static func logger(_ lines: Lines, label: String = "presence-gateway",
                       provider: Logger.MetadataProvider? = nil) -> Logger {
        Logger(label: label) { label in
            var handler = JSONLogHandler(label: label, metadataProvider: provider, clock: { fixedTime }) { lines.append($0) }
            handler.logLevel = .debug
            return handler
        }
    }

    /// Parses one line as a JSON object (failing the test when it is not one).
    static func object(_ line: String) throws -> [String: Any] {
        let value = try JSONSerialization.jsonObject(with: Data(line.utf8))
        return try #require(value as? [String: Any], "not a JSON object: \(line)")
    }

    @Test(arguments: [
        ("plain", #""plain""#),
        ("say \"hi\"", #""say \"hi\"""#),
        (#"C:\temp\x"#, #""C:\\temp\\x""#),
        ("a\nb\r\tc", #""a\u000ab\u000d\u0009c""#),
        ("\u{0}\u{1}\u{1B}[31m\u{1F}", #""\u0000\u0001\u001b[31m\u001f""#),
        ("\u{7F} é → 😀", "\"\u{7F} é → 😀\""),
        ("</script>", #""</script>""#),
    ])
    func stringsAreEscapedAsRFC8259Requires(_ text: String, _ expected: String) throws {
        #expect(JSONLogHandler.quoted(text) == expected)
        // And a JSON parser reads back exactly the original text.
        let decoded = try JSONSerialization.jsonObject(with: Data("[\(expected)]".utf8)) as? [String]
        #expect(decoded == [text])
    }

    @Test func everyControlCharacterBecomesAUnicodeEscape() {
        for value in UInt32(0)...0x1F {
            let scalar = Unicode.Scalar(UInt8(value))
            let quoted = JSONLogHandler.quoted(String(Character(scalar)))
            #expect(quoted == "\"\\u00" + (value < 0x10 ? "0" : "") + String(value, radix: 16) + "\"")
        }
    }

    @Test func aLineHasTheFixedFieldsFirstThenTheMetadataSortedByKey() throws {
        let lines = Lines()
        let logger = Self.logger(lines)
        logger.notice("refused NOTIFY in a dialog", metadata: [
            "side": "oma", "call-id": "a84b4c76e66710@pc33", "method": "NOTIFY", "status": "403", "peer": "kamailio",
        ])
        let line = try #require(lines.all.first)
        #expect(lines.all.count == 1)
        #expect(line == #"{"level":"notice","time":"2026-11-25T00:08:01.123Z","label":"presence-gateway","#
            + #""message":"refused NOTIFY in a dialog","call-id":"a84b4c76e66710@pc33","method":"NOTIFY","#
            + #""peer":"kamailio","side":"oma","status":"403"}"# + "\n")
        let object = try Self.object(line)
        #expect(object["call-id"] as? String == "a84b4c76e66710@pc33")
        #expect(object["level"] as? String == "notice")
    }

    @Test func aMessageWithNewlinesStaysOneLine() throws {
        let lines = Lines()
        Self.logger(lines).error("first\nsecond \"quoted\" \\ \u{1B}")
        let line = try #require(lines.all.first)
        #expect(line.filter { $0 == "\n" }.count == 1 && line.hasSuffix("}\n"))
        #expect(try Self.object(line)["message"] as? String == "first\nsecond \"quoted\" \\ \u{1B}")
    }

    @Test func callMetadataWinsOverProviderWhichWinsOverTheHandlers() throws {
        let lines = Lines()
        let provider = Logger.MetadataProvider { ["side": "from-provider", "peer": "from-provider"] }
        var logger = Self.logger(lines, provider: provider)
        logger[metadataKey: "side"] = "from-handler"
        logger[metadataKey: "peer"] = "from-handler"
        logger[metadataKey: "node"] = "gw1"
        logger.info("x", metadata: ["side": "from-call"])
        let object = try Self.object(try #require(lines.all.first))
        #expect(object["side"] as? String == "from-call")
        #expect(object["peer"] as? String == "from-provider")
        #expect(object["node"] as? String == "gw1")
    }

    @Test func metadataNamedLikeAFixedFieldDoesNotReplaceIt() throws {
        let lines = Lines()
        Self.logger(lines).warning("real message", metadata: ["message": "fake", "level": "critical", "time": "0", "label": "x"])
        let line = try #require(lines.all.first)
        let object = try Self.object(line)
        #expect(object["message"] as? String == "real message")
        #expect(object["level"] as? String == "warning")
        #expect(object["label"] as? String == "presence-gateway")
        #expect(object["metadata.message"] as? String == "fake")
        #expect(object["metadata.level"] as? String == "critical")
        // Each key once: JSONSerialization would silently keep one of two duplicates.
        #expect(line.components(separatedBy: #""message":"#).count == 2)
    }

    @Test func nestedMetadataBecomesObjectsAndArrays() throws {
        let lines = Lines()
        Self.logger(lines).debug("nested", metadata: [
            "targets": ["sip:a;transport=tls", .stringConvertible(5061)],
            "peer": ["name": "edge", "names": ["sip.contoso.com"]],
        ])
        let line = try #require(lines.all.first)
        #expect(line.contains(#""peer":{"name":"edge","names":["sip.contoso.com"]},"targets":["sip:a;transport=tls","5061"]"#))
        let object = try Self.object(line)
        #expect(object["targets"] as? [String] == ["sip:a;transport=tls", "5061"])
    }

    @Test func anAttachedErrorAddsItsMessageAndType() throws {
        struct Refused: Error, CustomStringConvertible { var description: String { "peer \"x\" refused" } }
        let lines = Lines()
        let handler = JSONLogHandler(label: "t", clock: { Self.fixedTime }) { lines.append($0) }
        handler.log(event: LogEvent(level: .error, message: "send failed", error: Refused(), metadata: nil, source: nil,
                                    file: #fileID, function: #function, line: #line))
        let object = try Self.object(try #require(lines.all.first))
        #expect(object["error.message"] as? String == "peer \"x\" refused")
        #expect((object["error.type"] as? String)?.hasSuffix("Refused") == true)
    }

    /// Under journald each line starts with its syslog priority, `<N>` (sd-daemon(3)), which
    /// journald takes and strips; what follows is the same JSON object.
    @Test func underTheJournalEachLineStartsWithItsPriority() throws {
        let lines = Lines()
        var handler = JSONLogHandler(label: "t", clock: { Self.fixedTime }) { lines.append($0) }
        handler.logLevel = .trace
        handler.journalPriority = true
        let levels: [(Logger.Level, String)] = [
            (.trace, "<7>"), (.debug, "<7>"), (.info, "<6>"), (.notice, "<5>"), (.warning, "<4>"), (.error, "<3>"),
            (.critical, "<2>"),
        ]
        for (level, _) in levels {
            handler.log(event: LogEvent(level: level, message: "m", metadata: nil, source: nil, file: #fileID,
                                        function: #function, line: #line))
        }
        for ((level, prefix), line) in zip(levels, lines.all) {
            #expect(line.hasPrefix(prefix + "{"), "\(level): \(line)")
            #expect(try Self.object(String(line.dropFirst(prefix.count)))["level"] as? String == level.rawValue)
        }
        #expect(lines.all.count == levels.count)
    }

    /// `$JOURNAL_STREAM` names the journal's stream by device and inode (systemd.exec(5)): only a
    /// descriptor that is that stream writes priorities; one redirected elsewhere does not.
    @Test func theJournalIsRecognizedByItsDeviceAndInode() throws {
        let path = NSTemporaryDirectory() + "journal-\(UInt32.random(in: 0...UInt32.max))"
        FileManager.default.createFile(atPath: path, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        defer { try? handle.close() }
        var status = stat()
        #expect(fstat(handle.fileDescriptor, &status) == 0)
        let stream = "\(status.st_dev):\(status.st_ino)"
        #expect(JSONLogHandler.writesToJournal(descriptor: handle.fileDescriptor, environment: ["JOURNAL_STREAM": stream]))
        #expect(!JSONLogHandler.writesToJournal(descriptor: handle.fileDescriptor, environment: [:]))
        #expect(!JSONLogHandler.writesToJournal(
            descriptor: handle.fileDescriptor, environment: ["JOURNAL_STREAM": "\(status.st_dev):\(status.st_ino + 1)"]))
        #expect(!JSONLogHandler.writesToJournal(descriptor: handle.fileDescriptor, environment: ["JOURNAL_STREAM": "journal"]))
    }

    @Test func levelsBelowTheHandlersLevelAreNotWritten() {
        let lines = Lines()
        var logger = Self.logger(lines)
        logger.logLevel = .notice
        logger.info("hidden")
        logger.notice("shown")
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.contains(#""message":"shown""#) == true)
    }

    @Test(arguments: [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (1_795_565_281.123, "2026-11-25T00:08:01.123Z"),
        (951_782_400.5, "2000-02-29T00:00:00.500Z"),  // a leap day of a year divisible by 400
        (4_107_542_399.999, "2100-02-28T23:59:59.999Z"),  // 2100 is not a leap year
        (-0.001, "1969-12-31T23:59:59.999Z"),
        (-1e300, "0000-01-01T00:00:00.000Z"),
        (1e300, "9999-12-31T23:59:59.999Z"),
        (Double.nan, "1970-01-01T00:00:00.000Z"),
        (Double.infinity, "9999-12-31T23:59:59.999Z"),
    ])
    func timestampsAreRFC3339InUTCWithMilliseconds(_ seconds: Double, _ expected: String) {
        #expect(JSONLogHandler.timestamp(Date(timeIntervalSince1970: seconds)) == expected)
    }

    @Test func timestampsAgreeWithFoundationsISO8601Formatter() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var seconds = -2_208_988_800.0  // 1900-01-01
        while seconds < 4_102_444_800 {  // 2100-01-01
            let date = Date(timeIntervalSince1970: seconds.rounded(.down))
            #expect(JSONLogHandler.timestamp(date) == formatter.string(from: date), "\(seconds)")
            seconds += 7_777_777.0  // about 90 days, wandering through months and leap years
        }
    }
}
