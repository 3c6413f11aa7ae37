import NIOCore
import PresenceDocuments
import PresenceGateway
import SIPMessages
import Testing
import UPnPDevice

/// Flow 5 on the sans-IO core (docs/flows.md, "Flow 5"): the UPnP Presence:1 actions
/// (ISO/IEC 29341-26-16 §5.5) for the configured user carol@oma.example, turned into RFC 3903
/// publications and RFC 6665 subscriptions through the gateway's routing, and the evented
/// variables they change.
@Suite struct UPnPPresenceBridgeTests {
    typealias T = GatewayCoreTests

    static let yaml = GatewayConfiguration.defaultYAML
        + "\nupnp: { user: \"sip:carol@oma.example\", address: 127.0.0.1, max-registrations: 2 }\n"

    static func contact(_ uri: String) -> String {
        "<contact xmlns=\"\(NS.upnpPresence)\" uri=\"\(uri)\"/>"
    }

    static let busy = """
        <?xml version="1.0" encoding="UTF-8"?>
        <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" \
        entity="sip:someone@else.example"><tuple id="t1"><status><basic>open</basic></status></tuple>\
        <person xmlns="urn:ietf:params:xml:ns:pidf:data-model" id="p1"><rpid:activities><rpid:busy/>\
        </rpid:activities></person></presence>
        """

    static func events(_ actions: [GatewayCore.Action], _ variable: EventedVariable) -> [String] {
        actions.compactMap { if case .upnpEvent(let change) = $0, change.variable == variable { change.value } else { nil } }
    }

    /// The one contact of a PresenceOfContactsList document.
    static func shown(_ document: String) throws -> UPnPContactPresence {
        let list = try UPnPContactPresenceList(bytes: Array(document.utf8))
        try #require(list.contacts.count == 1)
        return list.contacts[0]
    }

    /// Registers for `uri` and answers the SUBSCRIBE toward the OMA side with 200: the SUBSCRIBE.
    static func registered(_ uri: String, _ h: inout T.Harness) throws -> (SIPRequest, GatewayCore.Context) {
        let (result, actions) = try h.core.registerUPnPContact(contact(uri), expire: 600, now: h.now)
        let registration = try UPnPRegistrationResult(bytes: Array(result.utf8))
        #expect(registration.uri == uri && registration.result == .subscribed && registration.expires == 600)
        let (subscribe, context) = try #require(T.sent(actions, to: .oma).first)
        _ = h.core.receive(
            SIPResponse(
                replyingTo: subscribe, statusCode: 200, toTag: "kam1",
                headers: [(.expires, "600"), (.contact, "<sip:127.0.0.1:5070>")]),
            to: subscribe, context: context, now: h.now)
        return (subscribe, context)
    }

    // MARK: - The user's own presence

    @Test func updatePresencePublishesTheUsersPIDFToTheOMAPresenceServer() throws {
        var h = try T.Harness(yaml: Self.yaml)
        #expect(h.core.upnpPresence() == "")
        let actions = try h.core.updateUPnPPresence(Self.busy, now: h.now)
        // RFC 3903 §4.2: an initial PUBLISH of the user's own, Event presence, PIDF whose entity
        // is the user (not what the control point wrote), no SIP-If-Match.
        let (publish, context) = try #require(T.sent(actions, to: .oma).first)
        #expect(publish.method == .publish && context == .upnpUser)
        #expect(publish.uri.description == "sip:carol@oma.example")
        #expect(try publish.headers.from?.uri.description == "sip:carol@oma.example")
        #expect(publish.headers[.event] == "presence" && publish.headers[.sipIfMatch] == nil)
        let pidf = try PIDFDocument(bytes: publish.body)
        #expect(pidf.entity == "sip:carol@oma.example")
        #expect(String(decoding: publish.body, as: UTF8.self).contains("busy"))
        // GetPresence and the evented UserPresenceInfo give the same document.
        let evented = try #require(Self.events(actions, .userPresenceInfo).first)
        #expect(evented == h.core.upnpPresence())
        #expect(try PIDFDocument(bytes: Array(evented.utf8)) == pidf)

        // §4.4: once the server gave an entity-tag, a change modifies the same publication.
        _ = h.core.receive(
            SIPResponse(replyingTo: publish, statusCode: 200, headers: [(.sipETag, "e1"), (.expires, "3600")]),
            to: publish, context: context, now: h.now)
        let again = try h.core.updateUPnPPresence(Self.busy.replacingOccurrences(of: "busy", with: "away"), now: h.now)
        let (modify, _) = try #require(T.sent(again, to: .oma).first)
        #expect(modify.headers[.sipIfMatch] == "e1")
    }

    @Test(arguments: ["", "busy", "<presence/>", "<presence xmlns=\"urn:ietf:params:xml:ns:pidf\"><tuple/></presence>"])
    func aPayloadThatIsNoPIDFIsRefusedWithError600(_ payload: String) throws {
        var h = try T.Harness(yaml: Self.yaml)
        let fault = #expect(throws: UPnPFault.self) { try h.core.updateUPnPPresence(payload, now: h.now) }
        #expect(fault?.code == 600)
        #expect(h.core.upnpPresence() == "")
    }

    // MARK: - Contacts

    @Test func anOMAContactIsSubscribedToWithTheUserAsWatcherAndItsStateEvented() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (subscribe, _) = try Self.registered("sip:alice@oma.example", &h)
        // RFC 3856: a presence SUBSCRIBE to the contact, the user in From, PIDF accepted.
        #expect(subscribe.method == .subscribe && subscribe.uri.description == "sip:alice@oma.example")
        #expect(try subscribe.headers.from?.uri.description == "sip:carol@oma.example")
        #expect(subscribe.headers[.event] == "presence" && subscribe.headers[.accept] == "application/pidf+xml")

        // Nothing published: NOTIFY without a body. Shown active, with no presence and no band.
        let empty = try T.omaNotify(subscribe, cseq: 1, body: [])
        let context = try #require(h.core.dialogOwner(of: empty)?.context)
        _ = h.core.receive(empty, id: 10, in: context, now: h.now)
        let first = try Self.shown(try h.core.upnpContactPresence(Self.contact("sip:alice@oma.example")))
        #expect(first.state == .active && first.presence == nil && first.band == nil)

        let busy = Array(Self.busy.replacingOccurrences(of: "sip:someone@else.example", with: "sip:alice@oma.example").utf8)
        let actions = h.core.receive(try T.omaNotify(subscribe, cseq: 2, body: busy), id: 11, in: context, now: h.now)
        #expect(T.responses(actions, 11).map(\.statusCode) == [200])
        let evented = try Self.shown(try #require(Self.events(actions, .presenceOfContactsUpdate).first))
        // [MS-PRES] §3.7.5.4: busy is the 6000–7499 band.
        #expect(evented.uri == "sip:alice@oma.example" && evented.state == .active && evented.band == "busy")
        #expect(evented.presence?.entity == "sip:alice@oma.example")
        // The same NOTIFY again changes nothing the control point sees: no event.
        let same = h.core.receive(try T.omaNotify(subscribe, cseq: 3, body: busy), id: 12, in: context, now: h.now)
        #expect(Self.events(same, .presenceOfContactsUpdate).isEmpty)
        // §5.5.4: the contacts changed since the last call, once.
        let update = try UPnPContactPresenceList(bytes: Array(h.core.takeUPnPContactsUpdate().utf8))
        #expect(update.contacts.map(\.uri) == ["sip:alice@oma.example"] && update.contacts[0].band == "busy")
        #expect(try UPnPContactPresenceList(bytes: Array(h.core.takeUPnPContactsUpdate().utf8)).contacts.isEmpty)
    }

    @Test func expireZeroEndsTheSubscriptionAndShowsTheContactTerminated() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (subscribe, _) = try Self.registered("sip:alice@oma.example", &h)
        let notify = try T.omaNotify(subscribe, cseq: 1, body: [])
        let context = try #require(h.core.dialogOwner(of: notify)?.context)
        _ = h.core.receive(notify, id: 1, in: context, now: h.now)
        let (result, actions) = try h.core.registerUPnPContact(Self.contact("sip:alice@oma.example"), expire: 0, now: h.now)
        #expect(try UPnPRegistrationResult(bytes: Array(result.utf8)).result == .ended)
        // RFC 6665 §4.1.2.3: an un-SUBSCRIBE in the dialog.
        let (unsubscribe, _) = try #require(T.sent(actions, to: .oma).first)
        #expect(unsubscribe.headers[.expires] == "0" && unsubscribe.headers.callID == subscribe.headers.callID)
        #expect(try Self.shown(try #require(Self.events(actions, .presenceOfContactsUpdate).first)).state == .terminated)
        #expect(throws: UPnPFault.self) { try h.core.upnpContactPresence(Self.contact("sip:alice@oma.example")) }
        // The final NOTIFY is answered and the dialog forgotten.
        let final = try T.omaNotify(subscribe, cseq: 2, state: "terminated;reason=timeout", body: [])
        let answered = h.core.receive(final, id: 2, in: context, now: h.now)
        #expect(T.responses(answered, 2).map(\.statusCode) == [200])
        #expect(h.core.dialogOwner(of: final) == nil)
    }

    @Test func anEnterpriseContactIsWatchedThroughAnEnterpriseLegAsAFederatedWatcher() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, actions) = try h.core.registerUPnPContact(Self.contact("sip:bob@contoso.com"), expire: 600, now: h.now)
        #expect(T.sent(actions, to: .oma).isEmpty)
        // The enterprise sees the user as the watcher, marked federated ([MS-PRES] §3.4.5.1.3),
        // and applies its own containers and polite blocking to it.
        let (subscribe, context) = try #require(T.sent(actions, to: .enterprise).first)
        #expect(try subscribe.headers.from?.uri.description == "sip:carol@oma.example")
        #expect(subscribe.headers[.msEdgeProxyMessageTrust]?.contains("ms-source-network=federation") == true)
        let answered = h.core.receive(
            T.enterpriseOK(subscribe, T.categories(availability: 6500, uri: "sip:bob@contoso.com")), to: subscribe,
            context: context, now: h.now)
        let shown = try Self.shown(try #require(Self.events(answered, .presenceOfContactsUpdate).first))
        #expect(shown.uri == "sip:bob@contoso.com" && shown.state == .active && shown.band == "busy")
        // Not a watcher of the gateway's: not counted as one.
        #expect(h.core.counts.omaWatches == 0)
        // Expire 0: the leg's last consumer left, so it is unsubscribed.
        let (_, ended) = try h.core.registerUPnPContact(Self.contact("sip:bob@contoso.com"), expire: 0, now: h.now)
        #expect(T.sent(ended, to: .enterprise).contains { $0.0.headers[.expires] == "0" })
    }

    @Test func aPolitelyBlockedEnterpriseContactLooksLikeOneThatNeverPublished() throws {
        // What the enterprise sends a politely blocked watcher is the document of a presentity
        // that never published ([MS-PRES] §2.2.2.1, §3.2.5.3): each category empty.
        var shown: [String] = []
        for uri in ["sip:blocked@contoso.com", "sip:silent@contoso.com"] {
            var h = try T.Harness(yaml: Self.yaml)
            let (_, actions) = try h.core.registerUPnPContact(Self.contact(uri), expire: 600, now: h.now)
            let (subscribe, context) = try #require(T.sent(actions, to: .enterprise).first)
            let empty = CategoriesDocument(uri: uri, categories: [Category(name: .state), Category(name: .note)])
            let answered = h.core.receive(T.enterpriseOK(subscribe, empty), to: subscribe, context: context, now: h.now)
            let event = try #require(Self.events(answered, .presenceOfContactsUpdate).first)
            #expect(try Self.shown(event).state == .active)
            shown.append(event.replacingOccurrences(of: uri, with: "sip:contact@contoso.com"))
        }
        #expect(shown[0] == shown[1])
    }

    @Test(arguments: [
        ("<contact/>", 600), ("sip:alice@oma.example", 600),
        ("<contact xmlns=\"urn:presencegateway:params:xml:ns:upnp-presence\" uri=\"http://alice.example/\"/>", 600),
        // No domain of the gateway serves it: no route to a presence server.
        ("<contact xmlns=\"urn:presencegateway:params:xml:ns:upnp-presence\" uri=\"sip:eve@elsewhere.example\"/>", 600),
    ])
    func aContactThatCannotBeWatchedIsRefused(_ payload: String, _ code: Int) throws {
        var h = try T.Harness(yaml: Self.yaml)
        let fault = #expect(throws: UPnPFault.self) { try h.core.registerUPnPContact(payload, expire: 60, now: h.now) }
        #expect(fault?.code == code)
    }

    @Test func registrationsAreCappedAndANegativeExpireIsOutOfRange() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let negative = #expect(throws: UPnPFault.self) {
            try h.core.registerUPnPContact(Self.contact("sip:alice@oma.example"), expire: -1, now: h.now)
        }
        #expect(negative?.code == 601)
        _ = try h.core.registerUPnPContact(Self.contact("sip:a@oma.example"), expire: 60, now: h.now)
        _ = try h.core.registerUPnPContact(Self.contact("sip:b@oma.example"), expire: 60, now: h.now)
        // Registering a contact again renews it: no new subscription, and no slot taken.
        let (_, renewed) = try h.core.registerUPnPContact(Self.contact("sip:a@oma.example"), expire: 120, now: h.now)
        #expect(T.sent(renewed, to: .oma).isEmpty)
        let full = #expect(throws: UPnPFault.self) {
            try h.core.registerUPnPContact(Self.contact("sip:c@oma.example"), expire: 60, now: h.now)
        }
        #expect(full?.code == 501)
        #expect(h.core.refusals.upnpRegistrations == 1)
    }

    @Test func oneControlPointCannotTakeEveryRegistration() throws {
        let yaml = GatewayConfiguration.defaultYAML + """

            upnp: { user: "sip:carol@oma.example", address: 127.0.0.1, max-registrations: 3, \
            max-registrations-per-control-point: 2 }

            """
        var h = try T.Harness(yaml: yaml)
        for contact in ["sip:a@oma.example", "sip:b@oma.example"] {
            _ = try h.core.registerUPnPContact(Self.contact(contact), expire: 60, controlPoint: "192.0.2.1", now: h.now)
        }
        let third = #expect(throws: UPnPFault.self) {
            try h.core.registerUPnPContact(Self.contact("sip:c@oma.example"), expire: 60, controlPoint: "192.0.2.1", now: h.now)
        }
        #expect(third?.code == 501)
        // Another control point still has room, up to the device's cap.
        _ = try h.core.registerUPnPContact(Self.contact("sip:c@oma.example"), expire: 60, controlPoint: "192.0.2.2", now: h.now)
        let full = #expect(throws: UPnPFault.self) {
            try h.core.registerUPnPContact(Self.contact("sip:d@oma.example"), expire: 60, controlPoint: "192.0.2.3", now: h.now)
        }
        #expect(full?.code == 501)
        #expect(h.core.refusals.upnpRegistrations == 2)
    }

    @Test func theRegistrationsExpireRunningOutEndsIt() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (_, actions) = try h.core.registerUPnPContact(Self.contact("sip:alice@oma.example"), expire: 30, now: h.now)
        let expiry = try #require(
            actions.compactMap { if case .schedule(.expiry(let c), let at) = $0 { (c, at) } else { nil } }.first)
        #expect(expiry.1 == h.now + .seconds(30))
        let fired = h.core.fire(.expiry(expiry.0), now: h.now + .seconds(30))
        #expect(try Self.shown(try #require(Self.events(fired, .presenceOfContactsUpdate).first)).state == .terminated)
        #expect(throws: UPnPFault.self) { try h.core.upnpContactPresence(Self.contact("sip:alice@oma.example")) }
    }

    @Test func shutdownRemovesThePublicationAndEndsTheSubscriptions() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let published = try h.core.updateUPnPPresence(Self.busy, now: h.now)
        let (publish, context) = try #require(T.sent(published, to: .oma).first)
        _ = h.core.receive(
            SIPResponse(replyingTo: publish, statusCode: 200, headers: [(.sipETag, "e1"), (.expires, "3600")]),
            to: publish, context: context, now: h.now)
        let (subscribe, _) = try Self.registered("sip:alice@oma.example", &h)
        let notify = try T.omaNotify(subscribe, cseq: 1, body: [])
        _ = h.core.receive(notify, id: 1, in: try #require(h.core.dialogOwner(of: notify)?.context), now: h.now)
        let sent = T.sent(h.core.shutdown(now: h.now), to: .oma).map(\.0)
        // RFC 3903 §4.5: the publication removed; RFC 6665 §4.1.2.3: the subscription ended.
        #expect(sent.contains { $0.method == .publish && $0.headers[.expires] == "0" && $0.headers[.sipIfMatch] == "e1" })
        #expect(sent.contains { $0.method == .subscribe && $0.headers[.expires] == "0" })
    }

    // MARK: - Watchers

    /// The user's policy asks for the user's decision on enterprise watchers (RFC 5025 confirm).
    static let confirming = yaml.replacingOccurrences(of: "sameEnterprise: allow,", with: "sameEnterprise: confirm,")

    static func watchers(_ actions: [GatewayCore.Action]) throws -> [UPnPWatcher]? {
        try events(actions, .watcher).last.map { try UPnPWatcherList(bytes: Array($0.utf8)).watchers }
    }

    @Test func aWatcherWaitingForTheUserIsEventedAndAuthorizedReactively() throws {
        var h = try T.Harness(yaml: Self.confirming)
        _ = h.core.start(now: h.now)
        let (_, subscribed) = h.receive(
            try T.enterpriseSubscribe(resources: ["sip:carol@oma.example"], from: "sip:dave@contoso.com"),
            from: .enterprise, network: .sameEnterprise)
        // Waiting for the user: listed pending (RFC 3857 §3.7), no subscription toward carol yet.
        #expect(try Self.watchers(subscribed) == [UPnPWatcher(uri: "sip:dave@contoso.com", status: .pending)])
        #expect(!T.sent(subscribed, to: .oma).contains { $0.0.uri.description == "sip:carol@oma.example" })
        let values = h.core.upnpEventedValues()
        #expect(try UPnPWatcherList(bytes: Array((values[.watcher] ?? "").utf8)).watchers.map(\.uri) == ["sip:dave@contoso.com"])

        // §5.5.6: the user allows dave; his subscription goes on toward carol, and he is active.
        let allowed = try h.core.authorizeUPnPWatcher(
            Self.contact("sip:dave@contoso.com"), expire: 3600, userPresenceInfo: Self.busy, now: h.now)
        #expect(T.sent(allowed, to: .oma).contains { $0.0.uri.description == "sip:carol@oma.example" })
        #expect(
            try Self.watchers(allowed) == [UPnPWatcher(uri: "sip:dave@contoso.com", status: .active, decision: .allow)])
        // Nothing changed: nothing evented.
        let again = try h.core.authorizeUPnPWatcher(
            Self.contact("sip:dave@contoso.com"), expire: 3600, userPresenceInfo: Self.busy, now: h.now)
        #expect(Self.events(again, .watcher).isEmpty)
    }

    @Test func aDecisionLapsesWithItsExpire() throws {
        var h = try T.Harness(yaml: Self.confirming)
        _ = h.core.start(now: h.now)
        let allowed = try h.core.authorizeUPnPWatcher(
            Self.contact("sip:dave@contoso.com"), expire: 60, userPresenceInfo: Self.busy, now: h.now)
        #expect(allowed.contains { if case .schedule(.expiry(.upnpUser), let at) = $0 { at == h.now + .seconds(60) } else { false } })
        let (_, subscribed) = h.receive(
            try T.enterpriseSubscribe(resources: ["sip:carol@oma.example"], from: "sip:dave@contoso.com"),
            from: .enterprise, network: .sameEnterprise)
        #expect(try Self.watchers(subscribed) == [UPnPWatcher(uri: "sip:dave@contoso.com", status: .active, decision: .allow)])
        // 60 s later the decision is gone: dave waits for the user again (RFC 5025 confirm).
        let lapsed = h.core.fire(.expiry(.upnpUser), now: h.now + .seconds(60))
        #expect(try Self.watchers(lapsed) == [UPnPWatcher(uri: "sip:dave@contoso.com", status: .pending)])
        #expect(lapsed.contains { if case .cancel(.expiry(.upnpUser)) = $0 { true } else { false } })
    }

    @Test func aWatcherBlockedProactivelyIsRejectedAndAPolitelyBlockedOneSeesNothing() throws {
        var h = try T.Harness(yaml: Self.confirming)
        _ = h.core.start(now: h.now)
        let list = """
            <watchers xmlns="\(NS.upnpPresence)" version="0.1">\
            <watcher uri="sip:dave@contoso.com" decision="block"/>\
            <watcher uri="sip:erin@contoso.com" decision="polite-block"/></watchers>
            """
        _ = try h.core.authorizeUPnPWatchers(list, expire: 600, userPresenceInfo: Self.busy, now: h.now)
        let (_, refused) = h.receive(
            try T.enterpriseSubscribe(resources: ["sip:carol@oma.example"], from: "sip:dave@contoso.com"),
            from: .enterprise, network: .sameEnterprise)
        // Blocked (RFC 5025 §3.2.1): refused, so not among the user's watchers, and nothing is
        // subscribed toward carol for him.
        #expect(try Self.watchers(refused)?.contains { $0.uri == "sip:dave@contoso.com" } != true)
        #expect(!T.sent(refused, to: .oma).contains { $0.0.uri.description == "sip:carol@oma.example" })
        let (_, polite) = h.receive(
            try T.enterpriseSubscribe(resources: ["sip:carol@oma.example"], from: "sip:erin@contoso.com"),
            from: .enterprise, network: .sameEnterprise)
        // Politely blocked: accepted (RFC 5025 §3.2.1), so listed active with the user's decision.
        #expect(
            try Self.watchers(polite)?.contains(
                UPnPWatcher(uri: "sip:erin@contoso.com", status: .active, decision: .politeBlock)) == true)
        // Expire 0 withdraws the decisions: erin waits for the user again.
        let withdrawn = try h.core.authorizeUPnPWatchers(list, expire: 0, userPresenceInfo: Self.busy, now: h.now)
        #expect(try Self.watchers(withdrawn)?.contains(UPnPWatcher(uri: "sip:erin@contoso.com", status: .active)) != true)
    }

    @Test(arguments: ["<watchers/>", "<presence/>", "not xml"])
    func aWatcherListThatDoesNotParseIsRefusedWith600(_ list: String) throws {
        var h = try T.Harness(yaml: Self.yaml)
        let fault = #expect(throws: UPnPFault.self) {
            try h.core.authorizeUPnPWatchers(list, expire: 60, userPresenceInfo: Self.busy, now: h.now)
        }
        #expect(fault?.code == 600)
    }

    // MARK: - The durable store

    /// Every entry flow 5 keeps: the user's presence published (entity-tag e1) and a decision
    /// on a watcher; an OMA contact whose subscription is active, an enterprise contact on a leg.
    static func everyEntry(_ h: inout T.Harness) throws {
        let published = try h.core.updateUPnPPresence(busy, now: h.now)
        let (publish, context) = try #require(T.sent(published, to: .oma).first)
        _ = h.core.receive(
            SIPResponse(replyingTo: publish, statusCode: 200, headers: [(.sipETag, "e1"), (.expires, "3600")]),
            to: publish, context: context, now: h.now)
        _ = try h.core.authorizeUPnPWatcher(
            contact("sip:dave@contoso.com"), expire: 3600, userPresenceInfo: busy, now: h.now)
        let (subscribe, _) = try registered("sip:alice@oma.example", &h)
        let notify = try T.omaNotify(subscribe, cseq: 1, body: [])
        _ = h.core.receive(notify, id: 1, in: try #require(h.core.dialogOwner(of: notify)?.context), now: h.now)
        let (_, actions) = try h.core.registerUPnPContact(contact("sip:bob@contoso.com"), expire: 600, now: h.now)
        let (categories, legContext) = try #require(T.sent(actions, to: .enterprise).first)
        _ = h.core.receive(
            T.enterpriseOK(categories, T.categories(availability: 6500, uri: "sip:bob@contoso.com")), to: categories,
            context: legContext, now: h.now)
    }

    /// After a restart every registration goes on where it was: the OMA contact's NOTIFY still
    /// finds its dialog, the enterprise contact its leg; the user's presence, publication and
    /// decisions are back; the subscription and the publication are refreshed at once.
    @Test func flowFiveComesBackFromTheStore() throws {
        var h = try StateRestoreTests.journaled(yaml: Self.yaml)
        _ = h.core.start(now: h.now)
        try Self.everyEntry(&h)
        var records = StateRestoreTests.Records()
        StateRestoreTests.take(&h, into: &records)
        #expect(records.kinds()["upnp-registration"] == 2 && records.kinds()["upnp-user"] == 1)

        var after = try StateRestoreTests.journaled(yaml: Self.yaml, prefix: "r")
        let resumed = try after.core.restore(records.all, clock: StateRestoreTests.clock, now: after.now)
        _ = after.core.start(now: after.now)
        #expect(after.core.upnpPresence() == h.core.upnpPresence())
        for contact in ["sip:alice@oma.example", "sip:bob@contoso.com"] {
            #expect(try Self.shown(try after.core.upnpContactPresence(Self.contact(contact))).state == .active)
        }
        // Refreshed at once: the publication (its entity-tag) and alice's subscription.
        let refreshes = resumed.compactMap { if case .schedule(.refresh(let c), _) = $0 { c } else { nil } }
        #expect(refreshes.contains(.upnpUser))
        #expect(refreshes.contains { if case .upnpContact = $0 { true } else { false } })
        let refreshed = after.core.fire(.refresh(.upnpUser), now: after.now)
        #expect(T.sent(refreshed, to: .oma).first?.0.headers[.sipIfMatch] == "e1")
        // Alice's state in her old dialog reaches the control point.
        let body = Array(Self.busy.replacingOccurrences(of: "sip:someone@else.example", with: "sip:alice@oma.example").utf8)
        let notify = try T.omaNotify(try Self.aliceSubscribe(records), cseq: 2, body: body)
        let owner = try #require(after.core.dialogOwner(of: notify))
        let evented = after.core.receive(notify, id: 9, in: owner.context, now: after.now)
        #expect(try Self.shown(try #require(Self.events(evented, .presenceOfContactsUpdate).first)).band == "busy")
        // Bob is not a watcher of the gateway's: not counted after the restore either.
        #expect(after.core.counts.omaWatches == 0)
        // The decision on dave is the user's still: listed with it once he subscribes.
        let (_, subscribed) = after.receive(
            try T.enterpriseSubscribe(resources: ["sip:carol@oma.example"], from: "sip:dave@contoso.com"),
            from: .enterprise, network: .sameEnterprise)
        #expect(try Self.watchers(subscribed)?.first?.decision == .allow)
    }

    /// Alice's subscription as its record holds it: a SUBSCRIBE with its Call-ID and From tag.
    static func aliceSubscribe(_ records: StateRestoreTests.Records) throws -> SIPRequest {
        let record = try #require(
            records.all.first { $0.kind == "upnp-registration" && String(decoding: $0.body, as: UTF8.self).contains("alice") })
        let callID = try #require(record.callID)
        let tag = try #require(record.localTag)
        return try T.request([
            "SUBSCRIBE sip:alice@oma.example SIP/2.0", "Via: SIP/2.0/UDP 127.0.0.1:5060;branch=z9hG4bKa",
            "From: <sip:carol@oma.example>;tag=\(tag)", "To: <sip:alice@oma.example>", "Call-ID: \(callID)",
            "CSeq: 1 SUBSCRIBE", "Event: presence",
        ])
    }
}

/// Flow 5 for a user of the enterprise: the presence goes into the enterprise as a SERVICE
/// category publish, and an OMA contact is shown as flow 1 shows an enterprise watcher, under
/// the contact's policy, enforced by the gateway.
@Suite struct UPnPEnterpriseUserTests {
    typealias T = GatewayCoreTests
    typealias U = UPnPPresenceBridgeTests

    /// dana@contoso.com; john@oma.example politely blocks the enterprise's own watchers, and
    /// mary@oma.example blocks them.
    static let yaml = GatewayConfiguration.defaultYAML.replacingOccurrences(
        of: "presentities:\n",
        with: """
            presentities:
              "sip:john@oma.example":
                defaults: { sameEnterprise: polite-block, federated: allow, publicCloud: polite-block }
                containers: { 200: { members: [sameEnterprise], categories: [state, note] } }
              "sip:mary@oma.example":
                defaults: { sameEnterprise: block, federated: allow, publicCloud: polite-block }

            """) + "\nupnp: { user: \"sip:dana@contoso.com\", address: 127.0.0.1 }\n"

    @Test func theUsersPresenceIsASERVICECategoryPublishIntoTheEnterprise() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let actions = try h.core.updateUPnPPresence(U.busy, now: h.now)
        #expect(T.sent(actions, to: .oma).isEmpty)
        let (service, context) = try #require(T.sent(actions, to: .enterprise).first)
        // [MS-PRES] §2.2.2.2: SERVICE, From and To the user, a publish of a machineState of the
        // control point's endpoint (its Contact's +sip.instance), busy (6500, §3.7.5.4).
        #expect(service.method.description == "SERVICE" && context == .upnpUser)
        #expect(try service.headers.from?.uri.description == "sip:dana@contoso.com")
        let body = String(decoding: service.body, as: UTF8.self)
        #expect(body.contains("machineState") && body.contains("6500"), "\(body)")
        #expect(service.headers[.contact]?.contains("+sip.instance") == true)
        #expect(try PIDFDocument(bytes: Array(h.core.upnpPresence().utf8)).entity == "sip:dana@contoso.com")
        // The server's answer keeps the versions; at shutdown the instance is withdrawn.
        _ = h.core.receive(SIPResponse(replyingTo: service, statusCode: 200, toTag: "s1"), to: service,
                           context: context, now: h.now)
        let withdrawn = T.sent(h.core.shutdown(now: h.now), to: .enterprise).map(\.0)
        #expect(withdrawn.contains { $0.method.description == "SERVICE" && String(decoding: $0.body, as: UTF8.self).contains("expires=\"0\"") })
    }

    /// The user is one of the enterprise's own watchers of an OMA contact (flow 1): politely
    /// blocked, john shows exactly what a contact that never published shows; blocked, mary's
    /// registration is refused 403 and nothing is asked of the OMA side.
    @Test func aPolitelyBlockedOMAContactLooksLikeOneThatNeverPublished() throws {
        var h = try T.Harness(yaml: Self.yaml)
        var shown: [String] = []
        for (contact, body) in [("sip:john@oma.example", U.busy), ("sip:alice@oma.example", "")] {
            let (subscribe, _) = try U.registered(contact, &h)
            #expect(try subscribe.headers.from?.uri.description == "sip:dana@contoso.com")
            let published = Array(body.replacingOccurrences(of: "sip:someone@else.example", with: contact).utf8)
            let notify = try T.omaNotify(subscribe, cseq: 1, body: published)
            let actions = h.core.receive(notify, id: 1, in: try #require(h.core.dialogOwner(of: notify)?.context), now: h.now)
            let event = try #require(U.events(actions, .presenceOfContactsUpdate).first)
            #expect(try U.shown(event).state == .active)
            shown.append(event.replacingOccurrences(of: contact, with: "sip:contact@oma.example"))
        }
        #expect(shown[0] == shown[1], "\(shown)")
        #expect(!shown[0].contains("busy"))

        let (result, actions) = try h.core.registerUPnPContact(U.contact("sip:mary@oma.example"), expire: 60, now: h.now)
        let refused = try UPnPRegistrationResult(bytes: Array(result.utf8))
        #expect(refused.result == .refused && refused.status == 403 && actions.isEmpty)
    }

    @Test func anAllowedOMAContactIsShownItsStateAndAnEnterpriseContactAsTheEnterprisesOwn() throws {
        var h = try T.Harness(yaml: Self.yaml)
        let (subscribe, _) = try U.registered("sip:alice@oma.example", &h)
        let busy = Array(U.busy.replacingOccurrences(of: "sip:someone@else.example", with: "sip:alice@oma.example").utf8)
        let notify = try T.omaNotify(subscribe, cseq: 1, body: busy)
        let actions = h.core.receive(notify, id: 1, in: try #require(h.core.dialogOwner(of: notify)?.context), now: h.now)
        #expect(try U.shown(try #require(U.events(actions, .presenceOfContactsUpdate).first)).band == "busy")

        let (_, registered) = try h.core.registerUPnPContact(U.contact("sip:bob@contoso.com"), expire: 60, now: h.now)
        let (categories, _) = try #require(T.sent(registered, to: .enterprise).first)
        // No edge marking: the user is the enterprise's own ([MS-PRES] §3.4.5.1.3).
        #expect(categories.headers[.msEdgeProxyMessageTrust] == nil)
        #expect(try categories.headers.from?.uri.description == "sip:dana@contoso.com")
        // The enterprise decides its users' watchers, not the gateway.
        let fault = #expect(throws: UPnPFault.self) {
            try h.core.authorizeUPnPWatcher(U.contact("sip:eve@oma.example"), expire: 60, userPresenceInfo: U.busy, now: h.now)
        }
        #expect(fault?.code == 602)
    }
}
