import Foundation
import PresenceGateway
import Testing
import XMLBridge

/// RFC 4745 §7.3 validity conditions in pres-rules: a rule applies only within one of its
/// `from`/`until` intervals (xs:dateTime with a time zone); ``PresRules/inForce(at:)`` decides
/// them, and a rule whose validity is undecided never matches.
@Suite struct PresRulesValidityTests {
    static let bob = WatcherIdentity(uri: "sip:bob@contoso.com", network: .sameEnterprise)!

    static func rules(_ validity: String, handling: String = "allow") throws -> PresRules {
        try PresRules(bytes: Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules">
              <cr:rule id="office"><cr:conditions>
                <cr:identity><cr:one id="sip:bob@contoso.com"/></cr:identity>
                \(validity)
              </cr:conditions><cr:actions><pr:sub-handling>\(handling)</pr:sub-handling></cr:actions></cr:rule>
              <cr:rule id="always"><cr:conditions><cr:identity><cr:many domain="contoso.com"/></cr:identity></cr:conditions>
                <cr:actions><pr:sub-handling>confirm</pr:sub-handling></cr:actions></cr:rule>
            </cr:ruleset>
            """.utf8))
    }

    static func date(_ text: String) throws -> Date { try #require(ISO8601DateFormatter().date(from: text)) }

    /// Two intervals, in two time zones: the rule holds from each `from` up to its `until`.
    @Test func aRuleAppliesOnlyWithinItsIntervals() throws {
        let rules = try Self.rules("""
            <cr:validity><cr:from>2026-11-26T09:00:00+01:00</cr:from><cr:until>2026-11-26T17:00:00+01:00</cr:until>
            <cr:from>2026-11-27T08:00:00Z</cr:from><cr:until>2026-11-27T16:00:00.500Z</cr:until></cr:validity>
            """)
        #expect(rules.dependsOnTime)
        // Undecided, the rule does not match: only "always" (confirm) does.
        #expect(rules.subHandling(for: Self.bob) == .confirm)
        for (time, expected) in [
            ("2026-11-26T07:59:59Z", SubHandling.confirm), ("2026-11-26T08:00:00Z", .allow), ("2026-11-26T15:59:59Z", .allow),
            ("2026-11-26T16:00:00Z", .confirm), ("2026-11-27T12:00:00Z", .allow), ("2026-11-28T12:00:00Z", .confirm),
        ] {
            let inForce = rules.inForce(at: try Self.date(time))
            #expect(inForce.subHandling(for: Self.bob) == expected, "\(time)")
            #expect(!inForce.dependsOnTime)
        }
        #expect(rules.inForce(at: try Self.date("2026-11-26T10:00:00Z")).rules.map(\.id) == ["office", "always"])
        #expect(rules.inForce(at: try Self.date("2026-11-26T20:00:00Z")).rules.map(\.id) == ["always"])
        // A rule without validity is in force at any time, unchanged.
        let plain = try Self.rules("")
        #expect(!plain.dependsOnTime && plain.inForce(at: Date()) == plain)
    }

    @Test(arguments: [
        ("<cr:validity><cr:from>2026-11-26T09:00:00Z</cr:from></cr:validity>", "in pairs"),
        ("<cr:validity><cr:until>2026-11-26T09:00:00Z</cr:until><cr:from>2026-11-26T08:00:00Z</cr:from></cr:validity>", "in pairs"),
        ("<cr:validity/>", "in pairs"),
        ("<cr:validity><cr:from>2026-11-26T09:00:00</cr:from><cr:until>2026-11-26T10:00:00Z</cr:until></cr:validity>", "time zone"),
        ("<cr:validity><cr:from>tomorrow</cr:from><cr:until>2026-11-26T10:00:00Z</cr:until></cr:validity>", "xs:dateTime"),
        ("<cr:validity><cr:from>2026-11-26T10:00:00Z</cr:from><cr:until>2026-11-26T10:00:00Z</cr:until></cr:validity>", "not after"),
        (String(repeating: "<cr:validity><cr:from>2026-11-26T09:00:00Z</cr:from><cr:until>2026-11-26T10:00:00Z</cr:until></cr:validity>", count: 2),
         "a second <validity>"),
    ])
    func aBadValidityIsALocatedError(validity: String, message: String) {
        let error = #expect(throws: XMLError.self) { try Self.rules(validity) }
        #expect(error?.line == 5, "\(String(describing: error))")
        #expect(error?.message.contains(message) == true, "\(String(describing: error))")
    }
}
