public import Foundation
public import XMLBridge

/// A presence authorization document: an RFC 4745 common-policy `ruleset` with the RFC 5025
/// pres-rules `sub-handling` action, as an OMA/IMS presentity stores it in its XDMS
/// (PacketCable Presence §6.3.5).
///
/// ```
/// <cr:ruleset xmlns:cr="urn:ietf:params:xml:ns:common-policy" xmlns:pr="urn:ietf:params:xml:ns:pres-rules">
///   <cr:rule id="...">
///     <cr:conditions> <cr:identity> <cr:one id="sip:.."/> | <cr:many domain="..."> <cr:except id|domain/>* </cr:many> </cr:identity> </cr:conditions>
///     <cr:actions> <pr:sub-handling>block|confirm|polite-block|allow</pr:sub-handling> </cr:actions>
///     <cr:transformations> ... </cr:transformations>
///   </cr:rule>*
/// </cr:ruleset>
/// ```
///
/// Supported: identity conditions (`one`, `many` with and without `domain`, `except`), validity
/// (RFC 4745 §7.3: the rule applies only within one of its intervals; ``inForce(at:)``), sphere
/// (RFC 4745 §7.2: only while the presentity is in one of the spheres named;
/// ``decidingSphere(_:)``), OMA's condition extensions (`external-list`, `anonymous-request`,
/// `other-identity`, OMA-TS-Presence_SIMPLE_XDM "Presence Authorization Rules", schema
/// xdm_commonPolicy-v1_0; PresRules+OMA.swift), and the absence of conditions (matches every
/// watcher, RFC 4745 §7). A rule with any other condition never matches: RFC 4745 §7 makes a
/// rule apply only when all its conditions hold, and a condition this gateway cannot evaluate
/// does not hold. Transformations are the watcher's ``Permissions`` (RFC 5025 §3.3, with OMA's
/// `provide-*`).
public struct PresRules: Sendable, Hashable {
    public struct Rule: Sendable, Hashable {
        public var id: String
        /// nil: no `conditions` (or an empty one) — the rule applies to everyone.
        public var identities: [Identity]?
        /// A condition other than identity, validity and sphere was present: the rule never applies.
        public var hasUnsupportedCondition: Bool
        /// The spheres of a `sphere` condition (RFC 4745 §7.2, its `value` split at spaces); nil:
        /// any. Like ``validity``, a rule that still has them does not match: only
        /// ``PresRules/decidingSphere(_:)``, which knows the presentity's sphere, decides them.
        public var spheres: Set<String>?
        /// The `validity` intervals (RFC 4745 §7.3), each from its start up to, not including, its
        /// end; nil: valid at any time. A rule that still has them does not match: only
        /// ``PresRules/inForce(at:)``, which knows the time, decides them.
        public var validity: [Range<Date>]?
        public var subHandling: SubHandling?
        /// What its `transformations` grant (none without them).
        public var permissions: Permissions
        /// OMA's conditions (`external-list`, `anonymous-request`, `other-identity`).
        public var oma: OMAConditions

        public init(
            id: String, identities: [Identity]?, hasUnsupportedCondition: Bool = false, spheres: Set<String>? = nil,
            validity: [Range<Date>]? = nil, subHandling: SubHandling?, permissions: Permissions = Permissions(),
            oma: OMAConditions = OMAConditions()
        ) {
            self.id = id
            self.identities = identities
            self.hasUnsupportedCondition = hasUnsupportedCondition
            self.spheres = spheres
            self.validity = validity
            self.subHandling = subHandling
            self.permissions = permissions
            self.oma = oma
        }

        /// Whether every condition holds for `watcher` (RFC 4745 §7). `otherIdentity`: no rule
        /// of the ruleset names the watcher (``PresRules/matchingRules(for:)`` decides it, as
        /// OMA's `other-identity` needs the whole ruleset). An identity condition names an
        /// authenticated identity (RFC 4745 §7.1): an anonymous request never meets one.
        public func matches(_ watcher: WatcherIdentity, otherIdentity: Bool = false) -> Bool {
            guard !hasUnsupportedCondition, validity == nil, spheres == nil else { return false }
            guard oma.holds(for: watcher, otherIdentity: otherIdentity) else { return false }
            guard let identities else { return true }
            return !watcher.isAnonymous && identities.contains { $0.matches(watcher) }
        }

        /// Whether its `identity` or OMA `external-list` condition names `watcher`: what OMA's
        /// `other-identity` looks for in the other rules.
        func names(_ watcher: WatcherIdentity) -> Bool {
            guard !watcher.isAnonymous else { return false }
            return identities?.contains { $0.matches(watcher) } == true || oma.listsName(watcher)
        }
    }

    /// One `identity` child (RFC 4745 §7.1).
    public enum Identity: Sendable, Hashable {
        /// `<one id="sip:user@host"/>`.
        case one(String)
        /// `<many domain="d">` (nil: any authenticated identity) with its `except` entries.
        case many(domain: String?, exceptIDs: [String], exceptDomains: [String])

        func matches(_ watcher: WatcherIdentity) -> Bool {
            switch self {
            case .one(let id):
                return id == watcher.uri
            case .many(let domain, let exceptIDs, let exceptDomains):
                if let domain, domain != watcher.domain { return false }
                return !exceptIDs.contains(watcher.uri) && !exceptDomains.contains(watcher.domain)
            }
        }
    }

    public static let commonPolicy = "urn:ietf:params:xml:ns:common-policy"
    public static let presRules = "urn:ietf:params:xml:ns:pres-rules"

    public var rules: [Rule]

    public init(rules: [Rule] = []) { self.rules = rules }

    /// The combined `sub-handling` of every rule that matches (RFC 4745 §10.2: the largest value);
    /// nil when no matching rule grants one (the caller's default applies, RFC 5025 §3.2.1 makes
    /// it `block`).
    public func subHandling(for watcher: WatcherIdentity) -> SubHandling? {
        matchingRules(for: watcher).compactMap(\.subHandling).max()
    }

    /// The rules whose conditions all hold for `watcher`. OMA's `other-identity` holds when no
    /// rule's `identity` or `external-list` condition names the watcher (and the request is
    /// not anonymous: it names no identity to be another).
    public func matchingRules(for watcher: WatcherIdentity) -> [Rule] {
        let other = !watcher.isAnonymous && !rules.contains { $0.names(watcher) }
        return rules.filter { $0.matches(watcher, otherIdentity: other) }
    }

    /// The rules that apply at `date`: those without validity, and those with an interval that
    /// holds `date` (RFC 4745 §7.3), their validity then decided; the others are left out.
    public func inForce(at date: Date) -> PresRules {
        PresRules(
            rules: rules.compactMap { rule in
                guard let validity = rule.validity else { return rule }
                guard validity.contains(where: { $0.contains(date) }) else { return nil }
                var decided = rule
                decided.validity = nil
                return decided
            })
    }

    /// Some rule has validity intervals: ``inForce(at:)`` changes with time.
    public var dependsOnTime: Bool { rules.contains { $0.validity != nil } }

    /// The rules that apply while the presentity is in `sphere` (its RPID `sphere`, RFC 4480
    /// §3.12; nil: it publishes none): those without a sphere condition, and those naming it, the
    /// condition then decided (RFC 4745 §7.2).
    public func decidingSphere(_ sphere: String?) -> PresRules {
        PresRules(
            rules: rules.compactMap { rule in
                guard let spheres = rule.spheres else { return rule }
                guard let sphere, spheres.contains(sphere) else { return nil }
                var decided = rule
                decided.spheres = nil
                return decided
            })
    }

    /// Some rule has a sphere condition: ``decidingSphere(_:)`` changes with the presentity's state.
    public var dependsOnSphere: Bool { rules.contains { $0.spheres != nil } }

    /// Parses a ruleset. Errors carry line and column.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        let root = try XMLParser.parse(bytes, limits: limits)
        guard root.name == XMLName(Self.commonPolicy, "ruleset") else {
            throw root.error("expected a common-policy ruleset, found \(root.name)")
        }
        var rules: [Rule] = []
        for rule in root.elements(XMLName(Self.commonPolicy, "rule")) {
            rules.append(try Self.rule(rule))
        }
        self.init(rules: rules)
    }

    /// One `rule` (RFC 4745 §5): its conditions, its `sub-handling` action (RFC 5025 §3.2.1) and
    /// what its transformations grant.
    private static func rule(_ rule: XMLElement) throws(XMLError) -> Rule {
        guard let id = rule[attribute: "id"] else { throw rule.error("rule without id (RFC 4745 §5)") }
        var parsed = Rule(id: id, identities: nil, subHandling: nil)
        if let conditions = rule.element(XMLName(Self.commonPolicy, "conditions")) {
            try Self.readConditions(conditions, into: &parsed)
        }
        if let actions = rule.element(XMLName(Self.commonPolicy, "actions")),
            let sub = actions.element(XMLName(Self.presRules, "sub-handling"))
        {
            guard let value = SubHandling(token: sub.trimmedText) else {
                throw sub.error("sub-handling must be block, confirm, polite-block or allow (RFC 5025 §3.2.1)")
            }
            parsed.subHandling = value
        }
        if let transformations = rule.element(XMLName(Self.commonPolicy, "transformations")) {
            parsed.permissions = try Permissions(transformations)
        }
        return parsed
    }

    /// A rule's `conditions` (RFC 4745 §7): its validity, sphere and identity conditions; any
    /// other condition marks the rule as never applying.
    private static func readConditions(_ conditions: XMLElement, into rule: inout Rule) throws(XMLError) {
        for condition in conditions.elements {
            if condition.name == XMLName(Self.commonPolicy, "validity") {
                guard rule.validity == nil else { throw condition.error("a second <validity> (RFC 4745 §7)") }
                rule.validity = try Self.intervals(condition)
                continue
            }
            if condition.name == XMLName(Self.commonPolicy, "sphere") {
                guard let value = condition[attribute: "value"],
                    case let named = value.split(whereSeparator: \.isWhitespace).map(String.init),
                    !named.isEmpty
                else { throw condition.error("<sphere> needs a value (RFC 4745 §7.2)") }
                guard rule.spheres == nil else { throw condition.error("a second <sphere> (RFC 4745 §7)") }
                rule.spheres = Set(named)
                continue
            }
            if condition.name.namespace == Self.omaCommonPolicy {
                var unsupported = false
                try rule.oma.read(condition, unsupported: &unsupported)
                if unsupported { rule.hasUnsupportedCondition = true }
                continue
            }
            guard condition.name == XMLName(Self.commonPolicy, "identity") else {
                rule.hasUnsupportedCondition = true
                continue
            }
            var list = rule.identities ?? []
            for entry in condition.elements {
                if let identity = try Self.identity(entry) {
                    list.append(identity)
                } else {
                    rule.hasUnsupportedCondition = true
                }
            }
            rule.identities = list
        }
    }

    /// One child of an `identity` condition (RFC 4745 §7.1): `one` or `many` with its `except`
    /// entries; nil for any other, which the rule cannot evaluate.
    private static func identity(_ entry: XMLElement) throws(XMLError) -> Identity? {
        switch entry.name {
        case XMLName(Self.commonPolicy, "one"):
            guard let id = entry[attribute: "id"], let uri = WatcherIdentity.addressOfRecord(id) else {
                throw entry.error("identity <one> needs an id of the form sip:user@host")
            }
            return .one(uri)
        case XMLName(Self.commonPolicy, "many"):
            var ids: [String] = []
            var domains: [String] = []
            for except in entry.elements(XMLName(Self.commonPolicy, "except")) {
                if let id = except[attribute: "id"], let uri = WatcherIdentity.addressOfRecord(id) {
                    ids.append(uri)
                } else if let domain = except[attribute: "domain"] {
                    domains.append(domain.lowercased())
                } else {
                    throw except.error("<except> needs an id or a domain")
                }
            }
            return .many(domain: entry[attribute: "domain"]?.lowercased(), exceptIDs: ids, exceptDomains: domains)
        default:
            return nil
        }
    }

    /// A `validity` condition's `from`/`until` pairs (RFC 4745 §7.3), each an xs:dateTime with
    /// its time zone.
    private static func intervals(_ validity: XMLElement) throws(XMLError) -> [Range<Date>] {
        var intervals: [Range<Date>] = []
        var start: Date?
        for bound in validity.elements {
            let isFrom = bound.name == XMLName(commonPolicy, "from")
            guard isFrom || bound.name == XMLName(commonPolicy, "until"), isFrom == (start == nil) else {
                throw bound.error("<validity> holds <from> and <until> in pairs (RFC 4745 §7.3)")
            }
            guard let time = dateTime(bound.trimmedText) else {
                throw bound.error("'\(bound.trimmedText)' is not an xs:dateTime with a time zone")
            }
            if let from = start {
                guard from < time else { throw bound.error("<until> is not after its <from>") }
                intervals.append(from..<time)
                start = nil
            } else {
                start = time
            }
        }
        guard start == nil, !intervals.isEmpty else {
            throw validity.error("<validity> holds <from> and <until> in pairs (RFC 4745 §7.3)")
        }
        return intervals
    }

    /// An xs:dateTime with a time zone (`Z` or `±hh:mm`), with or without fractional seconds.
    private static func dateTime(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}
