public import NIOCore
public import SIPMessages

/// The Event State Compositor of one event package (RFC 3903 §6): every resource's publications,
/// keyed by entity-tag. A state machine that returns actions: the driver sends the responses,
/// arms and cancels the expiry timers, and composes and notifies when a resource's state changed.
///
/// RFC 3903 §3, Table 1 — what a PUBLISH does:
///
/// ```
/// +-----------+-------+---------------+---------------+
/// | Operation | Body? | SIP-If-Match? | Expires Value |
/// | Initial   | yes   | no            | > 0           |
/// | Refresh   | no    | yes           | > 0           |
/// | Modify    | yes   | yes           | > 0           |
/// | Remove    | no    | yes           | 0             |
/// ```
///
/// The entity-tag travels in two headers (RFC 3903 §11.3):
///
/// ```
/// SIP-ETag     = "SIP-ETag" HCOLON entity-tag
/// SIP-If-Match = "SIP-If-Match" HCOLON entity-tag
/// entity-tag   = token
/// ```
///
/// Nothing here knows a presence document: the body is kept as bytes with its media type, and
/// the composition (RFC 3903 §6 last paragraph: "the ESC ... composes the event state") is the
/// owner's, fed by ``Action/changed(resource:publications:)``.
public struct EventStateCompositor: Sendable {
    /// Bounds on what the compositor keeps; beyond them an initial PUBLISH is refused with
    /// 503 Service Unavailable, reason "Publication Limit Reached" (RFC 3261 §21.5.4: the server
    /// is temporarily unable to process the request; no Retry-After, as the limit clears only
    /// when publications expire or are removed). Refreshes, modifications and removals of
    /// existing publications are never refused for a limit.
    public struct Limits: Sendable, Hashable {
        /// Publications one resource may have at once. Default 16 (one per device of a user is
        /// the usual case; RFC 3903 §1 "a presentity may have several PUAs").
        public var maxPublicationsPerResource: Int
        /// Publications over all resources. Default 100,000.
        public var maxPublications: Int
        /// Largest body accepted, in bytes; larger ones get 413 Request Entity Too Large
        /// (RFC 3261 §21.4.11). Default 64 KiB.
        public var maxBodyBytes: Int

        public init(maxPublicationsPerResource: Int = 16, maxPublications: Int = 100_000, maxBodyBytes: Int = 65_536) {
            self.maxPublicationsPerResource = maxPublicationsPerResource
            self.maxPublications = maxPublications
            self.maxBodyBytes = maxBodyBytes
        }

        public static let `default` = Limits()
    }

    /// One piece of published event state (RFC 3903 §2: "event state ... identified by an
    /// entity-tag").
    public struct Publication: Sendable, Hashable {
        /// The current entity-tag (RFC 3903 §11.3.1); it changes on every successful PUBLISH.
        public var entityTag: String
        /// The resource (the driver's key for the Request-URI, e.g. the address of record).
        public var resource: String
        /// The media type of ``body`` (lower case, without parameters).
        public var contentType: String
        public var body: [UInt8]
        public var expiresAt: NIODeadline
        /// Order of creation, for "oldest first".
        public var sequence: UInt64
    }

    /// What the driver must do, in order.
    public enum Action: Sendable, Hashable {
        /// Send this final response to the PUBLISH.
        case respond(SIPResponse)
        /// Arm a timer: call ``expire(entityTag:now:)`` at this deadline.
        case scheduleExpiry(entityTag: String, at: NIODeadline)
        /// The timer of this entity-tag is no longer needed (the tag was replaced or removed).
        /// Forgetting it is harmless: ``expire(entityTag:now:)`` ignores unknown tags.
        case cancelExpiry(entityTag: String)
        /// The resource's composed state changed: its current publications, oldest first
        /// (empty when the last one went). Compose them and notify the watchers (RFC 3903 §6
        /// step 5 and RFC 3856 §6.6).
        case changed(resource: String, publications: [Publication])
    }

    public let package: SIPEventPackage
    /// Media types the package takes in a PUBLISH (RFC 3903 §6 step 5: others get 415 with
    /// Accept). Defaults to the package's ``SIPEventPackage/bodyTypes``.
    public let acceptedBodyTypes: [String]
    public let limits: Limits
    /// Every publication, by entity-tag.
    public internal(set) var publications: [String: Publication] = [:]
    /// Entity-tags of each resource, oldest first.
    var byResource: [String: [String]] = [:]
    var nextSequence: UInt64 = 0
    private var tagCounter: UInt64 = 0

    public init(package: SIPEventPackage = .presence, acceptedBodyTypes: [String]? = nil, limits: Limits = .default) {
        self.package = package
        self.acceptedBodyTypes = (acceptedBodyTypes ?? package.bodyTypes).map { $0.lowercased() }
        self.limits = limits
    }

    /// The current publications of a resource, oldest first.
    public func publications(of resource: String) -> [Publication] {
        (byResource[resource] ?? []).compactMap { publications[$0] }
    }

    /// Handles one PUBLISH for `resource` (the driver resolved the Request-URI and authorized
    /// the publisher: RFC 3903 §6 steps 1 and 2). The steps of RFC 3903 §6 in order:
    ///
    /// - Event missing or not this package: 489 Bad Event with Allow-Events (step 2: "If the
    ///   Event header field is missing or contains an event package which the ESC does not
    ///   support, the ESC MUST respond ... with a 489 (Bad Event) response").
    /// - SIP-If-Match naming no current publication of this resource: 412 Conditional Request
    ///   Failed; an unreadable one: 400 (step 3). No SIP-If-Match and no body: 400 (step 3: an
    ///   initial publication needs state).
    /// - Expires below the package minimum and not 0: 423 Interval Too Brief with Min-Expires;
    ///   above the maximum: shortened; absent: the package default (step 4). Expires 0 with
    ///   SIP-If-Match removes the publication.
    /// - A body of a type the package does not take: 415 Unsupported Media Type with Accept
    ///   (step 5).
    /// - Success: the state is stored under a new entity-tag (step 5: the ESC assigns a new
    ///   entity-tag on every successful PUBLISH, so a refresh or modify retires the old one), and
    ///   200 OK carries it in SIP-ETag with the granted Expires (step 6).
    ///
    /// `entropy` is injected randomness (a fresh random value per call, from the driver): the
    /// entity-tag is built from it and a counter, so tags are unique here and hard to guess
    /// (RFC 3903 §12: entity-tags are not to be predictable by other parties).
    public mutating func receive(_ request: SIPRequest, resource: String, now: NIODeadline, entropy: UInt64) -> [Action]
    {
        func reject(_ code: Int, _ reason: String? = nil, _ headers: SIPHeaders = []) -> [Action] {
            [
                .respond(
                    SIPResponse(
                        replyingTo: request, statusCode: code, reasonPhrase: reason, toTag: responseTag(entropy),
                        headers: headers))
            ]
        }
        let h = request.headers
        // Step 2: the event package.
        let event: SIPEvent?
        do { event = try h.event } catch { return reject(400, "Bad Event header") }
        guard let event, event.package.lowercased() == package.name else {
            var allow = SIPHeaders()
            allow.append(.allowEvents, package.name)
            return reject(489, "Bad Event", allow)
        }
        // Step 3: the entity-tag.
        let ifMatch: String?
        do { ifMatch = try h.sipIfMatch } catch { return reject(400, "Bad SIP-If-Match header") }
        if let ifMatch {
            guard let existing = publications[ifMatch], existing.resource == resource else {
                return reject(412, "Conditional Request Failed")
            }
        } else if request.body.isEmpty {
            return reject(400, "Initial PUBLISH Without Body")
        }
        // Step 4: the expiration interval.
        let requested: UInt32?
        do { requested = try h.expires } catch { return reject(400, "Bad Expires header") }
        var expires = requested ?? package.defaultExpires
        if expires != 0 && expires < package.minimumExpires {
            var minimum = SIPHeaders()
            minimum.append(.minExpires, String(package.minimumExpires))
            return reject(423, "Interval Too Brief", minimum)
        }
        expires = min(expires, package.maximumExpires)
        if expires == 0 {
            guard let ifMatch else {
                // Nothing to remove and nothing to keep: an initial publication that expires at once.
                return [.respond(ok(request, entityTag: nil, expires: 0, entropy: entropy))]
            }
            return remove(ifMatch, request: request, entropy: entropy)
        }
        // Step 5: the body.
        var contentType: String?
        if !request.body.isEmpty {
            guard request.body.count <= limits.maxBodyBytes else { return reject(413, "Request Entity Too Large") }
            let type: SIPContentType?
            do { type = try h.contentType } catch { return reject(400, "Bad Content-Type header") }
            guard let type else { return reject(400, "Body Without Content-Type") }
            let media = type.mediaType.lowercased()
            guard acceptedBodyTypes.contains(media) else {
                var accept = SIPHeaders()
                accept.append(.accept, acceptedBodyTypes.joined(separator: ", "))
                return reject(415, "Unsupported Media Type", accept)
            }
            contentType = media
        }
        let expiresAt = now + .seconds(Int64(expires))
        let tag = makeEntityTag(entropy)
        var actions: [Action] = []
        if let ifMatch, var publication = publications.removeValue(forKey: ifMatch) {
            // Refresh or modify: the same publication under a new tag.
            let modified = contentType != nil
            publication.entityTag = tag
            publication.expiresAt = expiresAt
            if let contentType {
                publication.contentType = contentType
                publication.body = request.body
            }
            publications[tag] = publication
            byResource[resource] = (byResource[resource] ?? []).map { $0 == ifMatch ? tag : $0 }
            actions.append(.respond(ok(request, entityTag: tag, expires: expires, entropy: entropy)))
            actions.append(.cancelExpiry(entityTag: ifMatch))
            actions.append(.scheduleExpiry(entityTag: tag, at: expiresAt))
            if modified { actions.append(.changed(resource: resource, publications: publications(of: resource))) }
            return actions
        }
        guard let contentType else { return reject(400, "Initial PUBLISH Without Body") }
        // Initial publication: the limits apply.
        if (byResource[resource]?.count ?? 0) >= limits.maxPublicationsPerResource
            || publications.count >= limits.maxPublications
        {
            return reject(503, "Publication Limit Reached")
        }
        nextSequence += 1
        publications[tag] = Publication(
            entityTag: tag, resource: resource, contentType: contentType,
            body: request.body, expiresAt: expiresAt, sequence: nextSequence)
        byResource[resource, default: []].append(tag)
        actions.append(.respond(ok(request, entityTag: tag, expires: expires, entropy: entropy)))
        actions.append(.scheduleExpiry(entityTag: tag, at: expiresAt))
        actions.append(.changed(resource: resource, publications: publications(of: resource)))
        return actions
    }

    /// The expiry timer of `entityTag` fired (RFC 3903 §6: "event state ... that has not been
    /// refreshed ... expires"). Ignored for a tag that is gone (replaced by a refresh or removed)
    /// or whose publication was refreshed past `now` (a stale timer).
    public mutating func expire(entityTag: String, now: NIODeadline) -> [Action] {
        guard let publication = publications[entityTag], now >= publication.expiresAt else { return [] }
        drop(entityTag)
        return [.changed(resource: publication.resource, publications: publications(of: publication.resource))]
    }

    /// Removes every publication of a resource (the resource was deleted or its user
    /// deprovisioned), with their timers.
    public mutating func removeAll(of resource: String) -> [Action] {
        let tags = byResource[resource] ?? []
        guard !tags.isEmpty else { return [] }
        for tag in tags { publications[tag] = nil }
        byResource[resource] = nil
        return tags.map { .cancelExpiry(entityTag: $0) } + [.changed(resource: resource, publications: [])]
    }

    private mutating func remove(_ tag: String, request: SIPRequest, entropy: UInt64) -> [Action] {
        guard let publication = publications[tag] else { return [] }
        drop(tag)
        // Steps 5-6 give every 200 a SIP-ETag; a removed publication has none to refresh, so the
        // tag sent is a new one that names nothing (a later SIP-If-Match with it gets 412).
        return [
            .respond(ok(request, entityTag: makeEntityTag(entropy), expires: 0, entropy: entropy)),
            .cancelExpiry(entityTag: tag),
            .changed(resource: publication.resource, publications: publications(of: publication.resource)),
        ]
    }

    private mutating func drop(_ tag: String) {
        guard let publication = publications.removeValue(forKey: tag) else { return }
        let remaining = (byResource[publication.resource] ?? []).filter { $0 != tag }
        byResource[publication.resource] = remaining.isEmpty ? nil : remaining
    }

    private func ok(_ request: SIPRequest, entityTag: String?, expires: UInt32, entropy: UInt64) -> SIPResponse {
        var headers = SIPHeaders()
        if let entityTag { headers.append(.sipETag, entityTag) }
        headers.append(.expires, String(expires))
        return SIPResponse(
            replyingTo: request, statusCode: 200, reasonPhrase: "OK", toTag: responseTag(entropy),
            headers: headers)
    }

    /// `entity-tag = token` (RFC 3903 §11.3.1): base-36 digits and a dot, all token characters.
    private mutating func makeEntityTag(_ entropy: UInt64) -> String {
        tagCounter += 1
        return String(entropy, radix: 36) + "." + String(tagCounter, radix: 36)
    }

    /// A To tag for the response (RFC 3261 §8.2.6.2), from the same randomness.
    private func responseTag(_ entropy: UInt64) -> String {
        String(entropy &* 0x9E37_79B9_7F4A_7C15, radix: 36)
    }
}
