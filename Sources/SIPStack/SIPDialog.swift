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

    public var id: ID
    /// The CSeq of the last request this side sent in the dialog; nil until it sends one (a UAS
    /// dialog starts empty, §12.1.1).
    public var localSequence: UInt32?
    /// The CSeq of the last request received in the dialog; nil until one arrives (§12.1.2).
    public var remoteSequence: UInt32?
    /// From URI of requests this side sends (with `localTag`).
    public var localURI: SIPAddress
    /// To URI of requests this side sends (with `remoteTag`).
    public var remoteURI: SIPAddress
    /// Where in-dialog requests go: the peer's Contact, updated by target refresh requests.
    public var remoteTarget: SIPURI
    /// Route set, in the order it goes into Route headers of requests this side sends.
    public var routeSet: [SIPAddress]
    /// Whether the dialog was set up over TLS with a SIPS Request-URI (§12.1.1).
    public var isSecure: Bool

    /// The addresses are kept ``SIPAddress/detached``: a dialog lives for hours and must not keep
    /// the message it was created from.
    public init(id: ID, localSequence: UInt32?, remoteSequence: UInt32?, localURI: SIPAddress,
                remoteURI: SIPAddress, remoteTarget: SIPURI, routeSet: [SIPAddress], isSecure: Bool = false) {
        self.id = id
        self.localSequence = localSequence
        self.remoteSequence = remoteSequence
        self.localURI = localURI.detached
        self.remoteURI = remoteURI.detached
        self.remoteTarget = remoteTarget.detached
        self.routeSet = routeSet.map(\.detached)
        self.isSecure = isSecure
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
              let remoteTag = (try? request.headers.from)?.tag else { return nil }
        return ID(callID: callID, localTag: localTag, remoteTag: remoteTag)
    }

    /// The dialog ID a received response belongs to, from the UAC's point of view.
    public static func id(ofResponse response: SIPResponse) -> ID? {
        guard let callID = response.headers.callID,
              let localTag = (try? response.headers.from)?.tag,
              let remoteTag = (try? response.headers.to)?.tag else { return nil }
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
    public mutating func makeRequest(_ method: SIPMethod, contact: SIPAddress?, maxForwards: Int = 70,
                                     body: [UInt8] = [], contentType: String? = nil) -> SIPRequest {
        let sequence = nextLocalSequence()
        var requestURI = remoteTarget
        var routes = routeSet
        if let first = routeSet.first, !first.uri.isLooseRouting {
            requestURI = first.uri
            routes.removeFirst()
            routes.append(SIPAddress(uri: remoteTarget))
        }
        var h = SIPHeaders()
        for route in routes { h.append(.route, route.description) }
        h.append(.maxForwards, String(maxForwards))
        var to = remoteURI
        to.tag = id.remoteTag
        var from = localURI
        from.tag = id.localTag
        h.append(.from, from.description)
        h.append(.to, to.description)
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
           let contact = (try? request.headers.contact)?.first?.address {
            remoteTarget = contact.uri.detached
        }
        return .accept
    }

    /// Applies a 2xx to a target refresh request this side sent (§12.2.1.2: the remote target is
    /// replaced by the response's Contact).
    public mutating func receive(_ response: SIPResponse, to method: SIPMethod) {
        guard (200..<300).contains(response.statusCode), Self.targetRefreshMethods.contains(method),
              let contact = (try? response.headers.contact)?.first?.address else { return }
        remoteTarget = contact.uri.detached
    }

    static let targetRefreshMethods: Set<SIPMethod> = [.subscribe, .notify, .invite, .update]

    private static func required<T>(_ value: @autoclosure () throws(SIPParseError) -> T?, _ name: String) throws(SIPStackError) -> T {
        let parsed: T?
        do { parsed = try value() } catch { throw SIPStackError(.invalidDialogRequest, "\(name): \(error)") }
        guard let parsed else { throw SIPStackError(.invalidDialogRequest, "missing \(name)") }
        return parsed
    }

    private static func parsed(_ value: @autoclosure () throws(SIPParseError) -> [SIPAddress]) throws(SIPStackError) -> [SIPAddress] {
        do { return try value() } catch { throw SIPStackError(.invalidDialogRequest, "Record-Route: \(error)") }
    }

    private static func contactURI(_ headers: SIPHeaders) throws(SIPStackError) -> SIPURI {
        let contacts: [SIPContact]
        do { contacts = try headers.contact } catch {
            throw SIPStackError(.invalidDialogRequest, "Contact: \(error)")
        }
        guard let uri = contacts.first?.address?.uri else {
            throw SIPStackError(.invalidDialogRequest, "a dialog-creating message needs one Contact URI (RFC 3261 §12.1)")
        }
        return uri
    }
}
