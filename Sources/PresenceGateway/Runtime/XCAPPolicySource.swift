import AsyncHTTPClient
import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers

/// The pres-rules documents of the presentities whose entry says `pres-rules: xcap`, kept by an
/// XCAP server (RFC 4825; GatewayConfiguration+XCAP.swift): each is fetched at start and then
/// every `poll` seconds with `If-None-Match` and its last ETag (RFC 4825 §7.11), so an unchanged
/// document costs a 304. A changed document is handed to `apply` (the gateway resolves that
/// presentity's watchers again).
///
/// What each answer does (docs/flows.md, "Policy from XCAP"):
/// - 200: the document is read (RFC 5025); one that does not parse is logged with its line and
///   column and the rules in force stay;
/// - 304: nothing changed;
/// - 404: the presentity keeps no document: no rules, the configured defaults decide;
/// - 401 or 403, the XCAP root (an Aggregation Proxy, PacketCable Presence §6.2.18) refused the
///   gateway's credentials (``XCAPClient``): counted as `unauthorized`, the root shown failing in
///   `/health`, and the rules in force stay;
/// - anything else, or no answer: logged, and the rules in force stay.
///
/// Until a presentity's document has been fetched once, every watcher of it waits (``awaiting``);
/// `/health` counts such presentities by root (``awaitingCount``). A failed fetch is tried again
/// at the next poll, every `poll` seconds, for as long as it fails.
final class XCAPPolicySource: Sendable {
    /// What is known of one presentity's document.
    private struct Document: Sendable {
        /// The rules in force: ``parsed`` with its `external-list` conditions resolved.
        var rules = XCAPPolicySource.awaiting
        /// The document as fetched.
        var parsed = XCAPPolicySource.awaiting
        var etag: String?
    }

    /// How one check ended: the `result` of `gateway_xcap_fetches_total`.
    enum Outcome: String, CaseIterable, Sendable {
        case changed, unchanged, absent, invalid, failed, unauthorized
    }

    /// The rules of a presentity whose document has not been fetched yet: every watcher is
    /// `confirm` (RFC 5025 §3.2.1) and waits until the document decides. Never the configured
    /// defaults, which may allow a watcher the document blocks.
    static let awaiting = PresRules(rules: [
        PresRules.Rule(id: "awaiting-xcap-document", identities: nil, subHandling: .confirm)
    ])

    /// A pres-rules document larger than this is refused (RFC 4825 §7 puts no bound on it).
    static let maximumBytes = 1 << 20

    let settings: GatewayConfiguration.XCAP
    private let client: XCAPClient
    private let documents: NIOLockedValueBox<[String: Document]>
    private let polling = XCAPPolling()
    private let apply: @Sendable (String, PresRules) async -> Void
    private let logger: Logger
    private let fetches: [Outcome: Counter]
    private let externalLists: XCAPExternalLists

    init(
        settings: GatewayConfiguration.XCAP, presentities: Set<String>, client: XCAPClient,
        factory: any MetricsFactory, logger: Logger, apply: @escaping @Sendable (String, PresRules) async -> Void
    ) {
        self.settings = settings
        self.client = client
        documents = NIOLockedValueBox(Dictionary(uniqueKeysWithValues: presentities.map { ($0, Document()) }))
        self.apply = apply
        self.logger = logger
        fetches = XCAPPolicySource.Outcome.counters(factory)
        externalLists = XCAPExternalLists(root: settings.root, factory: factory)
    }

    /// How many presentities still wait for their first document: their watchers are pending.
    var awaitingCount: Int {
        documents.withLockedValue { documents in
            documents.values.filter { $0.rules == Self.awaiting }.count
        }
    }

    /// The rules in force for each presentity watched.
    var rules: [String: PresRules] { documents.withLockedValue { $0.mapValues(\.rules) } }

    /// Watches `presentities` from now on (a reload): a new one waits for its document, which is
    /// fetched at once; one no longer named is forgotten.
    func watch(_ presentities: Set<String>) {
        let added = keepDocuments(of: presentities.sorted(), in: documents) { Document() }
        guard !added.isEmpty else { return }
        polling.ask(added)
    }

    /// Fetches `presentity`'s document now, beside the polling: its XCAP server announced a
    /// change (RFC 5875).
    func checkSoon(_ presentity: String) {
        polling.ask([presentity])
    }

    /// Checks every document now, then every `poll` seconds until ``shutdown()``: one piece of
    /// `work`.
    func start(in work: BackgroundWork) {
        polling.start(in: work, everySeconds: settings.pollSeconds) { [self] in
            for presentity in documents.withLockedValue({ $0.keys.sorted() }) where !Task.isCancelled {
                await check(presentity)
            }
        } check: { [self] presentity in
            await check(presentity)
        }
    }

    /// Stops the polling; the client is the server's to shut down.
    func shutdown() async {
        await polling.stop()
    }

    /// Fetches `presentity`'s document once and applies what changed.
    func check(_ presentity: String) async {
        fetches[await fetch(presentity)]?.increment()
    }

    private func fetch(_ presentity: String) async -> Outcome {
        guard let known = documents.withLockedValue({ $0[presentity] }) else { return .unchanged }
        let uri = settings.documentURI(of: presentity)
        let answer = await client.document(
            uri, accept: "application/auth-policy+xml", etag: known.etag, maximumBytes: Self.maximumBytes)
        let parsed: PresRules
        let etag: String?
        switch answer {
        case .notModified:
            // The lists an external-list names may have changed though the rules did not.
            guard known.parsed.dependsOnLists else { return .unchanged }
            (parsed, etag) = (known.parsed, known.etag)
        case .absent:
            guard known.rules != PresRules() || known.etag != nil else { return .absent }
            (parsed, etag) = (PresRules(), nil)
            logger.notice("XCAP \(uri): no document; the defaults decide for \(presentity)")
        case .document(let bytes, let tag):
            do {
                (parsed, etag) = (try PresRules(bytes: bytes), tag)
            } catch {
                // Kept with its ETag: the same broken document is not fetched and logged again.
                documents.withLockedValue { $0[presentity]?.etag = tag }
                logger.error(
                    "XCAP \(uri):\(error.line):\(error.column): \(error.message); the pres-rules in force stay")
                return .invalid
            }
            logger.notice("XCAP \(uri): pres-rules of \(presentity) fetched (ETag \(etag ?? "none"))")
        case .failed(let reason):
            logger.warning("XCAP \(uri): \(reason); the pres-rules in force stay")
            return .failed
        case .refused:
            // Logged by the client, naming the root (once while it keeps refusing).
            return .unauthorized
        }
        let rules = await externalLists.resolve(parsed, client: client, logger: logger)
        return await keep(rules, parsed: parsed, etag: etag, of: presentity, answer: answer)
    }

    /// Keeps `presentity`'s rules and hands them to `apply` when they changed.
    private func keep(
        _ rules: PresRules, parsed: PresRules, etag: String?, of presentity: String, answer: XCAPAnswer
    ) async -> Outcome {
        let changed = documents.withLockedValue { documents -> Bool in
            guard var document = documents[presentity] else { return false }
            let changed = document.rules != rules
            document.rules = rules
            document.parsed = parsed
            document.etag = etag
            documents[presentity] = document
            return changed
        }
        guard changed else { return .unchanged }
        await apply(presentity, rules)
        if case .absent = answer { return .absent }
        return .changed
    }
}
