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

/// The polling of an XCAP source: `round` now, then every `seconds` until ``stop()``.
final class XCAPPolling: Sendable {
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)

    func start(everySeconds seconds: Int, _ round: @escaping @Sendable () async -> Void) {
        let pause = UInt64(seconds) * 1_000_000_000
        task.withLockedValue { task in
            task = Task {
                while !Task.isCancelled {
                    await round()
                    try? await Task.sleep(nanoseconds: pause)
                }
            }
        }
    }

    /// Cancels the polling and waits for a round under way to end.
    func stop() async {
        let running = task.withLockedValue { task in
            defer { task = nil }
            return task
        }
        running?.cancel()
        await running?.value
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
