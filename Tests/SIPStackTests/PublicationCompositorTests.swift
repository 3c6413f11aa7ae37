import NIOCore
import SIPMessages
import SIPStack
import Testing

/// A PUBLISH from an OMA PUA (RFC 3903 §4 shape; RFC 3856 §6 presence).
func publishRequest(ifMatch: String? = nil, expires: String? = "3600", event: String? = "presence",
                    contentType: String? = "application/pidf+xml", body: String = "<presence entity='a'/>",
                    cseq: Int = 1) -> SIPRequest {
    var lines = [
        "PUBLISH sip:bob@contoso.com SIP/2.0",
        "Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bKpub\(cseq)",
        "Max-Forwards: 70",
        "From: <sip:bob@contoso.com>;tag=pua1",
        "To: <sip:bob@contoso.com>",
        "Call-ID: pub-call-1@192.0.2.10",
        "CSeq: \(cseq) PUBLISH",
    ]
    if let event { lines.append("Event: \(event)") }
    if let ifMatch { lines.append("SIP-If-Match: \(ifMatch)") }
    if let expires { lines.append("Expires: \(expires)") }
    if !body.isEmpty, let contentType { lines.append("Content-Type: \(contentType)") }
    lines.append("Content-Length: \(body.utf8.count)")
    return request(lines.joined(separator: "\n") + "\n\n" + body)
}

@Suite struct PublicationCompositorTests {
    let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)
    let bob = "sip:bob@contoso.com"

    private func responses(_ actions: [EventStateCompositor.Action]) -> [SIPResponse] {
        actions.compactMap { if case .respond(let r) = $0 { r } else { nil } }
    }

    private func changes(_ actions: [EventStateCompositor.Action]) -> [[EventStateCompositor.Publication]] {
        actions.compactMap { if case .changed(_, let p) = $0 { p } else { nil } }
    }

    private func expiries(_ actions: [EventStateCompositor.Action]) -> [NIODeadline] {
        actions.compactMap { if case .scheduleExpiry(_, let at) = $0 { at } else { nil } }
    }

    /// Publishes initial state and returns its entity-tag.
    private func publishInitial(_ esc: inout EventStateCompositor, body: String = "<presence entity='a'/>",
                                entropy: UInt64 = 7) throws -> String {
        let actions = esc.receive(publishRequest(body: body), resource: bob, now: t0, entropy: entropy)
        let ok = try #require(responses(actions).first)
        #expect(ok.statusCode == 200)
        return try #require(try ok.headers.sipETag)
    }

    @Test func initialPublishIsAnsweredWithAnEntityTagAndTheGrantedExpires() throws {
        var esc = EventStateCompositor()
        let actions = esc.receive(publishRequest(expires: "1800"), resource: bob, now: t0, entropy: 42)
        let ok = try #require(responses(actions).first)
        #expect(ok.statusCode == 200)
        let tag = try #require(try ok.headers.sipETag)
        #expect(try ok.headers.expires == 1800)
        #expect(try ok.headers.cseq?.method == .publish)
        #expect(expiries(actions) == [t0 + .seconds(1800)])
        let changed = try #require(changes(actions).first)
        #expect(changed.map(\.entityTag) == [tag])
        #expect(changed.first?.body == Array("<presence entity='a'/>".utf8))
        #expect(changed.first?.contentType == "application/pidf+xml")
    }

    @Test func missingExpiresGetsThePackageDefaultAndTooLongIsShortened() throws {
        var esc = EventStateCompositor()
        let noExpires = responses(esc.receive(publishRequest(expires: nil), resource: bob, now: t0, entropy: 1))
        #expect(try noExpires.first?.headers.expires == SIPEventPackage.presence.defaultExpires)
        let long = responses(esc.receive(publishRequest(expires: "999999"), resource: bob, now: t0, entropy: 2))
        #expect(try long.first?.headers.expires == SIPEventPackage.presence.maximumExpires)
    }

    @Test func refreshWithoutBodyGetsANewEntityTagAndExpiryButKeepsTheState() throws {
        var esc = EventStateCompositor()
        let first = try publishInitial(&esc)
        let later = t0 + .seconds(3000)
        let actions = esc.receive(publishRequest(ifMatch: first, body: "", cseq: 2), resource: bob, now: later, entropy: 9)
        let ok = try #require(responses(actions).first)
        #expect(ok.statusCode == 200)
        let second = try #require(try ok.headers.sipETag)
        #expect(second != first)
        #expect(actions.contains(.cancelExpiry(entityTag: first)))
        #expect(expiries(actions) == [later + .seconds(3600)])
        // The state did not change: no composition needed.
        #expect(changes(actions).isEmpty)
        #expect(esc.publications(of: bob).map(\.body) == [Array("<presence entity='a'/>".utf8)])
        // The old tag is gone (RFC 3903 §6 step 5).
        let stale = responses(esc.receive(publishRequest(ifMatch: first, body: "", cseq: 3), resource: bob, now: later,
                                          entropy: 10))
        #expect(stale.first?.statusCode == 412)
    }

    @Test func modifyReplacesTheStateOfThatPublicationOnly() throws {
        var esc = EventStateCompositor()
        let phone = try publishInitial(&esc, body: "<presence entity='phone'/>", entropy: 1)
        let desk = try publishInitial(&esc, body: "<presence entity='desk'/>", entropy: 2)
        let actions = esc.receive(publishRequest(ifMatch: phone, body: "<presence entity='phone2'/>", cseq: 2),
                                  resource: bob, now: t0, entropy: 3)
        let ok = try #require(responses(actions).first)
        let newPhone = try #require(try ok.headers.sipETag)
        #expect(newPhone != phone && newPhone != desk)
        let changed = try #require(changes(actions).first)
        // Oldest first: the phone published first keeps its place.
        #expect(changed.map(\.body) == [Array("<presence entity='phone2'/>".utf8), Array("<presence entity='desk'/>".utf8)])
        #expect(changed.map(\.entityTag) == [newPhone, desk])
    }

    @Test func severalPublicationsOfOnePresentityAreKeptApartByEntityTag() throws {
        var esc = EventStateCompositor()
        let a = try publishInitial(&esc, body: "<a/>", entropy: 5)
        let b = try publishInitial(&esc, body: "<b/>", entropy: 5)
        #expect(a != b)
        #expect(esc.publications(of: bob).map(\.entityTag) == [a, b])
        // Removing one leaves the other.
        let actions = esc.receive(publishRequest(ifMatch: a, expires: "0", body: "", cseq: 2), resource: bob, now: t0,
                                  entropy: 6)
        #expect(changes(actions).first?.map(\.entityTag) == [b])
    }

    @Test func removeWithExpiresZeroDropsThePublication() throws {
        var esc = EventStateCompositor()
        let tag = try publishInitial(&esc)
        let actions = esc.receive(publishRequest(ifMatch: tag, expires: "0", body: "", cseq: 2), resource: bob, now: t0,
                                  entropy: 8)
        let ok = try #require(responses(actions).first)
        #expect(ok.statusCode == 200)
        #expect(try ok.headers.expires == 0)
        #expect(actions.contains(.cancelExpiry(entityTag: tag)))
        #expect(changes(actions) == [[]])
        #expect(esc.publications.isEmpty)
    }

    @Test func unknownEntityTagIsAnswered412() throws {
        var esc = EventStateCompositor()
        let actions = esc.receive(publishRequest(ifMatch: "nosuchtag", body: "", cseq: 2), resource: bob, now: t0, entropy: 1)
        #expect(responses(actions).map(\.statusCode) == [412])
        #expect(responses(actions).first?.reasonPhrase == "Conditional Request Failed")
    }

    @Test func entityTagOfAnotherResourceIsAnswered412() throws {
        var esc = EventStateCompositor()
        let tag = try publishInitial(&esc)
        let actions = esc.receive(publishRequest(ifMatch: tag, body: "", cseq: 2), resource: "sip:carol@contoso.com",
                                  now: t0, entropy: 1)
        #expect(responses(actions).map(\.statusCode) == [412])
    }

    @Test func tooShortExpiresIsAnswered423WithMinExpires() throws {
        var esc = EventStateCompositor()
        let actions = esc.receive(publishRequest(expires: "10"), resource: bob, now: t0, entropy: 1)
        let r = try #require(responses(actions).first)
        #expect(r.statusCode == 423)
        #expect(try r.headers.minExpires == SIPEventPackage.presence.minimumExpires)
        #expect(esc.publications.isEmpty)
    }

    @Test func unknownOrMissingEventIsAnswered489WithAllowEvents() throws {
        var esc = EventStateCompositor()
        for event in ["dialog", nil] as [String?] {
            let r = try #require(responses(esc.receive(publishRequest(event: event), resource: bob, now: t0, entropy: 1)).first)
            #expect(r.statusCode == 489)
            #expect(try r.headers.allowEvents == ["presence"])
        }
    }

    @Test func initialPublishWithoutBodyIsAnswered400() throws {
        var esc = EventStateCompositor()
        let r = try #require(responses(esc.receive(publishRequest(body: ""), resource: bob, now: t0, entropy: 1)).first)
        #expect(r.statusCode == 400)
    }

    @Test func unsupportedBodyTypeIsAnswered415WithAccept() throws {
        var esc = EventStateCompositor(acceptedBodyTypes: ["application/pidf+xml"])
        let r = try #require(responses(esc.receive(publishRequest(contentType: "text/plain", body: "hello"),
                                                   resource: bob, now: t0, entropy: 1)).first)
        #expect(r.statusCode == 415)
        #expect(r.headers[.accept] == "application/pidf+xml")
        #expect(esc.publications.isEmpty)
    }

    @Test func expiryTimerRemovesThePublicationAndReportsTheChange() throws {
        var esc = EventStateCompositor()
        let tag = try publishInitial(&esc)
        #expect(esc.expire(entityTag: tag, now: t0 + .seconds(3599)).isEmpty)
        let actions = esc.expire(entityTag: tag, now: t0 + .seconds(3600))
        #expect(actions == [.changed(resource: bob, publications: [])])
        #expect(esc.publications.isEmpty)
    }

    @Test func staleTimerOfARefreshedPublicationIsIgnored() throws {
        var esc = EventStateCompositor()
        let first = try publishInitial(&esc)
        let refreshed = esc.receive(publishRequest(ifMatch: first, body: "", cseq: 2), resource: bob,
                                    now: t0 + .seconds(3000), entropy: 2)
        let second = try #require(try responses(refreshed).first?.headers.sipETag)
        // The first tag's timer fires: that tag is gone.
        #expect(esc.expire(entityTag: first, now: t0 + .seconds(3600)).isEmpty)
        // The new tag's timer fired early (the driver reused a timer): not yet due.
        #expect(esc.expire(entityTag: second, now: t0 + .seconds(3600)).isEmpty)
        #expect(esc.publications(of: bob).count == 1)
        #expect(!esc.expire(entityTag: second, now: t0 + .seconds(6600)).isEmpty)
    }

    @Test func perResourceLimitRefusesFurtherInitialPublicationsWith503() throws {
        var esc = EventStateCompositor(limits: .init(maxPublicationsPerResource: 2))
        let a = try publishInitial(&esc, entropy: 1)
        _ = try publishInitial(&esc, entropy: 2)
        let r = try #require(responses(esc.receive(publishRequest(), resource: bob, now: t0, entropy: 3)).first)
        #expect(r.statusCode == 503)
        // Refreshing an existing one is still allowed.
        let refresh = responses(esc.receive(publishRequest(ifMatch: a, body: "", cseq: 2), resource: bob, now: t0, entropy: 4))
        #expect(refresh.first?.statusCode == 200)
        // Another resource is not affected by bob's limit.
        let carol = responses(esc.receive(publishRequest(), resource: "sip:carol@contoso.com", now: t0, entropy: 5))
        #expect(carol.first?.statusCode == 200)
    }

    @Test func totalLimitRefusesWith503() throws {
        var esc = EventStateCompositor(limits: .init(maxPublications: 1))
        _ = try publishInitial(&esc)
        let r = try #require(responses(esc.receive(publishRequest(), resource: "sip:carol@contoso.com", now: t0,
                                                   entropy: 2)).first)
        #expect(r.statusCode == 503)
        #expect(r.reasonPhrase == "Publication Limit Reached")
    }

    @Test func responsesCopyTheRequestIdentifiersAndAddAToTag() throws {
        var esc = EventStateCompositor()
        let r = try #require(responses(esc.receive(publishRequest(), resource: bob, now: t0, entropy: 3)).first)
        #expect(r.headers.callID == "pub-call-1@192.0.2.10")
        #expect(try r.headers.from?.tag == "pua1")
        #expect(try r.headers.to?.tag != nil)
        #expect(try r.headers.via.count == 1)
    }
    @Test func initialPublishWithExpiresZeroStoresNothing() throws {
        var esc = EventStateCompositor()
        let actions = esc.receive(publishRequest(expires: "0"), resource: bob, now: t0, entropy: 1)
        let ok = try #require(responses(actions).first)
        #expect(ok.statusCode == 200)
        #expect(try ok.headers.expires == 0)
        #expect(changes(actions).isEmpty)
        #expect(esc.publications.isEmpty)
    }

    @Test func bodyWithoutContentTypeIsAnswered400() throws {
        var esc = EventStateCompositor()
        let r = try #require(responses(esc.receive(publishRequest(contentType: nil), resource: bob, now: t0, entropy: 1)).first)
        #expect(r.statusCode == 400)
    }

    @Test func tooLargeBodyIsAnswered413() throws {
        var esc = EventStateCompositor(limits: .init(maxBodyBytes: 8))
        let r = try #require(responses(esc.receive(publishRequest(), resource: bob, now: t0, entropy: 1)).first)
        #expect(r.statusCode == 413)
    }

    @Test func removedEntityTagIsAnswered412Afterwards() throws {
        var esc = EventStateCompositor()
        let tag = try publishInitial(&esc)
        let removed = esc.receive(publishRequest(ifMatch: tag, expires: "0", body: "", cseq: 2), resource: bob, now: t0,
                                  entropy: 2)
        let newTag = try #require(try responses(removed).first?.headers.sipETag)
        for stale in [tag, newTag] {
            let r = responses(esc.receive(publishRequest(ifMatch: stale, body: "", cseq: 3), resource: bob, now: t0, entropy: 3))
            #expect(r.first?.statusCode == 412)
        }
    }

    @Test func removeAllDropsEveryPublicationOfTheResourceOnly() throws {
        var esc = EventStateCompositor()
        let a = try publishInitial(&esc, entropy: 1)
        let b = try publishInitial(&esc, entropy: 2)
        _ = esc.receive(publishRequest(), resource: "sip:carol@contoso.com", now: t0, entropy: 3)
        let actions = esc.removeAll(of: bob)
        #expect(actions == [.cancelExpiry(entityTag: a), .cancelExpiry(entityTag: b), .changed(resource: bob, publications: [])])
        #expect(esc.publications.count == 1)
        #expect(esc.removeAll(of: bob).isEmpty)
    }
}
