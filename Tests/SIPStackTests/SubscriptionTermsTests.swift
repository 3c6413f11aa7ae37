import Foundation
import SIPMessages
import SIPStack
import Testing

@Suite struct SubscriptionTermsTests {
    let registry = SIPEventPackageRegistry()

    private func accepted(_ request: SIPRequest, negotiated: String? = nil) -> SubscriptionTerms? {
        if case .accept(let terms) = SubscriptionTerms.evaluate(request, registry: registry, negotiated: negotiated) {
            return terms
        }
        return nil
    }

    private func rejection(_ request: SIPRequest) -> (Int, SIPHeaders)? {
        if case .reject(let status, _, let headers) = SubscriptionTerms.evaluate(request, registry: registry) {
            return (status, headers)
        }
        return nil
    }

    @Test func categoriesWinOverMsrtcWhichWinsOverPIDFWhateverTheAcceptOrder() {
        // [MS-PRES] §1.3.3: enhanced presence, then msrtc.pidf, then PIDF.
        let all = presenceSubscribe(accept: "application/pidf+xml, text/xml+msrtc.pidf, application/msrtc-event-categories+xml")
        #expect(accepted(all)?.bodyType == "application/msrtc-event-categories+xml")
        let two = presenceSubscribe(accept: "application/pidf+xml, text/xml+msrtc.pidf")
        #expect(accepted(two)?.bodyType == "text/xml+msrtc.pidf")
        #expect(accepted(presenceSubscribe(accept: "application/pidf+xml"))?.bodyType == "application/pidf+xml")
    }

    @Test func noAcceptHeaderMeansPIDFAndQZeroExcludesAType() {
        // RFC 3856 §6.7: PIDF is the default; RFC 3261 §20.1: q=0 means not acceptable.
        #expect(accepted(presenceSubscribe(accept: nil))?.bodyType == "application/pidf+xml")
        let excluded = presenceSubscribe(accept: "application/msrtc-event-categories+xml;q=0, application/*")
        #expect(accepted(excluded)?.bodyType == "application/pidf+xml")
    }

    @Test func negotiatedTypeIsKeptForRefreshes() {
        let refresh = presenceSubscribe(accept: "application/pidf+xml, text/xml+msrtc.pidf", toTag: "gw1")
        #expect(accepted(refresh, negotiated: "application/pidf+xml")?.bodyType == "application/pidf+xml")
    }

    @Test func rateControlRatesAreReadFromTheEventHeader() throws {
        // RFC 6446: max-rate and min-rate are Event header parameters in notifications per second.
        let both = try #require(accepted(presenceSubscribe(event: "presence;max-rate=0.2;min-rate=0.001")))
        #expect(both.maxRate == 0.2)
        #expect(both.minRate == 0.001)
        #expect(both.minimumInterval == .seconds(5))
        #expect(both.maximumInterval == .seconds(1000))
        let none = try #require(accepted(presenceSubscribe()))
        #expect(none.maxRate == nil && none.minRate == nil && none.minimumInterval == nil)
        #expect(rejection(presenceSubscribe(event: "presence;max-rate=5/s"))?.0 == 400)
        // Kept with the subscription's record: a restored watch keeps its rate control, and a
        // record written before it had none still reads.
        let decoded = try JSONDecoder().decode(SubscriptionTerms.self, from: JSONEncoder().encode(both))
        #expect(decoded == both)
        let plain = try JSONEncoder().encode(none)
        #expect(!String(decoding: plain, as: UTF8.self).contains("Rate"))
        #expect(try JSONDecoder().decode(SubscriptionTerms.self, from: plain) == none)
    }

    @Test func ratesAreWrittenAsDecimals() {
        #expect(SubscriptionTerms.decimal(0.2) == "0.2")
        #expect(SubscriptionTerms.decimal(1.0 / 600) == "0.001667")
        #expect(SubscriptionTerms.decimal(5) == "5")
        #expect(SubscriptionTerms.decimal(1.0 / 60) == "0.016667")
        #expect(SubscriptionTerms.decimal(12.5) == "12.5")
    }

    @Test func unacceptableBodyIs406WithTheTypesOnOffer() {
        let r = rejection(presenceSubscribe(accept: "text/plain"))
        #expect(r?.0 == 406)
        #expect(r?.1[.accept]?.contains("application/pidf+xml") == true)
    }

    @Test func unknownOrMissingEventIs489WithAllowEvents() {
        // RFC 6665 §4.2.1.1 / §8.3.2: 489 Bad Event, listing the packages in Allow-Events.
        #expect(rejection(presenceSubscribe(event: "dialog"))?.0 == 489)
        #expect(rejection(presenceSubscribe(event: nil))?.1[.allowEvents] == "presence")
    }

    @Test func tooShortIs423WithMinExpiresAndTooLongIsShortened() {
        let brief = rejection(presenceSubscribe(expires: "30"))
        #expect(brief?.0 == 423)
        #expect(brief?.1[.minExpires] == "60")
        #expect(accepted(presenceSubscribe(expires: "999999"))?.expires == 86_400)
        // RFC 3856 §6.4: no Expires → 3600; Expires 0 is a fetch, not too brief.
        #expect(accepted(presenceSubscribe(expires: nil))?.expires == 3600)
        #expect(accepted(presenceSubscribe(expires: "0"))?.expires == 0)
    }

    @Test func microsoftOptionTagsAreRecorded() {
        let t = accepted(presenceSubscribe(supported: "ms-piggyback-first-notify, ms-benotify"))
        #expect(t?.supportsPiggyback == true)
        #expect(t?.supportsBENotify == true)
    }
}
