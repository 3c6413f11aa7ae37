public import Foundation
import PresenceDocuments
public import XMLBridge

extension PresRules {
    /// OMA's condition namespace (OMA-TS-XDM_Core, schema xdm_commonPolicy-v1_0).
    public static let omaCommonPolicy = "urn:oma:xml:xdm:common-policy"
    /// OMA's pres-rules extensions (OMA-TS-Presence_SIMPLE_XDM, Presence Authorization Rules).
    public static let omaPresRules = "urn:oma:xml:prs:pres-rules"

    /// OMA's condition extensions of a rule (OMA-TS-Presence_SIMPLE_XDM, "Presence Authorization
    /// Rules"; the elements and their content as schema xdm_commonPolicy-v1_0 gives them):
    ///
    /// ```
    /// <xs:element name="other-identity" type="emptyType"/>
    /// <xs:element name="external-list"> <xs:sequence>
    ///   <xs:element name="entry" type="anchorType" minOccurs="0" maxOccurs="unbounded"/>
    /// </xs:sequence> </xs:element>          <!-- anchorType: attribute anc, xs:anyURI -->
    /// <xs:element name="anonymous-request" type="emptyType"/>
    /// ```
    ///
    /// Each is one more condition of its rule, so all must hold (RFC 4745 §7):
    /// - `external-list`: the watcher is an entry of one of the lists its entries' `anc` name.
    ///   A list is resolved before rules are evaluated (``PresRules/resolvingExternalLists(_:)``);
    ///   one that could not be resolved names nobody, so the condition does not hold.
    /// - `anonymous-request`: the request is anonymous (``WatcherIdentity/isAnonymous``).
    /// - `other-identity`: no rule's `identity` or `external-list` condition names the watcher.
    public struct OMAConditions: Sendable, Hashable {
        public var externalLists: [ExternalList]?
        public var anonymousRequest = false
        public var otherIdentity = false

        public init(externalLists: [ExternalList]? = nil, anonymousRequest: Bool = false, otherIdentity: Bool = false) {
            self.externalLists = externalLists
            self.anonymousRequest = anonymousRequest
            self.otherIdentity = otherIdentity
        }

        func holds(for watcher: WatcherIdentity, otherIdentity isOther: Bool) -> Bool {
            if anonymousRequest && !watcher.isAnonymous { return false }
            if otherIdentity && !isOther { return false }
            if externalLists != nil && (watcher.isAnonymous || !listsName(watcher)) { return false }
            return true
        }

        func listsName(_ watcher: WatcherIdentity) -> Bool {
            externalLists?.contains { $0.members?.contains(watcher.uri) == true } == true
        }

        /// Reads one condition of OMA's namespace; an element of it this gateway does not know
        /// makes the rule never apply (RFC 4745 §7), as any unknown condition does.
        mutating func read(_ condition: XMLElement, unsupported: inout Bool) throws(XMLError) {
            switch condition.name.local {
            case "anonymous-request": anonymousRequest = true
            case "other-identity": otherIdentity = true
            case "external-list":
                var lists = externalLists ?? []
                for entry in condition.elements where entry.name == XMLName(PresRules.omaCommonPolicy, "entry") {
                    // anchorType's anc is optional: an entry without one names no list.
                    guard let anchor = entry[attribute: "anc"]?.trimmingCharacters(in: .whitespaces), !anchor.isEmpty
                    else { continue }
                    guard anchor.utf8.count <= ExternalList.maximumAnchorBytes else {
                        throw entry.error("external-list anc longer than \(ExternalList.maximumAnchorBytes) bytes")
                    }
                    lists.append(ExternalList(anchor: anchor))
                }
                externalLists = lists
            default:
                unsupported = true
            }
        }
    }

    /// One list an `external-list` entry names by its `anc` URI, with its members once resolved.
    public struct ExternalList: Sendable, Hashable {
        /// An `anc` longer than this is refused with the document (RFC 3986 sets no bound).
        public static let maximumAnchorBytes = 2048

        public var anchor: String
        /// The addresses of record in the list; nil until resolved, and when it could not be.
        public var members: Set<String>?

        public init(anchor: String, members: Set<String>? = nil) {
            self.anchor = anchor
            self.members = members
        }
    }

    /// The `anc` of every `external-list` entry not resolved yet, each once, in document order.
    public var unresolvedExternalLists: [String] {
        var seen: [String] = []
        for rule in rules {
            for list in rule.oma.externalLists ?? [] where list.members == nil && !seen.contains(list.anchor) {
                seen.append(list.anchor)
            }
        }
        return seen
    }

    /// Some rule has an `external-list` condition: what it allows changes with the lists.
    public var dependsOnLists: Bool { rules.contains { $0.oma.externalLists != nil } }

    /// The rules with each unresolved `external-list` entry that `lookup` knows resolved to its
    /// members (addresses of record, ``WatcherIdentity/addressOfRecord(_:)``); an entry `lookup`
    /// answers nil for stays unresolved and names nobody.
    public func resolvingExternalLists(_ lookup: (String) -> [String]?) -> PresRules {
        guard dependsOnLists else { return self }
        var resolved = self
        for r in resolved.rules.indices {
            guard var lists = resolved.rules[r].oma.externalLists else { continue }
            for l in lists.indices where lists[l].members == nil {
                if let members = lookup(lists[l].anchor) {
                    lists[l].members = Set(members.compactMap(WatcherIdentity.addressOfRecord))
                }
            }
            resolved.rules[r].oma.externalLists = lists
        }
        return resolved
    }
}

extension PresRules.Permissions {
    /// OMA's PIDF extension namespace (OMA-TS-Presence_SIMPLE, its PIDF extensions).
    static let omaPres = "urn:oma:xml:prs:pidf:oma-pres"
    /// RFC 4119 §2.2.1 (PIDF-LO `geopriv`).
    static let geopriv = "urn:ietf:params:xml:ns:pidf:geopriv10"
    /// A tuple's OMA service description: shown with the tuple it describes (product decision:
    /// OMA's pres-rules have no `provide-service-description`; the tuple's `provide-services`
    /// selection, `service-id` among its selectors, already shows which service it is).
    static let omaServiceDescription = XMLName(omaPres, "service-description")

    /// The PIDF elements each OMA boolean `provide-*` transformation lets through
    /// (OMA-TS-Presence_SIMPLE_XDM, Presence Authorization Rules: transformations; the
    /// elements of OMA-TS-Presence_SIMPLE's PIDF extensions that each names).
    public static let omaGrants: [String: [XMLName]] = [
        "provide-willingness": [XMLName(omaPres, "willingness"), XMLName(omaPres, "overriding-willingness")],
        "provide-network-availability": [XMLName(omaPres, "network-availability")],
        "provide-session-participation": [XMLName(omaPres, "session-participation")],
        "provide-registration-state": [XMLName(omaPres, "registration-state")],
        "provide-barring-state": [XMLName(omaPres, "barring-state")],
    ]

    /// One transformation of OMA's namespace: a boolean `provide-*` grants its elements;
    /// `provide-geopriv` grants the PIDF-LO `geopriv` element at `full` and nothing at `false`
    /// (any other value grants nothing: the least disclosure). Other OMA transformations grant
    /// nothing here.
    mutating func readOMA(_ element: XMLElement) throws(XMLError) {
        let local = element.name.local
        if local == "provide-geopriv" {
            if element.trimmedText == "full" { unknownAttributes.insert(XMLName(Self.geopriv, "geopriv")) }
            return
        }
        guard let names = Self.omaGrants[local] else { return }
        switch element.trimmedText {
        case "true", "1": unknownAttributes.formUnion(names)
        case "false", "0": break
        default: throw element.error("\(local) is true or false (xs:boolean)")
        }
    }

    /// The `op:service-id` of a tuple's `op:service-description`, if it has one.
    static func omaServiceID(of tuple: PIDFTuple) -> String? {
        tuple.extensions.first { $0.name == omaServiceDescription }?
            .elements.first { $0.name == XMLName(omaPres, "service-id") }?.trimmedText
    }
}
