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
    /// 401 or 403: the XCAP root (an Aggregation Proxy) refused the gateway (XCAPClient).
    case refused(String)
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
}

extension XCAPClient {
    /// Fetches the document at `uri`, with `If-None-Match` when an `etag` is known, reading at
    /// most `maximumBytes` of it.
    func document(_ uri: String, accept: String, etag: String?, maximumBytes: Int = 1 << 20) async -> XCAPAnswer {
        var headers = [("Accept", accept)]
        if let etag { headers.append(("If-None-Match", etag)) }
        switch await execute(.GET, uri, headers: headers, maximumBytes: maximumBytes) {
        case .failure(let failure):
            return .failed("no document (\(failure))")
        case .success(let answer):
            switch answer.status {
            case 200: return .document(answer.body, etag: answer.headers.first(name: "ETag"))
            case 304: return .notModified
            case 404: return .absent
            case 401, 403: return .refused("\(answer.status) \(answer.reason)")
            default: return .failed("\(answer.status) \(answer.reason)")
            }
        }
    }
}

/// Writes the rls-services documents of the lists the gateway keeps for OMA resource list
/// servers (RFC 4826, `oma: rls`): PUT, or DELETE when nothing is left in one (RFC 4825 §7.4,
/// §7.5), through the gateway's ``XCAPClient``.
final class XCAPDocumentWriter: Sendable {
    /// The writes not yet answered.
    private let writing = NIOLockedValueBox(0)
    private let client: XCAPClient

    init(client: XCAPClient) { self.client = client }

    /// The HTTP status of the answer; nil when none came in time.
    func write(_ uri: String, body: [UInt8]?, contentType: String) async -> Int? {
        writing.withLockedValue { $0 += 1 }
        defer { writing.withLockedValue { $0 -= 1 } }
        let headers = body == nil ? [] : [("Content-Type", contentType)]
        // The answer's body (an error document, RFC 4825 §11) is not needed.
        let answer = await client.execute(
            body == nil ? .DELETE : .PUT, uri, headers: headers, body: body, maximumBytes: 1 << 16)
        return try? answer.get().status
    }

    /// Waits at most `within` for the writes under way (a stop deletes the documents of the lists
    /// it ends) to be answered; the caller then shuts the client down, which fails those still
    /// waiting.
    func finish(within: Duration = .seconds(5)) async {
        let deadline = ContinuousClock.now + within
        while writing.withLockedValue({ $0 }) > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
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
