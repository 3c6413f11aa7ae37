/// A calendar block of `freeBusy` ([MS-PRES] §2.2.2.7.8).
public enum FreeBusyState: UInt8, Sendable, Hashable, CaseIterable {
    case free = 0
    case tentative = 1
    case busy = 2
    case outOfFacility = 3
    case workingElsewhere = 4
}
