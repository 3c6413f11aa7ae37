import Foundation
public import PresenceDocuments

/// The mapping tables of `Mappings/`, loaded and validated.
///
/// Loading checks what the tables promise: availability ranges cover
/// 0…2^31−1 (in fact the whole xs:unsignedInt range) with no gap or overlap,
/// rows that share a range split it by an activity condition and its negation,
/// every RPID token is an RFC 4480 token and every enhanced-presence token a
/// known one.
public struct MappingTables: Sendable {
    /// A condition on the enhanced-presence activity token of a row.
    public enum TokenCondition: Sendable, Hashable {
        case any
        case equals(MSActivityToken)
        case differs(MSActivityToken)

        func matches(_ token: MSActivityToken?) -> Bool {
            switch self {
            case .any: true
            case .equals(let t): token == t
            case .differs(let t): token != t
            }
        }
    }

    /// An availability range with a token condition.
    public struct Range: Sendable, Hashable {
        public var min: UInt32
        public var max: UInt32
        public var activity: TokenCondition
        func contains(_ availability: UInt32, _ token: MSActivityToken?) -> Bool {
            availability >= min && availability <= max && activity.matches(token)
        }
    }

    /// A row of `availability-pidf.tsv` ([MS-PRES] §3.7.5.4).
    public struct PIDFRow: Sendable, Hashable {
        public var range: Range
        public var basic: PIDFBasic
        public var rpidActivity: String?
        public var source: String
    }

    /// A row of `availability-pidf-detail.tsv`.
    public struct DetailRow: Sendable, Hashable {
        public var range: Range
        public var className: String
        public var activities: [String]
        public var other: String?
        public var userInput: RPIDUserInput.Value?
        public var source: String
    }

    /// A row of `availability-msrtc.tsv` ([MS-PRES] §3.7.5.5).
    public struct MSRTCRow: Sendable, Hashable {
        public var range: Range
        public var avail: UInt32
        /// Whether the state text is the token when there is one.
        public var stateFromToken: Bool
        /// The state text otherwise.
        public var stateText: String
        public var availabilityAggregate: UInt32
        public var activityAggregate: UInt32
        public var source: String
    }

    /// A row of `pidf-availability.tsv`.
    public struct ReverseRow: Sendable, Hashable {
        public enum Basic: Sendable, Hashable { case open, closed, none, any }
        public enum Activity: Sendable, Hashable {
            case token(String)
            case other(String)
            case none, any
        }
        public var basic: Basic
        public var activity: Activity
        public var userInput: RPIDUserInput.Value?
        public var availability: UInt32
        public var source: String
    }

    /// A row of `activity-tokens.tsv`.
    public struct TokenRow: Sendable, Hashable {
        public var token: MSActivityToken
        public var rpid: String?
        public var other: String?
        /// False for rows that are only read.
        public var written: Bool
        public var source: String
    }

    public var availabilityPIDF: [PIDFRow]
    public var availabilityDetail: [DetailRow]
    public var availabilityMSRTC: [MSRTCRow]
    public var pidfAvailability: [ReverseRow]
    public var activityTokens: [TokenRow]
    public var rpidActivities: Set<String>
    public var msActivityTokens: Set<MSActivityToken>
    /// msrtc state text → token (nil: the text is a band word, no token).
    public var msrtcStates: [String: MSActivityToken?]
    /// Enhanced-presence capability element → RFC 5196 flag, in table order.
    public var capabilities: [(ms: String, caps: String)]
    /// Free/busy block state → RPID activity and other text (`freebusy.tsv`).
    public var freeBusy: [FreeBusyRow]
    /// OMA Presence SIMPLE's PIDF extensions ⇄ enhanced presence (`oma-extensions.tsv`).
    public var omaExtensions: [OMARow]
    /// Availability → band of the UPnP Presence:1 payloads (`upnp-bands.tsv`).
    public var upnpBands: [UPnPBandRow]

    /// A row of `freebusy.tsv`.
    public struct FreeBusyRow: Sendable, Hashable {
        public var state: FreeBusyState
        public var rpid: String?
        public var other: String?
        public var source: String
    }

    /// The file names, in load order.
    public static let fileNames = [
        "rpid-activities.tsv", "ms-activity-tokens.tsv", "availability-pidf.tsv", "availability-pidf-detail.tsv",
        "availability-msrtc.tsv", "pidf-availability.tsv", "activity-tokens.tsv", "msrtc-states.tsv",
        "capabilities.tsv", "freebusy.tsv", "oma-extensions.tsv", "upnp-bands.tsv",
    ]

    /// The tables built into the program (from the package's `Mappings/`).
    public static func builtIn() throws(MappingError) -> MappingTables {
        try MappingTables { name in EmbeddedFiles.files["Mappings/\(name)"] }
    }

    /// The tables in a directory (`--mappings DIR`): every file must be there.
    public static func load(directory: String) throws(MappingError) -> MappingTables {
        try MappingTables { name in
            try? String(contentsOfFile: (directory as NSString).appendingPathComponent(name), encoding: .utf8)
        }
    }

    /// Loads every table through `read` (file name → contents, nil when missing).
    public init(read: (String) -> String?) throws(MappingError) {
        func table(_ name: String, _ columns: [String]) throws(MappingError) -> TSVTable {
            guard let text = read(name) else { throw MappingError(.missingTable, "table not found", file: name) }
            return try TSVTable(file: name, text: text, required: columns + ["source"])
        }

        let rpid = try table("rpid-activities.tsv", ["token"])
        rpidActivities = Set(rpid.rows.map { $0.string("token") })
        let ms = try table("ms-activity-tokens.tsv", ["token"])
        msActivityTokens = Set(ms.rows.map { MSActivityToken($0.string("token")) })

        let known = msActivityTokens
        let vocabulary = rpidActivities
        func rpidToken(_ row: TSVTable.Row, _ column: String, _ value: String) throws(MappingError) -> String {
            guard vocabulary.contains(value) else {
                throw row.error(
                    column, "\"\(value)\" is not an RFC 4480 activity (rpid-activities.tsv)", code: .unknownToken)
            }
            return value
        }
        func range(_ row: TSVTable.Row) throws(MappingError) -> Range {
            let min = try row.uint32("min")
            let max = try row.uint32("max")
            guard min <= max else { throw row.error("max", "max \(max) is below min \(min)") }
            // Tables without an activity column apply to any token.
            let text = row.columns.contains("activity") ? row.string("activity") : "*"
            let condition: TokenCondition
            if text == "*" {
                condition = .any
            } else {
                let negated = text.hasPrefix("!")
                let token = MSActivityToken(negated ? String(text.dropFirst()) : text)
                guard known.contains(token) else {
                    throw row.error(
                        "activity", "\"\(token)\" is not a known activity token (ms-activity-tokens.tsv)",
                        code: .unknownToken)
                }
                condition = negated ? .differs(token) : .equals(token)
            }
            return Range(min: min, max: max, activity: condition)
        }

        let pidf = try table("availability-pidf.tsv", ["min", "max", "activity", "basic", "rpid_activity"])
        var pidfRows: [PIDFRow] = []
        for row in pidf.rows {
            guard let basic = PIDFBasic(rawValue: row.string("basic")) else {
                throw row.error("basic", "must be open or closed")
            }
            let activity = try row.optional("rpid_activity").map { (v) throws(MappingError) in
                try rpidToken(row, "rpid_activity", v)
            }
            pidfRows.append(
                PIDFRow(range: try range(row), basic: basic, rpidActivity: activity, source: row.string("source")))
        }
        try Self.checkCoverage(pidfRows.map(\.range), rows: pidf.rows)
        availabilityPIDF = pidfRows

        let detail = try table(
            "availability-pidf-detail.tsv", ["min", "max", "class", "activities", "other", "user_input"])
        var detailRows: [DetailRow] = []
        for row in detail.rows {
            var activities: [String] = []
            for token in (row.optional("activities") ?? "").split(separator: " ") {
                activities.append(try rpidToken(row, "activities", String(token)))
            }
            var userInput: RPIDUserInput.Value?
            if let text = row.optional("user_input") {
                guard let value = RPIDUserInput.Value(rawValue: text) else {
                    throw row.error("user_input", "must be active, idle or -")
                }
                userInput = value
            }
            detailRows.append(
                DetailRow(
                    range: try range(row), className: row.string("class"), activities: activities,
                    other: row.optional("other"), userInput: userInput, source: row.string("source")))
        }
        try Self.checkCoverage(detailRows.map(\.range), rows: detail.rows)
        availabilityDetail = detailRows

        let msrtc = try table(
            "availability-msrtc.tsv",
            ["min", "max", "activity", "avail", "state", "availability_aggregate", "activity_aggregate"])
        var msrtcRows: [MSRTCRow] = []
        for row in msrtc.rows {
            let state = row.string("state")
            let fromToken = state.hasPrefix("token|")
            let text = fromToken ? String(state.dropFirst("token|".count)) : state
            guard !text.isEmpty else { throw row.error("state", "needs a state text") }
            msrtcRows.append(
                MSRTCRow(
                    range: try range(row), avail: try row.uint32("avail"), stateFromToken: fromToken, stateText: text,
                    availabilityAggregate: try row.uint32("availability_aggregate"),
                    activityAggregate: try row.uint32("activity_aggregate"), source: row.string("source")))
        }
        try Self.checkCoverage(msrtcRows.map(\.range), rows: msrtc.rows)
        availabilityMSRTC = msrtcRows

        let reverse = try table("pidf-availability.tsv", ["basic", "activity", "user_input", "availability"])
        var reverseRows: [ReverseRow] = []
        for row in reverse.rows {
            let basic: ReverseRow.Basic
            switch row.string("basic") {
            case "open": basic = .open
            case "closed": basic = .closed
            case "none": basic = .none
            case "*": basic = .any
            default: throw row.error("basic", "must be open, closed, none or *")
            }
            let activityText = row.string("activity")
            let activity: ReverseRow.Activity
            switch activityText {
            case "*": activity = .any
            case "none": activity = .none
            case let t where t.hasPrefix("other:"): activity = .other(String(t.dropFirst("other:".count)))
            default: activity = .token(try rpidToken(row, "activity", activityText))
            }
            var userInput: RPIDUserInput.Value?
            let inputText = row.string("user_input")
            if inputText != "*" {
                guard let value = RPIDUserInput.Value(rawValue: inputText) else {
                    throw row.error("user_input", "must be active, idle or *")
                }
                userInput = value
            }
            reverseRows.append(
                ReverseRow(
                    basic: basic, activity: activity, userInput: userInput,
                    availability: try row.uint32("availability"),
                    source: row.string("source")))
        }
        guard reverseRows.contains(where: { $0.basic == .any || $0.basic == .open }),
            reverseRows.last.map({ $0.activity == .any && $0.userInput == nil }) == true
        else {
            throw MappingError(
                .coverage, "the last row must match anything left (activity * and user_input *)", file: reverse.file)
        }
        pidfAvailability = reverseRows

        let tokens = try table("activity-tokens.tsv", ["ms_token", "rpid", "other", "direction"])
        var tokenRows: [TokenRow] = []
        for row in tokens.rows {
            let token = MSActivityToken(row.string("ms_token"))
            guard known.contains(token) else {
                throw row.error("ms_token", "\"\(token)\" is not a known activity token", code: .unknownToken)
            }
            let rpidValue = try row.optional("rpid").map { (v) throws(MappingError) in try rpidToken(row, "rpid", v) }
            let direction = row.string("direction")
            guard direction == "both" || direction == "read" else {
                throw row.error("direction", "must be both or read")
            }
            guard rpidValue != nil || row.optional("other") != nil else {
                throw row.error("rpid", "a row needs rpid or other")
            }
            tokenRows.append(
                TokenRow(
                    token: token, rpid: rpidValue, other: row.optional("other"), written: direction == "both",
                    source: row.string("source")))
        }
        for token in known where !tokenRows.contains(where: { $0.token == token && $0.written }) {
            throw MappingError(.coverage, "no written row for activity token \"\(token)\"", file: tokens.file)
        }
        activityTokens = tokenRows

        let states = try table("msrtc-states.tsv", ["state", "token"])
        var stateMap: [String: MSActivityToken?] = [:]
        for row in states.rows {
            let token = row.optional("token").map { MSActivityToken($0) }
            if let token, !known.contains(token) {
                throw row.error("token", "\"\(token)\" is not a known activity token", code: .unknownToken)
            }
            stateMap[row.string("state")] = token
        }
        msrtcStates = stateMap

        // RFC 5196 §3.2 boolean media capabilities.
        let flags: Set<String> = [
            "audio", "application", "data", "control", "video", "text", "message", "automata", "isfocus",
        ]
        let caps = try table("capabilities.tsv", ["ms_capability", "caps"])
        var capabilityRows: [(ms: String, caps: String)] = []
        for row in caps.rows {
            guard flags.contains(row.string("caps")) else {
                throw row.error(
                    "caps", "\"\(row.string("caps"))\" is not an RFC 5196 boolean capability", code: .unknownToken)
            }
            capabilityRows.append((row.string("ms_capability"), row.string("caps")))
        }
        capabilities = capabilityRows

        let names: [String: FreeBusyState] = [
            "free": .free, "tentative": .tentative, "busy": .busy, "out-of-facility": .outOfFacility,
            "working-elsewhere": .workingElsewhere,
        ]
        let freeBusyTable = try table("freebusy.tsv", ["state", "rpid", "other"])
        var freeBusyRows: [FreeBusyRow] = []
        for row in freeBusyTable.rows {
            guard let state = names[row.string("state")] else {
                throw row.error(
                    "state", "must be one of \(names.keys.sorted().joined(separator: ", "))", code: .unknownToken)
            }
            let rpidValue = try row.optional("rpid").map { (v) throws(MappingError) in try rpidToken(row, "rpid", v) }
            freeBusyRows.append(
                FreeBusyRow(state: state, rpid: rpidValue, other: row.optional("other"), source: row.string("source")))
        }
        for (name, state) in names where !freeBusyRows.contains(where: { $0.state == state }) {
            throw MappingError(.coverage, "no row for free/busy state \(name)", file: freeBusyTable.file)
        }
        let written = freeBusyRows.filter { $0.state != .free }.map { [$0.rpid ?? "", $0.other ?? ""] }
        if Set(written).count != written.count {
            throw MappingError(
                .coverage, "two free/busy states are written alike and could not be read back", file: freeBusyTable.file
            )
        }
        freeBusy = freeBusyRows

        omaExtensions = try Self.omaRows(
            table(
                "oma-extensions.tsv",
                ["direction", "element", "value", "min", "max", "activity", "availability", "sets_token"]),
            known: known)

        let bands = try table("upnp-bands.tsv", ["min", "max", "band"])
        var bandRows: [UPnPBandRow] = []
        for row in bands.rows {
            bandRows.append(
                UPnPBandRow(range: try range(row), band: try Self.upnpBand(row), source: row.string("source")))
        }
        try Self.checkCoverage(bandRows.map(\.range), rows: bands.rows)
        upnpBands = bandRows
    }

    /// Distinct ranges must tile 0…UInt32.max; rows sharing a range must split
    /// it into a token and its negation (or be a single `*` row).
    private static func checkCoverage(_ ranges: [Range], rows: [TSVTable.Row]) throws(MappingError) {
        guard let file = rows.first?.file else { return }
        var groups: [(min: UInt32, max: UInt32, conditions: [TokenCondition], line: Int)] = []
        for (range, row) in zip(ranges, rows) {
            if let i = groups.firstIndex(where: { $0.min == range.min && $0.max == range.max }) {
                groups[i].conditions.append(range.activity)
            } else {
                groups.append((range.min, range.max, [range.activity], row.line))
            }
        }
        for group in groups {
            let c = group.conditions
            let partitions =
                c == [.any]
                || (c.count == 2
                    && {
                        switch (c[0], c[1]) {
                        case (.equals(let a), .differs(let b)), (.differs(let a), .equals(let b)): a == b
                        default: false
                        }
                    }())
            guard partitions else {
                throw MappingError(
                    .coverage,
                    "rows for \(group.min)-\(group.max) overlap: their activity conditions do not split the range",
                    file: file, line: group.line, column: 1)
            }
        }
        var next: UInt64 = 0
        for group in groups.sorted(by: { $0.min < $1.min }) {
            if UInt64(group.min) > next {
                throw MappingError(
                    .coverage, "gap: \(next)-\(group.min - 1) is not covered", file: file, line: group.line, column: 1)
            }
            if UInt64(group.min) < next {
                throw MappingError(
                    .coverage, "overlap: \(group.min)-\(group.max) starts inside an earlier range", file: file,
                    line: group.line, column: 1)
            }
            next = UInt64(group.max) + 1
        }
        // Required: 0…2^31−1 (availability is xs:unsignedInt, so the tables cover all of it).
        if next <= UInt64(Int32.max) {
            throw MappingError(.coverage, "gap: \(next)-\(Int32.max) is not covered", file: file)
        }
    }
}
