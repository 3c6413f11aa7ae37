public import NIOCore
public import SIPMessages
public import SIPTransport
import _GatewayInternals

/// The SIP transaction layer (RFC 3261 §17) over one ``SIPTransport``, with the UAS core checks
/// of §8.2 in front of the TU.
///
/// It drives the value state machines (``NonInviteClientTransaction``,
/// ``NonInviteServerTransaction``, ``InviteServerTransaction``), keeps the transaction tables
/// (§17.1.3, §17.2.3 with the RFC 2543 fallback), runs their timers on the transport's event loop
/// (so an `EmbeddedEventLoop`'s `advanceTime` is its clock in tests) and answers on its own:
///
/// - INVITE with 405 and Allow (or 501, ``Configuration/inviteStatus``) through an INVITE server
///   transaction: this gateway sets up no calls. A CANCEL matching it gets 200 and nothing else
///   (the INVITE is already answered); a CANCEL matching nothing gets 481 (§9.2).
/// - OPTIONS with 200 (§11.2) when ``Configuration/answersOptions``.
/// - Requests the UAS core rejects (``SIPUASCore``), merged requests included (482, §8.2.2.2).
/// - A branch that is only the magic cookie (RFC 4475 §3.2.1) with a stateless 400, or by the
///   RFC 2543 rules (``Configuration/bareMagicCookie``).
///
/// Confinement: every method is called on the transport's event loop, and every callback runs
/// there. Nothing locks.
public final class SIPTransactionLayer: @unchecked Sendable {
    /// How to treat a Via branch that is exactly `z9hG4bK` (RFC 4475 §3.2.1: "An element
    /// receiving this request could reject the request with a 400 Response (preferably
    /// statelessly, as other requests from the source are likely also to have a malformed branch
    /// parameter), or it could fall back to the RFC 2543-style transaction identifier.")
    public enum BareMagicCookiePolicy: Sendable, Hashable {
        case rejectStatelessly
        case rfc2543Fallback
    }

    /// Upper bounds on the tables, so a flood cannot exhaust memory.
    public struct Limits: Sendable, Hashable {
        /// Server transactions alive at once; beyond, requests get a stateless 503. Default 10,000.
        public var maxServerTransactions: Int
        /// Client transactions alive at once; beyond, ``SIPTransactionLayer/send(_:to:connection:onEvent:)``
        /// throws. Default 10,000.
        public var maxClientTransactions: Int
        /// How long (in multiples of T1) a non-INVITE server transaction waits for the TU's final
        /// response before it is abandoned without one. Default 64 (the client's Timer F).
        public var tuResponseTimeoutInT1: Int

        public init(
            maxServerTransactions: Int = 10_000, maxClientTransactions: Int = 10_000,
            tuResponseTimeoutInT1: Int = 64
        ) {
            self.maxServerTransactions = maxServerTransactions
            self.maxClientTransactions = maxClientTransactions
            self.tuResponseTimeoutInT1 = tuResponseTimeoutInT1
        }
    }

    public struct Configuration: Sendable, Hashable {
        public var timers: SIPTimerConfiguration
        /// What the UAS core accepts. ``SIPTransactionLayer/setRequestHandler(for:_:)`` sets its
        /// ``SIPUASCoreConfiguration/allowedMethods``.
        public var uas: SIPUASCoreConfiguration
        /// The answer to INVITE: 405 (with Allow, the default) or 501.
        public var inviteStatus: Int
        /// Whether the layer answers OPTIONS itself (RFC 3261 §11.2) instead of the TU.
        public var answersOptions: Bool
        public var bareMagicCookie: BareMagicCookiePolicy
        public var limits: Limits
        /// RFC 3261 §18.1.1: "If a request is within 200 bytes of the path MTU, or if it is
        /// larger than 1300 bytes and the path MTU is unknown, the request MUST be sent using an
        /// RFC 2914 congestion controlled transport protocol, such as TCP." A request to a UDP
        /// target whose serialized size (top Via included) exceeds this many bytes goes over TCP
        /// to the same address and port, when the transport has TCP; its top Via says TCP.
        /// Default 1300 (the path MTU is never known here); nil sends every size over UDP.
        public var udpRequestSizeLimit: Int?
        /// The shard this layer serves (``ShardMap``): its mark starts every branch it makes, so
        /// that each response finds it. 0 for a gateway of one shard.
        public var shard: Int

        public init(
            timers: SIPTimerConfiguration = .default,
            uas: SIPUASCoreConfiguration = SIPUASCoreConfiguration(allowedMethods: []),
            inviteStatus: Int = 405, answersOptions: Bool = true,
            bareMagicCookie: BareMagicCookiePolicy = .rejectStatelessly, limits: Limits = Limits(),
            udpRequestSizeLimit: Int? = 1300, shard: Int = 0
        ) {
            self.shard = shard
            self.timers = timers
            self.uas = uas
            self.inviteStatus = inviteStatus
            self.answersOptions = answersOptions
            self.bareMagicCookie = bareMagicCookie
            self.limits = limits
            self.udpRequestSizeLimit = udpRequestSizeLimit
        }
    }

    /// Counts of what the layer dropped or answered on its own.
    public struct Counters: Sendable, Hashable {
        /// Responses that matched no client transaction (§17.1.3), dropped.
        public var unmatchedResponses = 0
        /// Responses whose top Via sent-by is not this transport's (§18.1.2), dropped.
        public var misroutedResponses = 0
        /// ACKs that matched no INVITE server transaction, dropped.
        public var unmatchedACKs = 0
        /// Request retransmissions a server transaction absorbed or answered.
        public var requestRetransmissions = 0
        /// Responses sent without a transaction.
        public var statelessResponses = 0
        /// Requests the UAS core rejected (the layer answered).
        public var rejectedRequests = 0
        /// Server transactions that ended on Timer H (no ACK), a transport error, or because the
        /// TU never answered (those are also in ``abandonedServerTransactions``).
        public var failedServerTransactions = 0
        /// Non-INVITE server transactions the TU never answered (``Limits/tuResponseTimeoutInT1``).
        public var abandonedServerTransactions = 0
        /// New requests answered 503 because the server transaction table was full
        /// (``Limits/maxServerTransactions``).
        public var refusedWhileFull = 0
    }

    /// A request handed to the TU, with what the TU needs to answer it.
    public struct IncomingRequest: Sendable {
        public var request: SIPRequest
        public var received: SIPReceivedMessage
        /// The server transaction; answer with ``SIPTransactionLayer/respond(_:to:)``.
        public var transaction: SIPServerTransactionKey
        /// The To tag this UAS uses in its responses when the request had none (§8.2.6.2).
        public var toTag: String
    }

    public let transport: any SIPTransport
    public private(set) var configuration: Configuration
    public private(set) var counters = Counters()
    public var eventLoop: any EventLoop { transport.eventLoop }

    private enum ServerMachine {
        case nonInvite(NonInviteServerTransaction)
        /// Out of line: three times the size of a non-INVITE one, and rare here (every INVITE is
        /// refused), while every held transaction's entry would be as large as the largest case.
        indirect case invite(InviteServerTransaction)
    }

    private struct ServerEntry {
        var machine: ServerMachine
        var serial: UInt64
        var destination: SIPResponseRoute?
        /// The running timers, each with the token its ``SIPTimerQueue`` callback must match.
        var timers = SIPTimerTokens()
        var aliases: [SIPServerTransactionKey] = []
        var mergeKey: SIPMergeKey?
    }

    private struct ClientEntry {
        var machine: NonInviteClientTransaction
        var serial: UInt64
        var target: SIPTarget
        var connection: SIPConnectionID?
        var sentBy: String
        var handler: @Sendable (SIPClientTransactionEvent) -> Void
        /// The running timers, each with the token its ``SIPTimerQueue`` callback must match.
        var timers = SIPTimerTokens()
    }

    private var servers: [SIPServerTransactionKey: ServerEntry] = [:]
    private var aliases: [SIPServerTransactionKey: SIPServerTransactionKey] = [:]
    private var merged: [SIPMergeKey: SIPServerTransactionKey] = [:]
    private var clients: [SIPClientTransactionKey: ClientEntry] = [:]
    private var nextSerial: UInt64 = 1
    private let timerQueue: SIPTimerQueue
    private var requestHandler: (@Sendable (IncomingRequest) -> Void)?
    private var failureHandler: (@Sendable (SIPServerTransactionKey, SIPTransactionEnd) -> Void)?
    /// What every tag and branch this layer makes starts with: its shard's mark, made once
    /// (``ShardMark``; the shard never changes).
    private let tagPrefix: String
    private let branchPrefix: String

    public init(transport: any SIPTransport, configuration: Configuration = Configuration()) {
        self.transport = transport
        self.configuration = configuration
        self.timerQueue = SIPTimerQueue(eventLoop: transport.eventLoop)
        tagPrefix = ShardMark.tag("", shard: configuration.shard)
        branchPrefix = ShardMark.branch("", shard: configuration.shard)
    }

    /// Installs this layer as the transport's message handler.
    public func start() {
        eventLoop.assertInEventLoop()
        transport.setMessageHandler { [self] received in self.receive(received) }
    }

    /// Registers the TU: the methods it handles (the Allow list of 405 responses) and the
    /// receiver of requests that pass the UAS core.
    public func setRequestHandler(for methods: [SIPMethod], _ handler: @escaping @Sendable (IncomingRequest) -> Void) {
        configuration.uas.allowedMethods = methods
        requestHandler = handler
    }

    /// Installs the receiver of server transaction failures: Timer H without an ACK (§17.2.1),
    /// a transport error sending a response (§17.2.4: "inform the TU"), or a request the TU never
    /// answered (``Limits/tuResponseTimeoutInT1``).
    public func setServerFailureHandler(
        _ handler: @escaping @Sendable (SIPServerTransactionKey, SIPTransactionEnd) -> Void
    ) {
        failureHandler = handler
    }

    /// The number of live server transactions.
    public var serverTransactionCount: Int { servers.count }
    /// The number of live client transactions.
    public var clientTransactionCount: Int { clients.count }

    /// The state of a server transaction, nil when there is none.
    public func serverState(_ key: SIPServerTransactionKey) -> String? {
        switch servers[aliases[key] ?? key]?.machine {
        case .nonInvite(let m)?: m.state.rawValue
        case .invite(let m)?: m.state.rawValue
        case nil: nil
        }
    }

    /// The state of a client transaction, nil when there is none.
    public func clientState(_ key: SIPClientTransactionKey) -> NonInviteClientTransaction.State? {
        clients[key]?.machine.state
    }

    /// The keys of the live server transactions.
    public var serverTransactionKeys: [SIPServerTransactionKey] { Array(servers.keys) }

    // MARK: Client side

    /// Sends a non-INVITE request in a new client transaction (§17.1.2) and reports responses to
    /// `onEvent` (on the event loop).
    ///
    /// Adds the top Via (§8.1.1.7: `branch` = `z9hG4bK` + 64 random bits; sent-by = the
    /// transport's advertised address for `target.kind`; `rport`, RFC 3581 §3) and Max-Forwards 70
    /// when absent (§8.1.1.6). A request too large for UDP goes over TCP instead
    /// (``Configuration/udpRequestSizeLimit``, §18.1.1).
    @discardableResult
    public func send(
        _ request: SIPRequest, to target: SIPTarget, connection: SIPConnectionID? = nil,
        onEvent: @escaping @Sendable (SIPClientTransactionEvent) -> Void
    ) throws(SIPStackError) -> SIPClientTransactionKey {
        eventLoop.assertInEventLoop()
        guard request.method != .invite, request.method != .ack else {
            throw SIPStackError(
                .invalidClientRequest,
                "\(request.method) needs an INVITE client transaction, which this gateway does not make")
        }
        guard let cseq = try? request.headers.cseq, cseq.method == request.method else {
            throw SIPStackError(
                .invalidClientRequest,
                "CSeq is missing or names another method than \(request.method) (RFC 3261 §8.1.1.5)")
        }
        guard var local = transport.advertisedAddress(for: target.kind) else {
            throw SIPStackError(.noLocalAddress, "the transport has no \(target.kind) address for the Via sent-by")
        }
        guard clients.count < configuration.limits.maxClientTransactions else {
            throw SIPStackError(.tooManyTransactions, "\(clients.count) client transactions are running")
        }
        var key: SIPClientTransactionKey
        repeat {
            key = SIPClientTransactionKey(branch: makeBranch(), method: request.method)
        } while clients[key] != nil
        var target = target
        var connection = connection
        func addressed(_ kind: SIPTransportKind, from local: SIPTarget) -> (SIPRequest, SIPVia) {
            var outgoing = request
            let host = local.isIPv6 ? "[\(local.host)]" : local.host
            let via = SIPVia(
                transport: kind.rawValue, host: host, port: local.port,
                parameters: [SIPParameter(name: "branch", value: key.branch), SIPParameter(name: "rport", value: nil)])
            outgoing.headers.prepend(.via, via.description)
            if !outgoing.headers.contains(.maxForwards) { outgoing.headers.append(.maxForwards, "70") }
            return (outgoing, via)
        }
        var (outgoing, via) = addressed(target.kind, from: local)
        if target.kind == .udp, let limit = configuration.udpRequestSizeLimit,
            let tcp = transport.advertisedAddress(for: .tcp),
            SIPMessage.request(outgoing).serialized().count > limit
        {
            // §18.1.1: too large for UDP with an unknown path MTU; "If this causes a change in the
            // transport protocol from the one indicated in the top Via, the value in the top Via
            // MUST be changed."
            target = SIPTarget(.tcp, host: target.host, port: target.port, serverName: target.serverName)
            connection = nil
            local = tcp
            (outgoing, via) = addressed(.tcp, from: local)
        }

        var machine = NonInviteClientTransaction(
            request: outgoing, reliable: target.kind.isReliable,
            timers: configuration.timers)
        let actions = machine.start()
        clients[key] = ClientEntry(
            machine: machine, serial: takeSerial(), target: target, connection: connection,
            sentBy: SIPServerTransactionKey.sentBy(via), handler: onEvent)
        performClient(actions, key: key, origin: .network)
        return key
    }

    /// Whether ``send(_:to:connection:onEvent:)`` would fail `request` to `target` for its size:
    /// with the top Via and Max-Forwards it adds, it is over ``Configuration/udpRequestSizeLimit``
    /// for a UDP target, and there is no TCP address to move it to (RFC 3261 §18.1.1).
    public func exceedsUDP(_ request: SIPRequest, to target: SIPTarget) -> Bool {
        guard target.kind == .udp, let limit = configuration.udpRequestSizeLimit,
            transport.advertisedAddress(for: .tcp) == nil, let local = transport.advertisedAddress(for: .udp)
        else { return false }
        let host = local.isIPv6 ? "[\(local.host)]" : local.host
        // "Via: SIP/2.0/UDP host:port;branch=" + the prefix + at most 16 hex digits + ";rport" + CRLF.
        let via = "Via: SIP/2.0/UDP \(host):\(local.port);branch=\(branchPrefix);rport\r\n".utf8.count + 16
        let maxForwards = request.headers.contains(.maxForwards) ? 0 : "Max-Forwards: 70\r\n".utf8.count
        return SIPMessage.request(request).serialized().count + via + maxForwards > limit
    }

    /// Where a client transaction's actions come from; a transport error carries its
    /// description, which becomes the reason phrase of the 503 made locally (§8.1.3.1) so the
    /// TU can tell an operator why ("tls-failed: certificate name …").
    private enum ClientOrigin {
        case network, timeout
        case transportError(String)
    }

    private func performClient(_ actions: [SIPTransactionAction], key: SIPClientTransactionKey, origin: ClientOrigin) {
        for action in actions {
            guard let entry = clients[key] else { return }
            switch action {
            case .send(let message):
                let serial = entry.serial
                transport.send(message, to: entry.target, connection: entry.connection).whenFailure { [self] error in
                    // Deferred to the next loop turn: the failure may be reported while this
                    // list of actions is still being performed.
                    self.eventLoop.execute { self.clientTransportError(key, serial: serial, error: "\(error)") }
                }
            case .startTimer(let timer, let delay):
                let serial = entry.serial
                let token = takeSerial()
                clients[key]?.timers[timer] = token
                timerQueue.schedule(in: delay) { [self] in
                    self.clientTimerFired(timer, key: key, serial: serial, token: token)
                }
            case .cancelTimer(let timer):
                clients[key]?.timers[timer] = nil
            case .deliverResponse(let response):
                switch origin {
                case .network: entry.handler(.response(response))
                case .timeout: entry.handler(.timeout(response))
                case .transportError(let error):
                    var local = response
                    local.reasonPhrase = "Service Unavailable (\(error))"
                    entry.handler(.transportError(local))
                }
            case .terminate:
                clients[key] = nil
                clients.releaseSparseCapacity()
            }
        }
    }

    private func clientTimerFired(
        _ timer: SIPTransactionTimer, key: SIPClientTransactionKey, serial: UInt64, token: UInt64
    ) {
        guard var entry = clients[key], entry.serial == serial, entry.timers[timer] == token else { return }
        entry.timers[timer] = nil
        let actions = entry.machine.timerFired(timer)
        clients[key] = entry
        performClient(actions, key: key, origin: timer == .f ? .timeout : .network)
    }

    private func clientTransportError(_ key: SIPClientTransactionKey, serial: UInt64, error: String) {
        guard var entry = clients[key], entry.serial == serial else { return }
        let actions = entry.machine.transportError()
        clients[key] = entry
        performClient(actions, key: key, origin: .transportError(error))
    }

    private func receiveResponse(_ response: SIPResponse) {
        guard let key = SIPClientTransactionKey(response: response), var entry = clients[key] else {
            counters.unmatchedResponses += 1
            return
        }
        // §18.1.2: "If the value [of sent-by in the top Via] does not correspond to the value that
        // the transport would have inserted into the request, the response MUST be silently
        // discarded."
        guard let top = try? response.headers.via.first, SIPServerTransactionKey.sentBy(top) == entry.sentBy else {
            counters.misroutedResponses += 1
            return
        }
        let actions = entry.machine.receive(response)
        clients[key] = entry
        performClient(actions, key: key, origin: .network)
    }

    // MARK: Server side

    /// Entry point for every message from the transport (public so tests can feed messages
    /// directly, e.g. RFC 4475 vectors).
    public func receive(_ received: SIPReceivedMessage) {
        eventLoop.assertInEventLoop()
        switch received.message {
        case .response(let response): receiveResponse(response)
        case .request(let request): receiveRequest(request, received)
        }
    }

    /// Answers a request without a transaction (RFC 3261 §8.2.7 / §18.2.2), e.g. for requests
    /// that need none or when no transaction can be made.
    public func respondStatelessly(
        _ response: SIPResponse, to request: SIPRequest, receivedOver received: SIPReceivedMessage
    ) {
        guard let destination = Self.route(for: request, receivedOver: received) else { return }
        counters.statelessResponses += 1
        _ = transport.send(.response(response), to: destination.target, connection: destination.connection)
    }

    /// The TU answers a request it was handed.
    public func respond(_ response: SIPResponse, to key: SIPServerTransactionKey) throws(SIPStackError) {
        eventLoop.assertInEventLoop()
        guard var entry = servers[key] else {
            throw SIPStackError(.unknownTransaction, "no server transaction \(key)")
        }
        let actions: [SIPTransactionAction]
        switch entry.machine {
        case .nonInvite(var m):
            actions = m.send(response)
            entry.machine = .nonInvite(m)
        case .invite(var m):
            actions = m.send(response)
            entry.machine = .invite(m)
        }
        servers[key] = entry
        if response.statusCode >= 200, case .invite = entry.machine,
            let alias = key.ackAlias(toTag: (try? response.headers.to)?.tag)
        {
            servers[key]?.aliases.append(alias)
            aliases[alias] = key
        }
        performServer(actions, key: key)
    }

    private func receiveRequest(_ request: SIPRequest, _ received: SIPReceivedMessage) {
        let isACK = request.method == .ack
        let lookupMethod: SIPMethod? = isACK ? .invite : nil
        let fallsBack = configuration.bareMagicCookie == .rfc2543Fallback
        let key: SIPServerTransactionKey
        switch SIPServerTransactionKey.make(for: request, method: lookupMethod, bareCookieFallsBack: fallsBack) {
        case .success(let k):
            key = k
        case .failure(let failure):
            if isACK {
                counters.unmatchedACKs += 1
                return
            }
            let phrase = failure == .bareMagicCookie ? "Bad Request (Missing Transaction Identifier)" : "Bad Request"
            respondStatelessly(
                SIPResponse(replyingTo: request, statusCode: 400, reasonPhrase: phrase),
                to: request, receivedOver: received)
            return
        }

        if isACK {
            // An RFC 2543 ACK carries the To tag of the response: its key is an alias.
            let target = key.isRFC3261 ? key : (aliases[ackKey2543(request)] ?? key)
            guard var entry = servers[target], case .invite(var m) = entry.machine else {
                counters.unmatchedACKs += 1
                return
            }
            let actions = m.receiveACK()
            entry.machine = .invite(m)
            servers[target] = entry
            performServer(actions, key: target)
            return
        }

        // BENOTIFY is "best effort": its sender expects no response and never retransmits it
        // ([MS-PRES] §3.4.5.1.4, [MS-SIP]), so no server transaction is kept — one per
        // notification would sit in the table for 64·T1. It goes to the TU as it is (after the
        // §8.2 checks, whose refusals are not sent either).
        if request.method == .benotify {
            let toTag = makeTag()
            guard
                case .accept = SIPUASCore.check(
                    request, configuration: effectiveUAS, toTag: toTag, isMerged: { _ in false }),
                let requestHandler
            else {
                counters.rejectedRequests += 1
                return
            }
            requestHandler(IncomingRequest(request: request, received: received, transaction: key, toTag: toTag))
            return
        }

        // A retransmission of a request with a live transaction (§17.2.3).
        if var entry = servers[key] {
            counters.requestRetransmissions += 1
            let actions: [SIPTransactionAction]
            switch entry.machine {
            case .nonInvite(var m):
                actions = m.receiveRetransmission()
                entry.machine = .nonInvite(m)
            case .invite(var m):
                actions = m.receiveRetransmission()
                entry.machine = .invite(m)
            }
            servers[key] = entry
            performServer(actions, key: key)
            return
        }

        guard servers.count < configuration.limits.maxServerTransactions else {
            counters.refusedWhileFull += 1
            respondStatelessly(
                SIPResponse(replyingTo: request, statusCode: 503, headers: [(.retryAfter, "5")]),
                to: request, receivedOver: received)
            return
        }

        let reliable = received.source.kind.isReliable
        let toTag = makeTag()
        let destination = Self.route(for: request, receivedOver: received)
        let timers = configuration.timers

        if request.method == .invite {
            servers[key] = ServerEntry(
                machine: .invite(InviteServerTransaction(request: request, reliable: reliable, timers: timers)),
                serial: takeSerial(), destination: destination)
            var extra: SIPHeaders = []
            if configuration.inviteStatus == 405 { extra.append(.allow, effectiveUAS.allowHeader) }
            try? respond(
                SIPResponse(replyingTo: request, statusCode: configuration.inviteStatus, toTag: toTag, headers: extra),
                to: key)
            return
        }

        let serial = takeSerial()
        servers[key] = ServerEntry(
            machine: .nonInvite(NonInviteServerTransaction(reliable: reliable, timers: timers)),
            serial: serial, destination: destination)
        let patience = TimeAmount.nanoseconds(
            timers.t1.nanoseconds * Int64(max(1, configuration.limits.tuResponseTimeoutInT1)))
        // Not cancelled when answered: `abandon()` does nothing once a response was sent, and a
        // later transaction with the same key has another serial.
        timerQueue.schedule(in: patience) { [self] in
            self.updateServer(key, serial: serial) { machine in
                guard case .nonInvite(var m) = machine else { return [] }
                let actions = m.abandon()
                machine = .nonInvite(m)
                if !actions.isEmpty { self.counters.abandonedServerTransactions += 1 }
                return actions
            }
        }

        if request.method == .cancel {
            // §9.2: "the transaction to be cancelled is determined by ... the same as the
            // matching procedure in 17.2.3 ... If the UAS did not find a matching transaction for
            // the CANCEL according to the procedure above, it SHOULD respond to the CANCEL with a
            // 481 (Call Leg/Transaction Does Not Exist). If the transaction for the original
            // request still exists, the behavior of the UAS on receiving a CANCEL request depends
            // on whether it has already sent a final response for the original request. If it
            // has, the CANCEL request has no effect on the processing of the original request"
            // and "the response to the CANCEL [is] a 200 (OK)".
            let inviteKey = SIPServerTransactionKey.make(for: request, method: .invite, bareCookieFallsBack: fallsBack)
            guard case .success(let k) = inviteKey, case .invite(let invite)? = servers[k]?.machine else {
                try? respond(SIPResponse(replyingTo: request, statusCode: 481, toTag: toTag), to: key)
                return
            }
            // "The To tag of the response to the CANCEL and the To tag in the response to the
            // original request SHOULD be the same."
            let inviteTag = invite.lastResponse.flatMap { try? $0.headers.to?.tag }
            try? respond(SIPResponse(replyingTo: request, statusCode: 200, toTag: inviteTag ?? toTag), to: key)
            return
        }

        // §8.2.2.2: "If the request has no tag in the To header field, the UAS core MUST check
        // the request against ongoing transactions": another live transaction with this From
        // tag, Call-ID and CSeq. A request inside a dialog is never merged, so it is not indexed.
        let mergeKey = (try? request.headers.to)?.tag == nil ? SIPMergeKey(request) : nil
        let mergesWithAnother = mergeKey.flatMap { merged[$0] }.map { $0 != key && servers[$0] != nil } ?? false
        if !mergesWithAnother, let mergeKey {
            merged[mergeKey] = key
            servers[key]?.mergeKey = mergeKey
        }
        let verdict = SIPUASCore.check(request, configuration: effectiveUAS, toTag: toTag) { _ in mergesWithAnother }
        if case .reject(let response) = verdict {
            counters.rejectedRequests += 1
            try? respond(response, to: key)
            return
        }
        if request.method == .options, configuration.answersOptions,
            !configuration.uas.allowedMethods.contains(.options)
        {
            try? respond(SIPUASCore.optionsResponse(to: request, configuration: effectiveUAS, toTag: toTag), to: key)
            return
        }
        guard let requestHandler else {
            try? respond(
                SIPResponse(
                    replyingTo: request, statusCode: 500, reasonPhrase: "Server Internal Error (no TU)",
                    toTag: toTag), to: key)
            return
        }
        requestHandler(IncomingRequest(request: request, received: received, transaction: key, toTag: toTag))
    }

    /// The UAS configuration with OPTIONS added when the layer answers it.
    private var effectiveUAS: SIPUASCoreConfiguration {
        var uas = configuration.uas
        if configuration.answersOptions, !uas.allowedMethods.contains(.options) { uas.allowedMethods.append(.options) }
        return uas
    }

    private func ackKey2543(_ request: SIPRequest) -> SIPServerTransactionKey {
        if case .success(let k) = SIPServerTransactionKey.make(for: request, bareCookieFallsBack: true) { return k }
        return SIPServerTransactionKey(.rfc3261(branch: "", sentBy: "", method: .ack))
    }

    private func performServer(_ actions: [SIPTransactionAction], key: SIPServerTransactionKey) {
        for action in actions {
            guard let entry = servers[key] else { return }
            switch action {
            case .send(let message):
                guard let destination = entry.destination else { continue }
                let serial = entry.serial
                transport.send(message, to: destination.target, connection: destination.connection).whenFailure {
                    [self] _ in
                    self.eventLoop.execute { self.serverTransportError(key, serial: serial) }
                }
            case .startTimer(let timer, let delay):
                let serial = entry.serial
                let token = takeSerial()
                servers[key]?.timers[timer] = token
                timerQueue.schedule(in: delay) { [self] in
                    self.serverTimerFired(timer, key: key, serial: serial, token: token)
                }
            case .cancelTimer(let timer):
                servers[key]?.timers[timer] = nil
            case .deliverResponse:
                break
            case .terminate(let end):
                if end != .completed {
                    counters.failedServerTransactions += 1
                    failureHandler?(key, end)
                }
                for alias in entry.aliases { aliases[alias] = nil }
                if let mergeKey = entry.mergeKey, merged[mergeKey] == key { merged[mergeKey] = nil }
                servers[key] = nil
                servers.releaseSparseCapacity()
                aliases.releaseSparseCapacity()
                merged.releaseSparseCapacity()
            }
        }
    }

    private func updateServer(
        _ key: SIPServerTransactionKey, serial: UInt64,
        _ body: (inout ServerMachine) -> [SIPTransactionAction]
    ) {
        guard var entry = servers[key], entry.serial == serial else { return }
        let actions = body(&entry.machine)
        servers[key] = entry
        performServer(actions, key: key)
    }

    private func serverTimerFired(
        _ timer: SIPTransactionTimer, key: SIPServerTransactionKey, serial: UInt64, token: UInt64
    ) {
        guard let entry = servers[key], entry.serial == serial, entry.timers[timer] == token else { return }
        servers[key]?.timers[timer] = nil
        updateServer(key, serial: serial) { machine in
            switch machine {
            case .nonInvite(var m):
                defer { machine = .nonInvite(m) }
                return m.timerFired(timer)
            case .invite(var m):
                defer { machine = .invite(m) }
                return m.timerFired(timer)
            }
        }
    }

    private func serverTransportError(_ key: SIPServerTransactionKey, serial: UInt64) {
        updateServer(key, serial: serial) { machine in
            switch machine {
            case .nonInvite(var m):
                defer { machine = .nonInvite(m) }
                return m.transportError()
            case .invite(var m):
                defer { machine = .invite(m) }
                return m.transportError()
            }
        }
    }

    /// Where responses to `request` go: RFC 3261 §18.2.2 with RFC 3581 §4
    /// (``SIPResponseRoute/forResponse(topVia:requestConnection:)``, shared with the transport).
    /// Nil when the top Via does not parse or names a transport this stack lacks; such a request
    /// is never answered.
    static func route(for request: SIPRequest, receivedOver received: SIPReceivedMessage) -> SIPResponseRoute? {
        guard let top = try? request.headers.via.first else { return nil }
        return try? SIPResponseRoute.forResponse(topVia: top, requestConnection: received.connection)
    }

    private func takeSerial() -> UInt64 {
        defer { nextSerial += 1 }
        return nextSerial
    }

    /// `z9hG4bK`, the shard's mark, then 64 random bits in hex (§8.1.1.7: "The branch ID
    /// inserted by an element compliant with this specification MUST always begin with the
    /// characters "z9hG4bK"" and be unique across space and time).
    func makeBranch() -> String {
        branchPrefix + String(UInt64.random(in: .min ... .max), radix: 16)
    }

    /// The shard's mark, then 64 random bits in base 36 (§19.3: at least 32 bits of randomness):
    /// at most 15 bytes, which a Swift string holds without an allocation of its own.
    func makeTag() -> String {
        tagPrefix + String(UInt64.random(in: .min ... .max), radix: 36)
    }
}
