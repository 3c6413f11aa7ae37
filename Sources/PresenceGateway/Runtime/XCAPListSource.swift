import AsyncHTTPClient
import Logging
import Metrics
import NIOConcurrencyHelpers

/// The resource lists kept on an XCAP server: the RFC 4826 `rls-services` documents of the
/// identities `xcap: rls-services` names (GatewayConfiguration+XCAP.swift), each fetched at start
/// and then every `poll` seconds with `If-None-Match` and its last ETag (RFC 4825 §7.11). When
/// the lists change, or the last first answer came, `apply` gets every list and whether a
/// document is still awaited (docs/flows.md, "Resource lists").
///
/// What each answer does:
/// - 200: the document is read as an rls-services file is; one that does not parse, or defines a
///   list the gateway cannot serve, is logged with its line and column and its lists in force stay;
/// - 304: nothing changed;
/// - 404: the identity keeps no document: it defines no list;
/// - 401 or 403: the XCAP root refused the gateway (``XCAPClient`` logs and counts it); its
///   lists in force stay;
/// - anything else, or no answer: logged, and its lists in force stay.
///
/// Until every document has been answered once (whatever the answer), ``awaiting`` is true.
final class XCAPListSource: Sendable {
    private struct Document: Sendable {
        var lists: [String: [String]] = [:]
        var etag: String?
        var answered = false
    }

    let settings: GatewayConfiguration.XCAP
    /// The identities watched, in order: ``GatewayConfiguration/XCAP/rlsServices`` at start, as a
    /// reload changes it (``watch(_:)``).
    private let identities: NIOLockedValueBox<[String]>
    private let enterprise: GatewayConfiguration.Domains
    private let limit: Int
    private let client: XCAPClient
    /// By identity.
    private let documents: NIOLockedValueBox<[String: Document]>
    private let polling = XCAPPolling()
    private let apply: @Sendable (_ lists: [String: [String]], _ awaiting: Bool) async -> Void
    private let logger: Logger
    private let fetches: [XCAPPolicySource.Outcome: Counter]

    init(
        settings: GatewayConfiguration.XCAP, enterprise: GatewayConfiguration.Domains, limit: Int,
        client: XCAPClient, factory: any MetricsFactory, logger: Logger,
        apply: @escaping @Sendable (_ lists: [String: [String]], _ awaiting: Bool) async -> Void
    ) {
        self.settings = settings
        self.enterprise = enterprise
        self.limit = limit
        self.client = client
        identities = NIOLockedValueBox(settings.rlsServices)
        documents = NIOLockedValueBox(
            Dictionary(uniqueKeysWithValues: settings.rlsServices.map { ($0, Document()) }))
        self.apply = apply
        self.logger = logger
        fetches = XCAPPolicySource.Outcome.counters(factory)
    }

    /// Every document's lists; a list URI an earlier identity defines wins.
    var lists: [String: [String]] {
        let order = identities.withLockedValue { $0 }
        return documents.withLockedValue { documents in
            var lists: [String: [String]] = [:]
            for xui in order {
                lists.merge(documents[xui]?.lists ?? [:]) { first, _ in first }
            }
            return lists
        }
    }

    /// Watches `xuis` from now on (a reload): a new identity's document is awaited and fetched at
    /// once; the lists of one no longer named are dropped.
    func watch(_ xuis: [String]) {
        identities.withLockedValue { $0 = xuis }
        let added = keepDocuments(of: xuis, in: documents) { Document() }
        guard !added.isEmpty else { return }
        polling.ask(added)
    }

    /// Whether a document has not been answered yet.
    var awaiting: Bool { documents.withLockedValue { $0.values.contains { !$0.answered } } }

    /// Checks every document now, then every `poll` seconds until ``shutdown()``: one piece of
    /// `work`.
    func start(in work: BackgroundWork) {
        polling.start(in: work, everySeconds: settings.pollSeconds) { [self] in
            for xui in identities.withLockedValue({ $0 }) where !Task.isCancelled { await check(xui) }
        } check: { [self] xui in
            await check(xui)
        }
    }

    /// Stops the polling; the client is the server's to shut down.
    func shutdown() async {
        await polling.stop()
    }

    /// Fetches `xui`'s document once and applies what changed.
    func check(_ xui: String) async {
        let before = (lists, awaiting)
        fetches[await fetch(xui)]?.increment()
        let after = (lists, awaiting)
        guard after != before else { return }
        for (list, _) in after.0 where before.0[list] == nil { logger.info("resource list \(list) served (XCAP)") }
        await apply(after.0, after.1)
    }

    private func fetch(_ xui: String) async -> XCAPPolicySource.Outcome {
        guard let known = documents.withLockedValue({ $0[xui] }) else { return .unchanged }
        defer { documents.withLockedValue { $0[xui]?.answered = true } }
        let uri = settings.rlsServicesURI(of: xui)
        switch await client.document(uri, accept: "application/rls-services+xml", etag: known.etag) {
        case .notModified:
            return .unchanged
        case .absent:
            guard !known.lists.isEmpty || known.etag != nil else { return .absent }
            documents.withLockedValue { $0[xui] = Document(answered: true) }
            logger.notice("XCAP \(uri): no document; \(xui) defines no resource list")
            return .absent
        case .document(let bytes, let etag):
            let lists: [String: [String]]
            do {
                lists = try GatewayConfiguration.resourceLists(rlsServices: bytes, enterprise: enterprise, limit: limit)
            } catch {
                // Kept with its ETag: the same broken document is not fetched and logged again.
                documents.withLockedValue { $0[xui]?.etag = etag }
                logger.error(
                    "XCAP \(uri):\(error.line):\(error.column): \(error.message); the lists in force stay")
                return .invalid
            }
            documents.withLockedValue { $0[xui] = Document(lists: lists, etag: etag, answered: true) }
            logger.notice("XCAP \(uri): \(lists.count) resource lists of \(xui) fetched (ETag \(etag ?? "none"))")
            return lists == known.lists ? .unchanged : .changed
        case .failed(let reason):
            logger.warning("XCAP \(uri): \(reason); the lists in force stay")
            return .failed
        case .refused:
            return .unauthorized
        }
    }
}
