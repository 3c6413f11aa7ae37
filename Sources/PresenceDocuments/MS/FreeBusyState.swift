/// A calendar block of `freeBusy` ([MS-PRES] §2.2.2.7.8).
public enum FreeBusyState: UInt8, Sendable, Hashable, CaseIterable {
    case free = 0, tentative = 1, busy = 2, outOfFacility = 3, workingElsewhere = 4
}
