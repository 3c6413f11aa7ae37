/// What finds a dialog among those a UA holds: its Call-ID and local tag (RFC 3261 §12: the
/// remote tag is not known before the first response, and a NOTIFY may arrive before it).
public struct SIPDialogKey: Hashable, Sendable {
    public var callID: String
    public var localTag: String
    public init(callID: String, localTag: String) {
        self.callID = callID
        self.localTag = localTag
    }
}
