import AsyncHTTPClient
import Logging
import NIOCore
import NIOHTTP1

extension PresenceDevice {
    /// ssdp:alive now and every ``SSDPAdvertiser/reannounceInterval`` seconds (UDA 1.1 §1.2.2).
    func announce() async {
        while !Task.isCancelled {
            await send(advertiser.aliveMessages())
            try? await Task.sleep(for: .seconds(advertiser.reannounceInterval))
        }
    }

    /// Sends announcements to the configured target; a failed send (no route to the group) is
    /// skipped.
    func send(_ messages: [SSDPMessage]) async {
        guard let host = configuration.announceHost,
            let target = try? SocketAddress(ipAddress: host, port: configuration.announcePort)
        else { return }
        for message in messages {
            let envelope = AddressedEnvelope(remoteAddress: target, data: ByteBuffer(bytes: message.bytes))
            try? await ssdpChannel.writeAndFlush(envelope).get()
        }
    }

    /// The backend's changes into the publisher, for as long as the device runs.
    func forwardChanges() async {
        for await change in backend.changes {
            await publisher.changed(change)
        }
    }

    /// Moderation and expiry, ten times a second or at the moderation interval if shorter.
    func tick() async {
        let interval = min(configuration.eventing.moderationInterval, .milliseconds(100))
        while !Task.isCancelled {
            try? await Task.sleep(for: .nanoseconds(max(interval.nanoseconds, 10_000_000)))
            await publisher.tick()
        }
    }

    /// NOTIFY delivery (UDA 1.1 §4.3.2): each message to its callback URLs in order until one
    /// answers 2xx. Each subscription has its own queue and task, in this task group: its SEQs go
    /// out in order, and a slow or silent subscriber holds up only its own events (its queue keeps
    /// the newest 64; a gap in SEQ tells the control point to subscribe again).
    func deliver(with client: HTTPClient) async {
        await withDiscardingTaskGroup { group in
            var queues: [String: AsyncStream<GENANotify>.Continuation] = [:]
            for await item in publisher.outbox {
                switch item {
                case .ended(let sid):
                    queues.removeValue(forKey: sid)?.finish()
                case .notify(let message):
                    if let queue = queues[message.sid] {
                        queue.yield(message)
                        continue
                    }
                    let (queue, continuation) = AsyncStream.makeStream(
                        of: GENANotify.self, bufferingPolicy: .bufferingNewest(64))
                    queues[message.sid] = continuation
                    continuation.yield(message)
                    group.addTask {
                        for await message in queue { await self.deliver(message, with: client) }
                    }
                }
            }
            for queue in queues.values { queue.finish() }
        }
    }

    /// One message to the first callback URL that takes it (UDA 1.1 §4.3.2). When no URL could
    /// be reached (refused, reset, no answer in time) the message is tried again, with pauses
    /// that double from 250 ms, until ``notifyAbandonSeconds`` after its first try; then it is
    /// abandoned and the subscription kept. A URL that answered (2xx or not) ends the tries.
    func deliver(_ message: GENANotify, with client: HTTPClient) async {
        let deadline = ContinuousClock.now + .seconds(Self.notifyAbandonSeconds)
        var pause = Duration.milliseconds(250)
        var failures: [String] = []
        while !Task.isCancelled {
            var answered = false
            failures.removeAll()
            for url in message.callbacks {
                switch await notify(message, to: url, client: client) {
                case .success(let status) where (200..<300).contains(status): return
                case .success(let status):
                    answered = true
                    failures.append("\(url) answered \(status)")
                case .failure(let error): failures.append("\(url): \(error)")
                }
            }
            if answered {
                // Debug only: a control point that refuses every event would fill the log.
                return logger.debug("event message refused", metadata: Self.metadata(message, failures))
            }
            guard ContinuousClock.now + pause < deadline else { break }
            logger.debug("event message not delivered yet", metadata: Self.metadata(message, failures))
            try? await Task.sleep(for: pause)
            pause *= 2
        }
        // At most one a subscription per 30 s: its messages are tried one at a time. A device
        // that stops abandons what it was trying without a word.
        if !Task.isCancelled { logger.notice("event message abandoned", metadata: Self.metadata(message, failures)) }
    }

    /// UDA 1.1 §4.3.2: a message the subscriber has not taken within 30 seconds is abandoned.
    static let notifyAbandonSeconds: Int64 = 30

    static func metadata(_ message: GENANotify, _ failures: [String]) -> Logger.Metadata {
        ["sid": "\(message.sid)", "seq": "\(message.sequence)", "tries": "\(failures.joined(separator: "; "))"]
    }

    /// One NOTIFY: the status it was answered with, or why there was no answer.
    func notify(_ message: GENANotify, to url: String, client: HTTPClient) async -> Result<UInt, any Error> {
        var request = HTTPClientRequest(url: url)
        request.method = .NOTIFY
        request.headers.add(name: "CONTENT-TYPE", value: "text/xml; charset=\"utf-8\"")
        request.headers.add(name: "NT", value: "upnp:event")
        request.headers.add(name: "NTS", value: "upnp:propchange")
        request.headers.add(name: "SID", value: message.sid)
        request.headers.add(name: "SEQ", value: String(message.sequence))
        // Events are rare and a control point's callback server is often short-lived: a pooled
        // connection would keep it from shutting down (aiohttp waits for it) and could stall the
        // next NOTIFY on a half-closed socket.
        request.headers.add(name: "CONNECTION", value: "close")
        request.body = .bytes(ByteBuffer(bytes: message.body))
        do {
            let response = try await client.execute(request, timeout: .seconds(configuration.notifyTimeoutSeconds))
            _ = try await response.body.collect(upTo: 64 << 10)
            return .success(response.status.code)
        } catch {
            return .failure(error)
        }
    }

    /// Accepts connections until cancelled; each is served in a child task of this group.
    func serveHTTP() async {
        try? await httpServer.executeThenClose { connections in
            try await withThrowingDiscardingTaskGroup { group in
                for try await connection in connections {
                    group.addTask { await self.serve(connection) }
                }
            }
        }
    }

    /// Serves one connection's requests in turn (HTTP/1.1 keep-alive).
    func serve(_ connection: HTTPConnection) async {
        let remote = connection.channel.remoteAddress?.ipAddress ?? ""
        try? await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body = ByteBuffer()
            var tooLarge = false
            for try await part in inbound {
                switch part {
                case .head(let started):
                    (head, tooLarge) = (started, false)
                    body.clear()
                    if started.headers["expect"].contains(where: { $0.lowercased() == "100-continue" }),
                        try await !continueOrRefuse(started, to: outbound)
                    {
                        return
                    }
                case .body(var chunk):
                    tooLarge = tooLarge || body.readableBytes + chunk.readableBytes > configuration.maxBodyBytes
                    if !tooLarge { body.writeBuffer(&chunk) }
                case .end:
                    guard let request = head else { continue }
                    if tooLarge {
                        try await write(.plain(413, "Content Too Large"), for: request, close: true, to: outbound)
                        return
                    }
                    let (response, newSID) = await router.respond(
                        to: DeviceHTTPRequest(
                            method: request.method.rawValue, path: request.uri,
                            headers: request.headers.map { ($0.name, $0.value) }, body: Array(body.readableBytesView),
                            remoteAddress: remote))
                    try await write(response, for: request, close: !request.isKeepAlive, to: outbound)
                    if let newSID { await publisher.accepted(sid: newSID) }
                    if !request.isKeepAlive { return }
                }
            }
        }
    }

    /// `Expect: 100-continue` (RFC 9110 §10.1.1): 100 Continue when the announced body fits, and
    /// true; else 413 at once, without waiting for the body, and false (the connection closes).
    func continueOrRefuse(
        _ request: HTTPRequestHead, to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws -> Bool {
        let length = request.headers["content-length"].first.flatMap { Int($0) } ?? 0
        guard length <= configuration.maxBodyBytes else {
            try await write(.plain(413, "Content Too Large"), for: request, close: true, to: outbound)
            return false
        }
        try await outbound.write(.head(HTTPResponseHead(version: request.version, status: .continue)))
        return true
    }

    func write(
        _ response: DeviceHTTPResponse, for request: HTTPRequestHead, close: Bool,
        to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>
    ) async throws {
        var headers = HTTPHeaders(response.headers.map { ($0.name, $0.value) })
        headers.replaceOrAdd(name: "CONTENT-LENGTH", value: String(response.body.count))
        if close { headers.replaceOrAdd(name: "CONNECTION", value: "close") }
        let status = HTTPResponseStatus(statusCode: response.status, reasonPhrase: response.reason)
        try await outbound.write(.head(HTTPResponseHead(version: request.version, status: status, headers: headers)))
        if request.method != .HEAD, !response.body.isEmpty {
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: response.body))))
        }
        try await outbound.write(.end(nil))
    }
}
