public import SIPMessages

extension SIPDialog {
    /// A dialog as the durable store keeps it (docs/state.md): the RFC 3261 §12 dialog state, with
    /// the addresses, remote target and route set as their wire text.
    public struct Record: Codable, Sendable, Hashable {
        public var callID: String
        public var localTag: String
        public var remoteTag: String
        public var localSequence: UInt32?
        public var remoteSequence: UInt32?
        /// From of this side's requests, with the local tag.
        public var localURI: String
        /// To of this side's requests, with the remote tag.
        public var remoteURI: String
        public var remoteTarget: String
        public var routeSet: [String]
        public var secure: Bool
    }

    public var record: Record {
        Record(
            callID: id.callID, localTag: id.localTag, remoteTag: id.remoteTag, localSequence: localSequence,
            remoteSequence: remoteSequence, localURI: localURI.description, remoteURI: remoteURI.description,
            remoteTarget: remoteTarget.description, routeSet: routeSet.map(\.description), secure: isSecure)
    }

    /// The dialog a record describes; a field that does not parse is an error naming it.
    public init(record: Record) throws(SIPStackError) {
        let id = ID(callID: record.callID, localTag: record.localTag, remoteTag: record.remoteTag)
        let stored = Stored(
            fields: [record.localURI, record.remoteURI, record.remoteTarget] + record.routeSet,
            localURI: try Self.restored(SIPAddress(record.localURI), "local URI"),
            remoteURI: try Self.restored(SIPAddress(record.remoteURI), "remote URI"),
            remoteTarget: try Self.restored(SIPURI(record.remoteTarget), "remote target"),
            routeSet: try record.routeSet.map { route throws(SIPStackError) in
                try Self.restored(SIPAddress(route), "route")
            },
            id: id)
        self.init(
            id: id, localSequence: record.localSequence, remoteSequence: record.remoteSequence, stored: stored,
            isSecure: record.secure)
    }

    /// The same dialog without its sequence numbers: what a dialog's durable state is compared by
    /// when only CSeqs moved (docs/state.md, "What is written when").
    public var withoutSequences: SIPDialog {
        var dialog = self
        dialog.localSequence = nil
        dialog.remoteSequence = nil
        return dialog
    }

    /// Headers as records keep them: each a name and a value.
    static func storedHeaders(_ headers: SIPHeaders) -> [[String]] {
        headers.map { [$0.name.displayName, $0.value] }
    }

    static func restoredHeaders(_ pairs: [[String]]) throws(SIPStackError) -> SIPHeaders {
        var headers = SIPHeaders()
        for pair in pairs {
            guard pair.count == 2 else {
                throw SIPStackError(.invalidRecord, "extra header \(pair): not a name and a value")
            }
            headers.append(SIPHeaderName(pair[0]), pair[1])
        }
        return headers
    }

    static func restored<T>(_ parse: @autoclosure () throws(SIPParseError) -> T, _ name: String) throws(SIPStackError)
        -> T
    {
        do { return try parse() } catch { throw SIPStackError(.invalidRecord, "\(name): \(error)") }
    }
}
