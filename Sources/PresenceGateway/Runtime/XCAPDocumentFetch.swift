import AsyncHTTPClient
import Metrics
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// What one conditional GET of an XCAP document answered (RFC 4825 §7.3, §7.11).
enum XCAPAnswer: Sendable {
    /// 200: the document and its ETag.
    case document([UInt8], etag: String?)
    /// 304: unchanged since the ETag sent.
    case notModified
    /// 404: the user keeps no such document.
    case absent
    /// Any other status, or no answer in time: why, for the log.
    case failed(String)
}

extension HTTPClient {
    /// A client for an XCAP server: `timeoutSeconds` to connect and to read, no redirects.
    static func xcap(timeoutSeconds: Int) -> HTTPClient {
        let timeout = TimeAmount.seconds(Int64(timeoutSeconds))
        var configuration = HTTPClient.Configuration(timeout: .init(connect: timeout, read: timeout))
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    /// Fetches the document at `uri`, with `If-None-Match` when an `etag` is known, reading at
    /// most `maximumBytes` of it.
    func xcapDocument(
        _ uri: String, accept: String, etag: String?, timeoutSeconds: Int, maximumBytes: Int = 1 << 20
    ) async -> XCAPAnswer {
        var request = HTTPClientRequest(url: uri)
        request.headers.add(name: "Accept", value: accept)
        if let etag { request.headers.add(name: "If-None-Match", value: etag) }
        do {
            let response = try await execute(request, timeout: .seconds(Int64(timeoutSeconds)))
            switch response.status.code {
            case 200:
                let body = try await response.body.collect(upTo: maximumBytes)
                return .document(Array(buffer: body), etag: response.headers.first(name: "ETag"))
            case 304: return .notModified
            case 404: return .absent
            default: return .failed("\(response.status.code) \(response.status.reasonPhrase)")
            }
        } catch {
            return .failed("no document (\(error))")
        }
    }
}

/// Writes the rls-services documents of the lists the gateway keeps for OMA resource list
/// servers (RFC 4826, `oma: rls`): PUT, or DELETE when nothing is left in one (RFC 4825 §7.4,
/// §7.5). Its client is made at the first write and shut down by ``shutdown(within:)``.
final class XCAPDocumentWriter: Sendable {
    private let client = NIOLockedValueBox<HTTPClient?>(nil)
    /// The writes not yet answered.
    private let writing = NIOLockedValueBox(0)
    private let timeoutSeconds: Int

    init(timeoutSeconds: Int = 10) { self.timeoutSeconds = timeoutSeconds }

    /// The HTTP status of the answer; nil when none came in time.
    func write(_ uri: String, body: [UInt8]?, contentType: String) async -> Int? {
        writing.withLockedValue { $0 += 1 }
        defer { writing.withLockedValue { $0 -= 1 } }
        let client = client.withLockedValue { client in
            if let client { return client }
            let made = HTTPClient.xcap(timeoutSeconds: timeoutSeconds)
            client = made
            return made
        }
        var request = HTTPClientRequest(url: uri)
        if let body {
            request.method = .PUT
            request.headers.add(name: "Content-Type", value: contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        } else {
            request.method = .DELETE
        }
        do {
            let response = try await client.execute(request, timeout: .seconds(Int64(timeoutSeconds)))
            // The answer's body (an error document, RFC 4825 §11) is not needed.
            _ = try? await response.body.collect(upTo: 1 << 16)
            return Int(response.status.code)
        } catch {
            return nil
        }
    }

    /// Waits at most `within` for the writes under way (a stop deletes the documents of the lists
    /// it ends) to be answered, then closes the client, which fails those still waiting.
    func shutdown(within: Duration = .seconds(5)) async {
        let deadline = ContinuousClock.now + within
        while writing.withLockedValue({ $0 }) > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        let running = client.withLockedValue { client in
            defer { client = nil }
            return client
        }
        try? await running?.shutdown()
    }
}

/// The polling of an XCAP source, one piece of the gateway's ``BackgroundWork``: `round` now and
/// then every `seconds`, and beside it each document asked for with ``ask(_:)`` (a reload's new
/// entries, a change the XCAP server announced), until ``stop()``.
final class XCAPPolling: Sendable {
    private let asked: AsyncStream<[String]>
    private let asking: AsyncStream<[String]>.Continuation
    private let job = NIOLockedValueBox<BackgroundWork.Job?>(nil)

    init() {
        (asked, asking) = AsyncStream.makeStream(of: [String].self)
    }

    /// Starts the polling in `work`; `check` fetches one document asked for.
    func start(
        in work: BackgroundWork, everySeconds seconds: Int, round: @escaping @Sendable () async -> Void,
        check: @escaping @Sendable (String) async -> Void
    ) {
        let pause = UInt64(seconds) * 1_000_000_000
        let asked = self.asked
        let started = work.start {
            await withDiscardingTaskGroup { group in
                group.addTask {
                    while !Task.isCancelled {
                        await round()
                        try? await Task.sleep(nanoseconds: pause)
                    }
                }
                for await keys in asked {
                    for key in keys where !Task.isCancelled { await check(key) }
                }
                group.cancelAll()
            }
        }
        job.withLockedValue { $0 = started }
    }

    /// Fetches the documents of `keys` now, in order, beside the polling.
    func ask(_ keys: [String]) {
        asking.yield(keys)
    }

    /// Cancels the polling and waits for a round or a check under way to end.
    func stop() async {
        asking.finish()
        await job.withLockedValue { $0 }?.stop()
    }
}

extension XCAPPolicySource.Outcome {
    /// `gateway_xcap_fetches_total{result}`, one counter per outcome.
    static func counters(_ factory: any MetricsFactory) -> [Self: Counter] {
        Dictionary(
            uniqueKeysWithValues: allCases.map {
                (
                    $0,
                    Counter(
                        label: "gateway_xcap_fetches_total", dimensions: [("result", $0.rawValue)], factory: factory)
                )
            })
    }
}

/// Keeps in `documents` the entries of `keys` only, a `fresh` one for each key not there yet (a
/// reload's new list of what an XCAP source watches); the keys added, in order.
func keepDocuments<Document: Sendable>(
    of keys: [String], in documents: NIOLockedValueBox<[String: Document]>, fresh: () -> Document
) -> [String] {
    documents.withLockedValue { documents in
        documents = documents.filter { keys.contains($0.key) }
        let added = keys.filter { documents[$0] == nil }
        for key in added { documents[key] = fresh() }
        return added
    }
}
