@testable import PresenceDocuments
import XMLBridge

extension CalendarData {
    /// Writes `calendarData` in its default namespace.
    var xml: XMLElement {
        var e = XMLElement.make(
            NS.calendarData, "calendarData",
            [
                ("mailboxID", mailboxID), ("majorVersion", majorVersion), ("minorVersion", minorVersion),
            ])
        if let workingHours { e.append(workingHours) }
        if let f = freeBusy {
            e.append(
                .text(
                    NS.calendarData, "freeBusy", f.data,
                    [
                        ("startTime", f.startTime), ("granularity", f.granularity),
                        ("encodingVersion", f.encodingVersion),
                    ]))
        }
        for x in extensions { e.append(x) }
        return e
    }
}
