/// UTC date-times and simple durations as XML Schema writes them, without
/// Foundation's formatters (pure, thread-safe, no locale).
public enum XSDTime {
    /// Seconds since 1970-01-01T00:00:00Z for `YYYY-MM-DDThh:mm:ss[.fff](Z|±hh:mm)?`
    /// (xs:dateTime; a missing zone is taken as UTC, as [MS-PRES] publishTime
    /// values are: docs/flows.md, "Publish times without zone"). Fractions are dropped.
    public static func seconds(from text: String) -> Int64? {
        // Rounded down: the fraction is dropped, before 1970 too.
        milliseconds(from: text).map { $0 >= 0 ? $0 / 1000 : ($0 - 999) / 1000 }
    }

    /// Milliseconds since 1970-01-01T00:00:00Z for the same form: the fraction's first three
    /// digits count ([MS-PRES] publishTime values carry milliseconds, `2008-01-11T18:11:33.577`).
    public static func milliseconds(from text: String) -> Int64? {
        // The bytes read in place (no copy: flow 2 compares publish times on every notification).
        let u = text.utf8.span
        func number(_ u: Span<UInt8>, _ range: Range<Int>) -> Int64? {
            guard range.upperBound <= u.count else { return nil }
            var v: Int64 = 0
            for i in range {
                guard u[i] >= 0x30, u[i] <= 0x39 else { return nil }
                v = v * 10 + Int64(u[i] - 0x30)
            }
            return v
        }
        guard u.count >= 19, u[4] == 0x2D, u[7] == 0x2D, u[10] == 0x54, u[13] == 0x3A, u[16] == 0x3A,
            let year = number(u, 0..<4), let month = number(u, 5..<7), let day = number(u, 8..<10),
            let hour = number(u, 11..<13), let minute = number(u, 14..<16), let second = number(u, 17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var i = 19
        var millis: Int64 = 0
        if i < u.count, u[i] == 0x2E {
            i += 1
            var scale: Int64 = 100
            while i < u.count, u[i] >= 0x30, u[i] <= 0x39 {
                millis += Int64(u[i] - 0x30) * scale
                scale /= 10
                i += 1
            }
        }
        var offset: Int64 = 0
        if i < u.count {
            if u[i] == 0x5A, i + 1 == u.count {
                // Z
            } else if u[i] == 0x2B || u[i] == 0x2D, i + 6 == u.count, u[i + 3] == 0x3A,
                let h = number(u, i + 1..<i + 3), let m = number(u, i + 4..<i + 6)
            {
                offset = (h * 60 + m) * 60 * (u[i] == 0x2D ? -1 : 1)
            } else {
                return nil
            }
        }
        let seconds = days(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return seconds * 1000 + millis
    }

    /// `YYYY-MM-DDThh:mm:ssZ` for seconds since the epoch.
    public static func string(fromSeconds seconds: Int64) -> String {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let rest = seconds - days * 86_400
        let (y, m, d) = civil(days)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let year = y < 0 ? "\(y)" : String(repeating: "0", count: max(0, 4 - "\(y)".count)) + "\(y)"
        return "\(year)-\(two(m))-\(two(d))T\(two(rest / 3600)):\(two(rest / 60 % 60)):\(two(rest % 60))Z"
    }

    /// Minutes in a day-time xs:duration such as `PT15M`, `PT1H`, `PT1H30M`, `P1D`.
    public static func minutes(fromDuration text: String) -> Int? {
        var s = Substring(text.trimmingXMLWhitespace())
        guard s.hasPrefix("P") else { return nil }
        s = s.dropFirst()
        var total = 0
        var inTime = false
        var digits = ""
        var sawUnit = false
        for c in s {
            if c == "T" {
                inTime = true
                continue
            }
            if c.isASCII, c.isNumber {
                digits.append(c)
                continue
            }
            guard let v = Int(digits), v < 1_000_000 else { return nil }
            digits = ""
            sawUnit = true
            switch (c, inTime) {
            case ("D", false): total += v * 1440
            case ("H", true): total += v * 60
            case ("M", true): total += v
            case ("S", true): total += v / 60
            default: return nil
            }
        }
        guard digits.isEmpty, sawUnit else { return nil }
        return total
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(_ days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
