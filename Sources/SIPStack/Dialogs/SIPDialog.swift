public import SIPMessages

/// The state of one dialog (RFC 3261 §12): identifiers, sequence numbers, route set and targets.
///
/// A value: the subscription layer keeps one per dialog and updates it with the functions here.
/// Created by a UAS from a request (§12.1.1), by a UAC from a response (§12.1.2), or by a
/// subscriber from a NOTIFY that arrives before the SUBSCRIBE's 200 (RFC 6665 §4.1.2.4).
public struct SIPDialog: Sendable, Hashable {
    /// `Call-ID`, local tag and remote tag (§12).
    public struct ID: Sendable, Hashable, CustomStringConvertible {
        public var callID: String
        public var localTag: String
        public var remoteTag: String

        public init(callID: String, localTag: String, remoteTag: String) {
            self.callID = callID
            self.localTag = localTag
            self.remoteTag = remoteTag
        }

        public var description: String { "\(callID);local=\(localTag);remote=\(remoteTag)" }
    }

    public var id: ID {
        didSet {
            guard id.localTag != oldValue.localTag || id.remoteTag != oldValue.remoteTag else { return }
            // The stored From and To carry the tags (§12.2.1.1); keep them in step.
            stored = Stored(
                localURI: localURI, remoteURI: remoteURI, remoteTarget: remoteTarget, routeSet: routeSet, id: id)
        }
    }
    /// The addresses, target and route set as their wire text (see ``Stored``).
    private var stored: Stored
    // The sequence numbers and flags packed after `stored` (80 bytes a dialog instead of 88 with
    // two optionals and a Bool; a gateway keeps two dialogs per bridged pair). An absent
    // sequence number is stored as 0, so equal dialogs have equal fields.
    private var local: UInt32 = 0
    private var remote: UInt32 = 0
    private var flags: UInt8 = 0

    private static let hasLocal: UInt8 = 1
    private static let hasRemote: UInt8 = 2
    private static let secure: UInt8 = 4

    /// The CSeq of the last request this side sent in the dialog; nil until it sends one (a UAS
    /// dialog starts empty, §12.1.1).
    public var localSequence: UInt32? {
        get { flags & Self.hasLocal != 0 ? local : nil }
        set {
            local = newValue ?? 0
            flags = newValue == nil ? flags & ~Self.hasLocal : flags | Self.hasLocal
        }
    }
    /// The CSeq of the last request received in the dialog; nil until one arrives (§12.1.2).
    public var remoteSequence: UInt32? {
        get { flags & Self.hasRemote != 0 ? remote : nil }
        set {
            remote = newValue ?? 0
            flags = newValue == nil ? flags & ~Self.hasRemote : flags | Self.hasRemote
        }
    }
    /// Whether the dialog was set up over TLS with a SIPS Request-URI (§12.1.1).
    public var isSecure: Bool {
        get { flags & Self.secure != 0 }
        set { flags = newValue ? flags | Self.secure : flags & ~Self.secure }
    }

    /// From URI of requests this side sends, with `localTag`. Kept as its wire text and parsed
    /// when read.
    public var localURI: SIPAddress {
        get { stored.address(at: Stored.local) }
        set {
            stored = Stored(
                localURI: newValue, remoteURI: remoteURI, remoteTarget: remoteTarget, routeSet: routeSet, id: id)
        }
    }
    /// To URI of requests this side sends, with `remoteTag`.
    public var remoteURI: SIPAddress {
        get { stored.address(at: Stored.remote) }
        set {
            stored = Stored(
                localURI: localURI, remoteURI: newValue, remoteTarget: remoteTarget, routeSet: routeSet, id: id)
        }
    }
    /// Where in-dialog requests go: the peer's Contact, updated by target refresh requests.
    public var remoteTarget: SIPURI {
        get { stored.target }
        set {
            stored = Stored(
                localURI: localURI, remoteURI: remoteURI, remoteTarget: newValue, routeSet: routeSet, id: id)
        }
    }
    /// Route set, in the order it goes into Route headers of requests this side sends.
    public var routeSet: [SIPAddress] {
        get { stored.routes }
        set {
            stored = Stored(
                localURI: localURI, remoteURI: remoteURI, remoteTarget: remoteTarget, routeSet: newValue, id: id)
        }
    }

    /// The addresses are kept as their wire text: a dialog lives for hours and must neither keep
    /// the message it was created from nor the parsed values (hundreds of bytes each).
    public init(
        id: ID, localSequence: UInt32?, remoteSequence: UInt32?, localURI: SIPAddress,
        remoteURI: SIPAddress, remoteTarget: SIPURI, routeSet: [SIPAddress], isSecure: Bool = false
    ) {
        self.init(
            id: id, localSequence: localSequence, remoteSequence: remoteSequence,
            stored: Stored(
                localURI: localURI, remoteURI: remoteURI, remoteTarget: remoteTarget, routeSet: routeSet, id: id),
            isSecure: isSecure)
    }

    /// A dialog with its addresses already in their stored form.
    init(id: ID, localSequence: UInt32?, remoteSequence: UInt32?, stored: Stored, isSecure: Bool) {
        self.id = id
        self.stored = stored
        self.localSequence = localSequence
        self.remoteSequence = remoteSequence
        self.isSecure = isSecure
    }
}

extension SIPDialog {
    /// The part of a dialog's state that is text on the wire — local URI (From, with the local
    /// tag), remote URI (To, with the remote tag), remote target and route set (RFC 3261 §12.1) —
    /// held as that text in one string, one field per line, and parsed when read.
    ///
    /// A value whose written form does not read back as the same value (possible only for values
    /// built in code, never for parsed ones) is kept parsed instead, so nothing changes meaning.
    struct Stored: Sendable, Hashable {
        static let local = 0
        static let remote = 1
        static let target = 2
        static let firstRoute = 3

        private enum Form: Sendable, Hashable {
            /// The fields' wire text joined by LF (which no written address contains: the writer
            /// drops CR and LF from quoted strings).
            case text(String)
            case parsed(Parsed)
        }

        final class Parsed: Sendable, Hashable {
            let localURI: SIPAddress
            let remoteURI: SIPAddress
            let remoteTarget: SIPURI
            let routeSet: [SIPAddress]

            init(localURI: SIPAddress, remoteURI: SIPAddress, remoteTarget: SIPURI, routeSet: [SIPAddress]) {
                self.localURI = localURI.detached
                self.remoteURI = remoteURI.detached
                self.remoteTarget = remoteTarget.detached
                self.routeSet = routeSet.map(\.detached)
            }

            static func == (a: Parsed, b: Parsed) -> Bool {
                a.localURI == b.localURI && a.remoteURI == b.remoteURI && a.remoteTarget == b.remoteTarget
                    && a.routeSet == b.routeSet
            }

            func hash(into hasher: inout Hasher) {
                hasher.combine(localURI)
                hasher.combine(remoteURI)
                hasher.combine(remoteTarget)
                hasher.combine(routeSet)
            }
        }

        private var form: Form

        /// `localURI` and `remoteURI` get the dialog's tags (§12.2.1.1: From carries the local
        /// tag, To the remote tag).
        init(localURI: SIPAddress, remoteURI: SIPAddress, remoteTarget: SIPURI, routeSet: [SIPAddress], id: ID) {
            var local = localURI
            local.tag = id.localTag
            var remote = remoteURI
            remote.tag = id.remoteTag
            var fields = [local.description, remote.description, remoteTarget.description]
            for route in routeSet { fields.append(route.description) }
            let readsBack =
                !fields.contains { $0.utf8.contains(0x0A) }
                && (try? SIPAddress(fields[Self.local])) == local
                && (try? SIPAddress(fields[Self.remote])) == remote
                && (try? SIPURI(fields[Self.target])) == remoteTarget
                && zip(fields[Self.firstRoute...], routeSet).allSatisfy { (try? SIPAddress($0)) == $1 }
            form =
                readsBack
                ? .text(fields.linesInExactCapacity())
                : .parsed(Parsed(localURI: local, remoteURI: remote, remoteTarget: remoteTarget, routeSet: routeSet))
        }

        /// The fields as a record stores their wire text (`fields`: local, remote, target,
        /// routes...), each already parsed from it. When every value writes back to its text and
        /// the tags are the dialog's, as in every record a dialog wrote, the text is kept as it is:
        /// the same form as the other initializer's, without parsing each field a second time to
        /// see that it reads back (a tenth of a restart's time: docs/performance.md).
        init(
            fields: [String], localURI: SIPAddress, remoteURI: SIPAddress, remoteTarget: SIPURI,
            routeSet: [SIPAddress], id: ID
        ) {
            let asWritten =
                fields.count == Self.firstRoute + routeSet.count && localURI.tag == id.localTag
                && remoteURI.tag == id.remoteTag && !fields.contains { $0.utf8.contains(0x0A) }
                && localURI.description == fields[Self.local] && remoteURI.description == fields[Self.remote]
                && remoteTarget.description == fields[Self.target]
                && zip(fields[Self.firstRoute...], routeSet).allSatisfy { $0 == $1.description }
            guard asWritten else {
                self.init(
                    localURI: localURI, remoteURI: remoteURI, remoteTarget: remoteTarget, routeSet: routeSet, id: id)
                return
            }
            self.init(form: .text(fields.linesInExactCapacity()))
        }

        private init(form: Form) { self.form = form }

        /// The wire text of each field, in order (local, remote, target, routes...).
        var fields: [Substring] {
            switch form {
            case .text(let text):
                return text[...].parts(separatedBy: "\n")
            case .parsed(let parsed):
                return
                    ([parsed.localURI, parsed.remoteURI].map(\.description) + [parsed.remoteTarget.description]
                    + parsed.routeSet.map(\.description)).map { Substring($0) }
            }
        }

        /// The wire text of one field (found without splitting the whole text).
        func field(_ index: Int) -> Substring {
            guard case .text(let text) = form else {
                let all = fields
                return index < all.count ? all[index] : ""
            }
            let bytes = text.utf8
            var start = bytes.startIndex
            for _ in 0..<index {
                guard let lineFeed = bytes[start...].firstIndex(of: 0x0A) else { return "" }
                start = bytes.index(after: lineFeed)
            }
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.endIndex
            return Substring(bytes[start..<end])
        }

        func address(at index: Int) -> SIPAddress {
            if case .parsed(let parsed) = form { return index == Self.local ? parsed.localURI : parsed.remoteURI }
            return Self.address(field(index))
        }

        var target: SIPURI {
            if case .parsed(let parsed) = form { return parsed.remoteTarget }
            // Verified to read back when stored; the fallback is never taken.
            return (try? SIPURI(String(field(Self.target)))) ?? SIPURI(host: "")
        }

        var routes: [SIPAddress] {
            if case .parsed(let parsed) = form { return parsed.routeSet }
            return fields.dropFirst(Self.firstRoute).map(Self.address)
        }

        var hasRoutes: Bool {
            switch form {
            case .parsed(let parsed): return !parsed.routeSet.isEmpty
            case .text(let text): return text.utf8.count { $0 == 0x0A } >= Self.firstRoute
            }
        }

        private static func address(_ text: Substring) -> SIPAddress {
            // Verified to read back when stored; the fallback is never taken.
            (try? SIPAddress(String(text))) ?? SIPAddress(uri: SIPURI(host: ""))
        }
    }
}

extension SIPDialog {
    /// The UAS side (RFC 3261 §12.1.1), from the dialog-creating request and the local tag the UAS
    /// puts in its 2xx (or, for RFC 6665 §4.1.2.4, a subscriber receiving a NOTIFY).
    ///
    /// "The route set MUST be set to the list of URIs in the Record-Route header field from the
    /// request, taken in order ... The remote target MUST be set to the URI from the Contact header
    /// field of the request ... The remote sequence number MUST be set to the value of the sequence
    /// number in the CSeq header field of the request. The local sequence number MUST be empty."
    public init(uasFor request: SIPRequest, localTag: String, overTLS: Bool = false) throws(SIPStackError) {
        let h = request.headers
        let from = try Self.required(h.from, "From")
        let to = try Self.required(h.to, "To")
        guard let remoteTag = from.tag else {
            throw SIPStackError(.invalidDialogRequest, "the request's From has no tag (RFC 3261 §8.1.1.3)")
        }
        let callID = try Self.required(h.callID, "Call-ID")
        let cseq = try Self.required(h.cseq, "CSeq")
        let contact = try Self.contactURI(h)
        let recordRoute = try Self.parsed(h.recordRoute)
        var local = to
        local.tag = localTag
        self.init(
            id: ID(callID: callID, localTag: localTag, remoteTag: remoteTag),
            localSequence: nil, remoteSequence: cseq.sequence,
            localURI: local, remoteURI: from, remoteTarget: contact, routeSet: recordRoute,
            isSecure: overTLS && request.uri.scheme == .sips)
    }

    /// The UAC side (RFC 3261 §12.1.2), from the request sent and the 2xx (or 1xx with a To tag)
    /// received.
    ///
    /// "The route set MUST be set to the list of URIs in the Record-Route header field from the
    /// response, taken in reverse order ... The remote target MUST be set to the URI from the
    /// Contact header field of the response. The local sequence number MUST be set to the value of
    /// the sequence number in the CSeq header field of the request. The remote sequence number
    /// MUST be empty."
    public init(uacFor request: SIPRequest, response: SIPResponse, overTLS: Bool = false) throws(SIPStackError) {
        let rh = response.headers
        let from = try Self.required(request.headers.from, "From")
        let to = try Self.required(rh.to, "To")
        guard let localTag = from.tag else {
            throw SIPStackError(.invalidDialogRequest, "the request's From has no tag (RFC 3261 §8.1.1.3)")
        }
        guard let remoteTag = to.tag else {
            throw SIPStackError(.invalidDialogResponse, "the response's To has no tag (RFC 3261 §12.1.2)")
        }
        let callID = try Self.required(request.headers.callID, "Call-ID")
        let cseq = try Self.required(request.headers.cseq, "CSeq")
        self.init(
            id: ID(callID: callID, localTag: localTag, remoteTag: remoteTag),
            localSequence: cseq.sequence, remoteSequence: nil,
            localURI: from, remoteURI: to, remoteTarget: try Self.contactURI(rh),
            routeSet: try Self.parsed(rh.recordRoute).reversed(),
            isSecure: overTLS && request.uri.scheme == .sips)
    }

    /// A subscriber's dialog created by a NOTIFY that arrived before the 200 to its SUBSCRIBE
    /// (RFC 6665 §4.1.2.4): the subscriber is the UAS of the NOTIFY, so the route set is the
    /// NOTIFY's Record-Route in order, the remote target its Contact, the remote sequence its CSeq;
    /// the local sequence is the SUBSCRIBE's CSeq.
    public init(subscriberFor subscribe: SIPRequest, notify: SIPRequest, overTLS: Bool = false) throws(SIPStackError) {
        let from = try Self.required(subscribe.headers.from, "From")
        guard let localTag = from.tag else {
            throw SIPStackError(.invalidDialogRequest, "the SUBSCRIBE's From has no tag")
        }
        let notifyFrom = try Self.required(notify.headers.from, "From")
        guard let remoteTag = notifyFrom.tag else {
            throw SIPStackError(.invalidDialogRequest, "the NOTIFY's From has no tag (RFC 6665 §4.2.2)")
        }
        let callID = try Self.required(subscribe.headers.callID, "Call-ID")
        let cseq = try Self.required(subscribe.headers.cseq, "CSeq")
        let notifyCSeq = try Self.required(notify.headers.cseq, "CSeq")
        self.init(
            id: ID(callID: callID, localTag: localTag, remoteTag: remoteTag),
            localSequence: cseq.sequence, remoteSequence: notifyCSeq.sequence,
            localURI: from, remoteURI: notifyFrom, remoteTarget: try Self.contactURI(notify.headers),
            routeSet: try Self.parsed(notify.headers.recordRoute),
            isSecure: overTLS && subscribe.uri.scheme == .sips)
    }

    /// The dialog ID a received request belongs to, from the receiver's point of view (local tag =
    /// the request's To tag, §12.2.2); nil when the request has no To tag (out of dialog).
    public static func id(ofReceived request: SIPRequest) -> ID? {
        guard let callID = request.headers.callID,
            let localTag = (try? request.headers.to)?.tag,
            let remoteTag = (try? request.headers.from)?.tag
        else { return nil }
        return ID(callID: callID, localTag: localTag, remoteTag: remoteTag)
    }

    /// The dialog ID a received response belongs to, from the UAC's point of view.
    public static func id(ofResponse response: SIPResponse) -> ID? {
        guard let callID = response.headers.callID,
            let localTag = (try? response.headers.from)?.tag,
            let remoteTag = (try? response.headers.to)?.tag
        else { return nil }
        return ID(callID: callID, localTag: localTag, remoteTag: remoteTag)
    }

    /// Builds the next request in the dialog (RFC 3261 §12.2.1.1) and advances the local CSeq.
    ///
    /// "The URI in the To field of the request MUST be set to the remote URI from the dialog
    /// state. The tag in the To header field of the request MUST be set to the remote tag ... The
    /// From URI ... local URI ... local tag ... The Call-ID ... If the local sequence number is
    /// empty, it MUST be set to 1 ... otherwise incremented by one." With a loose-routing first
    /// route (`;lr`) the Request-URI is the remote target and Route is the route set; with a
    /// strict router the Request-URI is the first route and the remote target goes last in Route.
    /// Via is left to the transaction layer; `contact` is this side's Contact (dialogs here are
    /// target-refreshed by SUBSCRIBE and NOTIFY, RFC 6665 §4.1.2.4 / §4.2.1.2).
    public mutating func makeRequest(
        _ method: SIPMethod, contact: SIPAddress?, maxForwards: Int = 70,
        body: [UInt8] = [], contentType: String? = nil
    ) -> SIPRequest {
        let sequence = nextLocalSequence()
        let fields = stored.fields
        var requestURI = remoteTarget
        var h = SIPHeaders()
        if stored.hasRoutes {
            let routes = routeSet
            if let first = routes.first, !first.uri.isLooseRouting {
                requestURI = first.uri
                for route in routes.dropFirst() { h.append(.route, route.description) }
                h.append(.route, SIPAddress(uri: remoteTarget).description)
            } else {
                for route in fields.dropFirst(Stored.firstRoute) { h.append(.route, String(route)) }
            }
        }
        h.append(.maxForwards, String(maxForwards))
        // The stored From and To are the local and remote URIs with their tags (§12.2.1.1).
        h.append(.from, String(fields[Stored.local]))
        h.append(.to, String(fields[Stored.remote]))
        h.append(.callID, id.callID)
        h.append(.cseq, "\(sequence) \(method.rawValue)")
        if let contact { h.append(.contact, contact.description) }
        if let contentType, !body.isEmpty { h.append(.contentType, contentType) }
        return SIPRequest(method: method, uri: requestURI, headers: h, body: body)
    }

    /// Takes the next local CSeq number (§12.2.1.1: 1 when empty, else one more). Also used for
    /// a piggybacked first notification ([MS-PRES] §4.4.2 `ms-piggyback-cseq`), which consumes
    /// the number the first NOTIFY would have had.
    public mutating func nextLocalSequence() -> UInt32 {
        let sequence = (localSequence ?? 0) &+ 1
        localSequence = sequence
        return sequence
    }

    /// What to do with a request received in this dialog (RFC 3261 §12.2.2).
    public enum Receipt: Sendable, Hashable {
        /// In order: process it (the remote CSeq and, for a target refresh, the remote target
        /// were updated).
        case accept
        /// "If the remote sequence number was not empty, but the sequence number of the request is
        /// lower than the remote sequence number, the request is out of order and MUST be rejected
        /// with a 500 (Server Internal Error) response."
        case rejectOutOfOrder
    }

    /// Applies a received in-dialog request's CSeq and, for target refresh requests (SUBSCRIBE,
    /// NOTIFY, INVITE, UPDATE; RFC 6665 §4.1.2.4, §4.2.1.2), its Contact.
    public mutating func receive(_ request: SIPRequest) -> Receipt {
        guard let cseq = try? request.headers.cseq else { return .rejectOutOfOrder }
        if let remote = remoteSequence, cseq.sequence < remote { return .rejectOutOfOrder }
        remoteSequence = cseq.sequence
        if Self.targetRefreshMethods.contains(request.method),
            let contact = (try? request.headers.contact)?.first?.address
        {
            refreshTarget(contact.uri)
        }
        return .accept
    }

    /// Applies a 2xx to a target refresh request this side sent (§12.2.1.2: the remote target is
    /// replaced by the response's Contact).
    public mutating func receive(_ response: SIPResponse, to method: SIPMethod) {
        guard (200..<300).contains(response.statusCode), Self.targetRefreshMethods.contains(method),
            let contact = (try? response.headers.contact)?.first?.address
        else { return }
        refreshTarget(contact.uri)
    }

    /// A target refresh (§12.2): the stored text is rewritten only when the target changed.
    private mutating func refreshTarget(_ uri: SIPURI) {
        guard stored.field(Stored.target) != Substring(uri.description) else { return }
        remoteTarget = uri
    }

    static let targetRefreshMethods: Set<SIPMethod> = [.subscribe, .notify, .invite, .update]

    private static func required<T>(_ value: @autoclosure () throws(SIPParseError) -> T?, _ name: String)
        throws(SIPStackError) -> T
    {
        let parsed: T?
        do { parsed = try value() } catch { throw SIPStackError(.invalidDialogRequest, "\(name): \(error)") }
        guard let parsed else { throw SIPStackError(.invalidDialogRequest, "missing \(name)") }
        return parsed
    }

    private static func parsed(_ value: @autoclosure () throws(SIPParseError) -> [SIPAddress]) throws(SIPStackError)
        -> [SIPAddress]
    {
        do { return try value() } catch { throw SIPStackError(.invalidDialogRequest, "Record-Route: \(error)") }
    }

    private static func contactURI(_ headers: SIPHeaders) throws(SIPStackError) -> SIPURI {
        let contacts: [SIPContact]
        do { contacts = try headers.contact } catch {
            throw SIPStackError(.invalidDialogRequest, "Contact: \(error)")
        }
        guard let uri = contacts.first?.address?.uri else {
            throw SIPStackError(
                .invalidDialogRequest, "a dialog-creating message needs one Contact URI (RFC 3261 §12.1)")
        }
        return uri
    }
}
