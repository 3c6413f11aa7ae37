import PresenceDocuments

/// Converts between enhanced-presence categories, PIDF/RPID/CIPID and
/// msrtc.pidf, driven by ``MappingTables``. Pure: the same input and tables
/// always give the same output and report.
public struct PresenceMapper: Sendable {
    public let tables: MappingTables
    /// `<other>` texts that are class markers or token texts (not custom
    /// activities), from `availability-pidf-detail.tsv` and `activity-tokens.tsv`.
    let reservedOtherTexts: Set<String>
    /// RPID activity tokens some table maps to enhanced presence.
    let mappedRPIDTokens: Set<String>
    /// The report detail of each `pidf-availability.tsv` row, in table order
    /// (built once: a conversion hands out the row's string, it does not format it).
    let reverseRowDetails: [String]
    /// The report detail of each `activity-tokens.tsv` row, in table order.
    let tokenRowDetails: [String]
    /// The categories → PIDF report details, built once per table row like the two above:
    /// each `availability-pidf.tsv` row's basic, activity and source,
    let pidfRowDetails: [String]
    /// each `availability-pidf-detail.tsv` row's class and what it adds (nil when it adds nothing),
    let detailRowDetails: [String?]
    /// and the RPID each `activity-tokens.tsv` row writes.
    let writtenTokenDetails: [String]
    /// `render="true" capture="true"`: the attributes of every capability a
    /// PIDF → categories conversion writes ([MS-PRES] §2.2.2.7.3), one shared
    /// array (in key order) instead of one built per capability.
    static let renderAndCapture: [MSCapability.Attribute] = [.init("capture", "true"), .init("render", "true")]

    public init(tables: MappingTables) {
        self.tables = tables
        reservedOtherTexts = Set(
            tables.availabilityDetail.compactMap(\.other) + tables.activityTokens.compactMap(\.other))
        mappedRPIDTokens = Set(
            tables.pidfAvailability.compactMap { if case .token(let t) = $0.activity { t } else { nil } }
        )
        .union(tables.activityTokens.compactMap(\.rpid)).union(tables.availabilityDetail.flatMap(\.activities))
        reverseRowDetails = tables.pidfAvailability.map { "availability \($0.availability) (\($0.source))" }
        tokenRowDetails = tables.activityTokens.map { "token \($0.token) (\($0.source))" }
        pidfRowDetails = tables.availabilityPIDF.map { row in
            "basic \(row.basic.rawValue)" + (row.rpidActivity.map { ", activity \($0)" } ?? "") + " (\(row.source))"
        }
        detailRowDetails = tables.availabilityDetail.map { detail in
            let adds = [detail.activities.joined(separator: " "), detail.other ?? "", detail.userInput?.rawValue ?? ""]
                .filter { !$0.isEmpty }
            return adds.isEmpty ? nil : "\(detail.className): " + adds.joined(separator: ", ")
        }
        writtenTokenDetails = tables.activityTokens.map { row in
            "rpid activities "
                + [row.rpid, row.other.map { "other \"\($0)\"" }].compactMap { $0 }.joined(separator: " + ")
        }
    }

    /// Why a categories → PIDF conversion without RPID extensions leaves out an activity.
    static let beyondTheRow =
        "MS-PRES 3.7.5.4 gives each availability band only its row's activity; written with rpid-extensions"

    /// The state a conversion starts from: availability and activity as
    /// [MS-PRES] §3.7.5.4 takes them.
    struct EffectiveState {
        var availability: UInt32?
        var token: MSActivityToken?
        var custom: String?
        var state: MSState?
    }

    /// Availability and token from `legacyInterop` when present, else from the
    /// aggregateState `state` instance, else from the state the document's instances aggregate
    /// to ([MS-PRES] §3.7.5.4, §3.8.5.1.2; docs/flows.md, "Availability token source" and
    /// "State aggregation").
    func effectiveState<Report: MappingReporting>(_ doc: CategoriesDocument, report: inout Report) -> EffectiveState {
        // The first aggregateState is kept as the loop binds it (an array of the states cost an
        // allocation and a copy of each; bound again after the loop, its payload was copied twice).
        var chosen: MSState?
        var hasStates = false
        var legacy: LegacyInterop?
        for i in doc.categories.indices {
            switch doc.categories[i].payload {
            case .state(let s):
                // A state document under another name (dndState, §3.8.5.4) is a server's output
                // for call routing, not a state instance.
                guard doc.categories[i].name == .state else {
                    report.drop(doc.categories[i].name.rawValue, Self.notAStateInstance)
                    continue
                }
                if chosen == nil, s.type == .aggregateState { chosen = s }
                hasStates = true
            case .legacyInterop(let l): legacy = legacy ?? l
            default: break
            }
        }
        let computed = chosen == nil && hasStates
        if computed { chosen = aggregateState(doc, report: &report) }
        var availability: UInt32?
        var token: MSActivityToken?
        var custom: String?
        if let chosen {
            availability = chosen.availability
            // The activity whose availability window holds the availability, else the first with a token.
            let inWindow = chosen.activities.first { a in
                guard a.token != nil, let av = chosen.availability else { return false }
                return av >= (a.minAvailability ?? 0) && av <= (a.maxAvailability ?? UInt32.max)
            }
            token = (inWindow ?? chosen.activities.first { $0.token != nil })?.token
            custom = chosen.activities.lazy.flatMap(\.custom).first?.text
            // Only reported: each other state beside the server's aggregated one.
            for category in doc.categories where Report.keepsEntries && !computed {
                guard category.name == .state, case .state(let other) = category.payload, other != chosen else {
                    continue
                }
                report.drop(
                    "state[\(other.type)]", "only the aggregateState instance feeds the conversion (MS-PRES 3.7.5.4)")
            }
        }
        if Report.keepsEntries, let chosen { reportStateAttributes(chosen, report: &report) }
        if let legacy {
            if let a = legacy.availability { availability = a }
            if let t = legacy.token { token = t }
            report.map("legacyInterop", "availability and token (MS-PRES 3.7.5.4: the conversion input)")
            if legacy.dndState != nil { report.drop("legacyInterop/@dndState", "no PIDF or msrtc equivalent") }
        }
        // Made once at the end, the state moved in (a result filled in field by field was copied on return).
        return EffectiveState(availability: availability, token: token, custom: custom, state: consume chosen)
    }

    static let notAStateInstance =
        "a server's output for call routing (MS-PRES 3.8.5.4), computed from the user and presenting states; not a state instance"

    /// The aggregateState of a document that carries the instances instead ([MS-PRES]
    /// §3.8.5.1.2): those of container 2 when it has any (the input the federated and
    /// same-enterprise views are computed from, §3.8.5.1.2.7), else those of the first state's
    /// container.
    private func aggregateState<Report: MappingReporting>(_ doc: CategoriesDocument, report: inout Report)
        -> MSState
    {
        let states = StateAggregation.instances(in: doc)
        let container = states.contains { $0.container == 2 } ? 2 : states.first?.container
        let instances = states.filter { $0.container == container }.map(\.instance)
        let state = StateAggregation.aggregateState(of: instances)
        if Report.keepsEntries {
            let types = instances.map(\.state.type.rawValue).joined(separator: ", ")
            report.map(
                "state[\(types)]",
                "aggregated as the server does (MS-PRES 3.8.5.1.2): availability \(state.availability.map(String.init) ?? "none")"
            )
            for category in states where category.container != container {
                report.drop(
                    "state[container \(category.container.map(String.init) ?? "none")]", "another container's input")
            }
        }
        return state
    }

    /// Reports the attributes of the state the conversion reads: its type chooses it, the
    /// activity windows choose the token; how, where and by whom it was published
    /// ([MS-PRES] §2.2.2.7.1) is not part of a watcher's PIDF or msrtc.pidf.
    private func reportStateAttributes<Report: MappingReporting>(_ state: MSState, report: inout Report) {
        report.map(
            "state/@xsi:type=\(state.type)",
            "the state the conversion reads (the aggregated one first, MS-PRES 3.7.5.2)")
        let published = [
            state.manual.map { _ in "@manual" }, state.startTime.map { _ in "@startTime" },
            state.uri.map { _ in "@uri" },
            state.endpointID.map { _ in "@endpointId" }, state.majorVersion.map { _ in "@majorVersion" },
            state.minorVersion.map { _ in "@minorVersion" },
        ].compactMap { $0 }
        if !published.isEmpty {
            report.drop(
                "state/" + published.joined(separator: "|"),
                "how and where the state was published (MS-PRES 2.2.2.7.1), not shown to watchers")
        }
        if state.activities.contains(where: { $0.minAvailability != nil || $0.maxAvailability != nil }) {
            report.map(
                "state/activity/@minAvailability|@maxAvailability",
                "choose the activity valid at the availability (MS-PRES 2.2.2.7.1)")
        }
        if state.activities.contains(where: { $0.custom.contains { $0.lcid != nil || $0.updated != nil } }) {
            report.drop(
                "state/activity/custom/@LCID|@updated",
                "the custom text's language and time: RPID other and msrtc state carry the text only")
        }
        for e in state.extensions { report.drop("state/{\(e.name.namespace)}\(e.name.local)", "unknown state element") }
    }

    /// The state's fields beside availability and activity, as a report path (`meetingSubject|@lastActive`),
    /// for the documents that have no element for them (msrtc.pidf, the Microsoft PIDF dialect).
    static func detailFields(of state: MSState) -> String? {
        let present = [
            state.meetingSubject.map { _ in "meetingSubject" }, state.meetingLocation.map { _ in "meetingLocation" },
            state.endpointLocation.map { _ in "endpointLocation" }, state.timeZoneBias.map { _ in "timeZoneBias" },
            state.timeZoneName.map { _ in "timeZoneName" },
            state.timeZoneAbbreviation.map { _ in "timeZoneAbbreviation" },
            state.device.map { _ in "device" }, state.lastActive.map { _ in "@lastActive" },
        ].compactMap { $0 }
        return present.isEmpty ? nil : present.joined(separator: "|")
    }

    /// A watcher sees each (category, instance) from one container only
    /// ([MS-PRES] §3.2.5.3); a document holding the same publication in several
    /// containers (a publisher's own view, §2.2.2.1) is reduced to its first copy.
    func onePublicationPerInstance<Report: MappingReporting>(
        _ doc: CategoriesDocument, report: inout Report
    ) -> CategoriesDocument {
        // A watcher's document names no containers: nothing to reduce.
        guard doc.categories.contains(where: { $0.container != nil }) else { return doc }
        var seen: Set<String> = []
        var result = doc
        result.categories = doc.categories.filter { category in
            guard category.container != nil else { return true }
            let key = "\(category.name.rawValue)#\(category.instance.map(String.init) ?? "-")"
            if seen.insert(key).inserted { return true }
            report.drop(
                "\(key) in container \(category.container.map(String.init) ?? "-")",
                "the same publication in another container; a watcher sees one")
            return false
        }
        return result
    }

    /// Reports what the `categories` document and each `category` element say about the
    /// publications ([MS-PRES] §2.2.2.1, §1.3.1.1): the URI goes to `target`, the name chooses
    /// the conversion, the rest identifies or dates the publication and has no place in a
    /// watcher's PIDF or msrtc.pidf document.
    func reportPublicationAttributes<Report: MappingReporting>(
        _ doc: CategoriesDocument, uriTo target: String, report: inout Report
    ) {
        guard Report.keepsEntries else { return }
        report.map("categories/@uri", target)
        for i in doc.categories.indices {
            let category = doc.categories[i]
            let at = "category[\(category.name.rawValue)]"
            report.map("\(at)/@name", "chooses how the category's data is converted")
            if category.instance != nil {
                report.drop(
                    "\(at)/@instance",
                    "identifies the publication (MS-PRES 1.3.1.1); a watcher's document has no instances")
            }
            if category.publishTime != nil {
                report.drop(
                    "\(at)/@publishTime",
                    "the server's publication time (MS-PRES 1.3.1.6); no PIDF or msrtc element for it")
            }
            if category.container != nil {
                report.drop(
                    "\(at)/@container",
                    "the watcher sees one container's view (MS-PRES 3.2.5.3); its number is not shown")
            }
            if category.version != nil {
                report.drop("\(at)/@version", "publication version (MS-PRES 1.3.1.6), for the publisher only")
            }
            if category.expireType != nil || category.expires != nil || category.endpointID != nil {
                report.drop(
                    "\(at)/@expireType|@expires|@endpointId",
                    "publication lifetime (MS-PRES 1.3.1.1), for the server only")
            }
            for attribute in category.otherAttributes {
                report.drop("\(at)/@\(attribute.name.local)", "unknown category attribute")
            }
        }
    }

    /// The index of the `availability-pidf.tsv` row for `availability` and `token`.
    func pidfRow(_ availability: UInt32, _ token: MSActivityToken?) -> Int? {
        tables.availabilityPIDF.firstIndex { $0.range.contains(availability, token) }
    }

    /// The index of the `availability-pidf-detail.tsv` row for `availability`.
    func detailRow(_ availability: UInt32) -> Int? {
        tables.availabilityDetail.firstIndex { $0.range.contains(availability, nil) }
    }

    func msrtcRow(_ availability: UInt32, _ token: MSActivityToken?) -> MappingTables.MSRTCRow? {
        tables.availabilityMSRTC.first { $0.range.contains(availability, token) }
    }
}
