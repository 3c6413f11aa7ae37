public import PresenceDocuments
public import XMLBridge

extension PresRules {
    /// What a rule's `transformations` grant a watcher of the presentity's PIDF (RFC 5025 §3.3):
    /// which tuples (services), persons and devices it is shown, and which of their attributes.
    /// Permissions only grant: what none grants is not shown. The permissions of the rules that
    /// match a watcher combine as RFC 4745 §10 says: the union of what each grants, the most
    /// detailed `provide-user-input`.
    public struct Permissions: Sendable, Hashable {
        /// Which tuples, persons or devices are shown (`provide-services`, `provide-persons`,
        /// `provide-devices`, RFC 5025 §3.3.1–§3.3.3): all of them, or those any selector names.
        public struct Selection: Sendable, Hashable {
            public var all = false
            /// `occurrence-id`: the element's `id`.
            public var occurrenceIDs: Set<String> = []
            /// `class`: the element's RPID `class` (RFC 4480 §3.3).
            public var classes: Set<String> = []
            /// `service-uri` and `service-uri-scheme`: a tuple's `contact` (services only).
            public var serviceURIs: Set<String> = []
            public var uriSchemes: Set<String> = []
            /// `deviceID` (devices only, RFC 4479 §3.3).
            public var deviceIDs: Set<String> = []
            /// OMA's `service-id` (services only, OMA-TS-Presence_SIMPLE_XDM): a tuple whose
            /// `op:service-description` has that `op:service-id`.
            public var serviceIDs: Set<String> = []

            public init() {}

            mutating func formUnion(_ other: Selection) {
                all = all || other.all
                occurrenceIDs.formUnion(other.occurrenceIDs)
                classes.formUnion(other.classes)
                serviceURIs.formUnion(other.serviceURIs)
                uriSchemes.formUnion(other.uriSchemes)
                deviceIDs.formUnion(other.deviceIDs)
                serviceIDs.formUnion(other.serviceIDs)
            }

            func selects(
                id: String, class: String?, contact: String? = nil, deviceID: String? = nil, serviceID: String? = nil
            ) -> Bool {
                if all || occurrenceIDs.contains(id) { return true }
                if let serviceID, serviceIDs.contains(serviceID) { return true }
                if let `class`, classes.contains(`class`) { return true }
                if let deviceID, deviceIDs.contains(deviceID) { return true }
                guard let contact else { return false }
                let scheme = contact.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() }
                return serviceURIs.contains(contact) || scheme.map(uriSchemes.contains) == true
            }
        }

        /// The RPID and PIDF attributes with a `provide-…` boolean (RFC 5025 §3.3.4).
        public enum Attribute: String, Sendable, Hashable, CaseIterable {
            case activities, `class`, deviceID, mood
            case placeIs = "place-is"
            case placeType = "place-type"
            case privacy
            case relationship
            case statusIcon = "status-icon"
            case sphere
            case timeOffset = "time-offset"
            case note
        }

        /// `provide-user-input` (RFC 5025 §3.3.4.12), in increasing detail.
        public enum UserInput: Int, Sendable, Hashable, Comparable {
            /// Not shown.
            case none
            /// `active` or `idle` only.
            case bare
            /// And the idle threshold.
            case thresholds
            /// And the time of the last input.
            case full

            public static func < (a: UserInput, b: UserInput) -> Bool { a.rawValue < b.rawValue }
        }

        public var services = Selection()
        public var persons = Selection()
        public var devices = Selection()
        public var attributes: Set<Attribute> = []
        public var userInput = UserInput.none
        /// `provide-unknown-attribute`: elements of other vocabularies (CIPID, capabilities,
        /// extensions) by namespace and local name; and the OMA elements OMA's `provide-*`
        /// grant (``omaGrants``).
        public var unknownAttributes: Set<XMLName> = []
        /// `provide-all-attributes`: every attribute of what is shown.
        public var allAttributes = false

        public init() {}

        /// What `self` or `other` grants.
        public func union(_ other: Permissions) -> Permissions {
            var union = self
            union.services.formUnion(other.services)
            union.persons.formUnion(other.persons)
            union.devices.formUnion(other.devices)
            union.attributes.formUnion(other.attributes)
            union.userInput = max(userInput, other.userInput)
            union.unknownAttributes.formUnion(other.unknownAttributes)
            union.allAttributes = allAttributes || other.allAttributes
            return union
        }

        /// Reads a rule's `transformations`; a transformation of another vocabulary grants
        /// nothing here.
        init(_ transformations: XMLElement) throws(XMLError) {
            for element in transformations.elements where element.name.namespace == PresRules.omaPresRules {
                try readOMA(element)
            }
            for element in transformations.elements where element.name.namespace == PresRules.presRules {
                switch element.name.local {
                case "provide-services": services = try Self.selection(element, all: "all-services")
                case "provide-persons": persons = try Self.selection(element, all: "all-persons")
                case "provide-devices": devices = try Self.selection(element, all: "all-devices")
                case "provide-user-input":
                    let levels: [String: UserInput] = [
                        "false": .none, "bare": .bare, "thresholds": .thresholds, "full": .full,
                    ]
                    guard let level = levels[element.trimmedText] else {
                        throw element.error(
                            "provide-user-input is false, bare, thresholds or full (RFC 5025 §3.3.4.12)")
                    }
                    userInput = max(userInput, level)
                case "provide-unknown-attribute":
                    guard let namespace = element[attribute: "ns"], let name = element[attribute: "name"] else {
                        throw element.error("provide-unknown-attribute needs ns and name (RFC 5025 §3.3.4.14)")
                    }
                    if try Self.boolean(element) { unknownAttributes.insert(XMLName(namespace, name)) }
                case "provide-all-attributes":
                    allAttributes = true
                default:
                    let local = element.name.local
                    guard local.hasPrefix("provide-"), let attribute = Attribute(rawValue: String(local.dropFirst(8)))
                    else { continue }
                    if try Self.boolean(element) { attributes.insert(attribute) }
                }
            }
        }

        private static func boolean(_ element: XMLElement) throws(XMLError) -> Bool {
            switch element.trimmedText {
            case "true", "1": return true
            case "false", "0": return false
            default: throw element.error("\(element.name.local) is true or false (xs:boolean)")
            }
        }

        private static func selection(_ element: XMLElement, all: String) throws(XMLError) -> Selection {
            var selection = Selection()
            for selector in element.elements {
                let value = selector.trimmedText
                switch selector.name.local {
                case all: selection.all = true
                case "occurrence-id": selection.occurrenceIDs.insert(value)
                case "class": selection.classes.insert(value)
                case "service-uri": selection.serviceURIs.insert(value)
                case "service-uri-scheme": selection.uriSchemes.insert(value.lowercased())
                case "deviceID": selection.deviceIDs.insert(value)
                case "service-id" where selector.name.namespace == PresRules.omaPresRules && all == "all-services":
                    selection.serviceIDs.insert(value)
                default: throw selector.error("<\(selector.name.local)> does not select in \(element.name.local)")
                }
            }
            return selection
        }

        /// `document` as a watcher with these permissions is shown it: only the tuples, persons
        /// and devices selected, each with only the attributes granted. Basic status, contact
        /// and timestamps stay with what is shown (RFC 5025 §3.3: the permissions govern the
        /// elements and their attributes).
        public func apply(to document: PIDFDocument) -> PIDFDocument {
            var shown = document
            shown.tuples = document.tuples.filter {
                services.selects(
                    id: $0.id, class: $0.rpid.class, contact: $0.contact?.uri, serviceID: Self.omaServiceID(of: $0))
            }.map { tuple in
                var tuple = tuple
                tuple.rpid = rpid(tuple.rpid)
                tuple.cipid = cipid(tuple.cipid)
                tuple.notes = grants(.note) ? tuple.notes : []
                tuple.deviceIDs = grants(.deviceID) ? tuple.deviceIDs : []
                tuple.extensions = tuple.extensions.filter { grants($0) || $0.name == Self.omaServiceDescription }
                tuple.status.rpid = rpid(tuple.status.rpid)
                tuple.status.extensions = tuple.status.extensions.filter(grants)
                if !grants(XMLName(NS.caps, "servcaps")) { tuple.status.capabilities = nil }
                return tuple
            }
            shown.persons = document.persons.filter { persons.selects(id: $0.id, class: $0.rpid.class) }.map { person in
                var person = person
                person.rpid = rpid(person.rpid)
                person.cipid = cipid(person.cipid)
                person.notes = grants(.note) ? person.notes : []
                person.extensions = person.extensions.filter(grants)
                return person
            }
            shown.devices = document.devices.filter {
                devices.selects(id: $0.id, class: $0.rpid.class, deviceID: $0.deviceID)
            }.map { device in
                var device = device
                device.rpid = rpid(device.rpid)
                device.notes = grants(.note) ? device.notes : []
                device.deviceID = grants(.deviceID) ? device.deviceID : nil
                device.extensions = device.extensions.filter(grants)
                return device
            }
            shown.notes = grants(.note) ? document.notes : []
            shown.cipid = cipid(document.cipid)
            shown.extensions = document.extensions.filter(grants)
            return shown
        }

        private func grants(_ attribute: Attribute) -> Bool { allAttributes || attributes.contains(attribute) }

        private func grants(_ name: XMLName) -> Bool { allAttributes || unknownAttributes.contains(name) }

        private func grants(_ element: XMLElement) -> Bool { grants(element.name) }

        /// The RPID elements granted; `service-class` has no `provide-…` of its own and is an
        /// unknown attribute here.
        private func rpid(_ rpid: RPID) -> RPID {
            guard !allAttributes, !rpid.isEmpty else { return rpid }
            var kept = RPID()
            if grants(.activities) {
                kept.activities = rpid.activities
                kept.legacyActivities = rpid.legacyActivities
            }
            if grants(.class) { kept.class = rpid.class }
            if grants(.mood) { kept.mood = rpid.mood }
            if grants(.placeIs) { kept.placeIs = rpid.placeIs }
            if grants(.placeType) { kept.placeType = rpid.placeType }
            if grants(.privacy) { kept.privacy = rpid.privacy }
            if grants(.relationship) { kept.relationship = rpid.relationship }
            if grants(.statusIcon) { kept.statusIcon = rpid.statusIcon }
            if grants(.sphere) { kept.sphere = rpid.sphere }
            if grants(.timeOffset) { kept.timeOffsets = rpid.timeOffsets }
            if grants(XMLName(NS.rpid, "service-class")) { kept.serviceClass = rpid.serviceClass }
            if var input = rpid.userInput, userInput > .none {
                if userInput < .thresholds { input.idleThreshold = nil }
                if userInput < .full { input.lastInput = nil }
                kept.userInput = input
            }
            return kept
        }

        /// The CIPID elements (RFC 4482) granted as unknown attributes by name.
        private func cipid(_ cipid: CIPID) -> CIPID {
            guard !allAttributes, !cipid.isEmpty else { return cipid }
            func granted(_ name: String) -> Bool { grants(XMLName(NS.cipid, name)) }
            return CIPID(
                displayNames: granted("display-name") ? cipid.displayNames : [],
                card: granted("card") ? cipid.card : nil, homepage: granted("homepage") ? cipid.homepage : nil,
                icon: granted("icon") ? cipid.icon : nil, map: granted("map") ? cipid.map : nil,
                sound: granted("sound") ? cipid.sound : nil)
        }
    }

    /// The combined permissions of the rules that match `watcher` (RFC 4745 §10), or nil when no
    /// rule matches (the configured defaults decided, and show everything the containers
    /// expose). A matching rule without `transformations` grants nothing.
    public func permissions(for watcher: WatcherIdentity) -> Permissions? {
        let matching = matchingRules(for: watcher)
        guard !matching.isEmpty else { return nil }
        return matching.reduce(Permissions()) { $0.union($1.permissions) }
    }
}
