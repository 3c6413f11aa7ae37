import PresenceDocuments

extension PresenceMapper {
    /// Runs of non-free blocks as RPID activities with from/until (`freebusy.tsv`).
    func activities(fromFreeBusy freeBusy: CalendarData.FreeBusy, instance: UInt32, report: inout some MappingReporting)
        -> [RPIDTokens]
    {
        let blocks: [FreeBusyState]
        do {
            blocks = try freeBusy.blocks(instance: instance)
        } catch {
            report.drop("calendarData/freeBusy", error.message)
            return []
        }
        guard let start = freeBusy.startTime.flatMap(XSDTime.seconds(from:)),
            let minutes = freeBusy.granularity.flatMap(XSDTime.minutes(fromDuration:)), minutes > 0
        else {
            report.drop("calendarData/freeBusy", "startTime or granularity missing or not understood")
            return []
        }
        var result: [RPIDTokens] = []
        var i = 0
        while i < blocks.count {
            let state = blocks[i]
            var j = i + 1
            while j < blocks.count, blocks[j] == state { j += 1 }
            if state != .free, let row = tables.freeBusy.first(where: { $0.state == state }) {
                let values =
                    (row.rpid.map { [RPIDValue.token($0)] } ?? []) + (row.other.map { [RPIDValue.other($0)] } ?? [])
                result.append(
                    RPIDTokens(
                        from: XSDTime.string(fromSeconds: start + Int64(i * minutes * 60)),
                        until: XSDTime.string(fromSeconds: start + Int64(j * minutes * 60)), values: values))
            }
            i = j
        }
        report.map("calendarData/freeBusy", "\(result.count) rpid activities with from/until")
        return result
    }

    /// The free/busy state an activities element stands for, when it is a calendar block
    /// (a row of `freebusy.tsv`, the `rows`).
    static func freeBusyState(of activities: RPIDTokens, rows: [MappingTables.FreeBusyRow]) -> FreeBusyState? {
        guard activities.from != nil, activities.until != nil, activities.notes.isEmpty else { return nil }
        return rows.first { row in
            row.state != .free
                && activities.values == (row.rpid.map { [RPIDValue.token($0)] } ?? [])
                    + (row.other.map { [RPIDValue.other($0)] } ?? [])
        }?.state
    }

    /// Calendar blocks back into a calendarData category, 15-minute blocks from
    /// the earliest start (at most four days, the 384 blocks [MS-PRES] suggests).
    func calendarCategory(
        entity: String, blocks intervals: [(FreeBusyState, String, String)], report: inout some MappingReporting
    ) -> Category? {
        let granularity = 15 * 60
        let limit = 384
        var spans: [(FreeBusyState, Int64, Int64)] = []
        for (state, from, until) in intervals {
            guard let f = XSDTime.seconds(from: from), let u = XSDTime.seconds(from: until), u > f else {
                report.drop("rpid activities from/until", "\"\(from)\"-\"\(until)\" is not a valid period")
                continue
            }
            spans.append((state, f, u))
        }
        guard let first = spans.map(\.1).min() else { return nil }
        let start = first - ((first % Int64(granularity)) + Int64(granularity)) % Int64(granularity)
        var blocks: [FreeBusyState] = []
        for (state, f, u) in spans {
            let a = Int((f - start) / Int64(granularity))
            let b = Int((u - start + Int64(granularity) - 1) / Int64(granularity))
            guard a < limit else {
                report.drop(
                    "rpid activities \(XSDTime.string(fromSeconds: f))",
                    "more than four days after the first calendar block")
                continue
            }
            if blocks.count < min(b, limit) { blocks += Array(repeating: .free, count: min(b, limit) - blocks.count) }
            for k in a..<min(b, limit) where blocks[k] == .free { blocks[k] = state }
        }
        let (freeBusy, instance) = CalendarData.FreeBusy.encode(
            blocks, startTime: XSDTime.string(fromSeconds: start), granularity: "PT15M")
        let mailbox = entity.hasPrefix("sip:") ? String(entity.dropFirst(4)) : entity
        report.map("rpid activities with from/until", "calendarData freeBusy (\(spans.count) periods)")
        return Category(
            name: .calendarData, instance: instance,
            payload: .calendarData(CalendarData(mailboxID: mailbox, freeBusy: freeBusy)))
    }
}
