public import PresenceDocuments
import XMLBridge

extension PresenceMapper {
    /// Categories → msrtc.pidf through [MS-PRES] §3.7.5.5 (`availability-msrtc.tsv`),
    /// with displayName, email and phoneNumber from the contact card.
    public func msrtc(from doc: CategoriesDocument) -> (MSRTCPresentity, MappingReport) {
        var report = MappingReport()
        let doc = onePublicationPerInstance(doc, report: &report)
        let effective = effectiveState(doc, report: &report)
        // The spec examples write the presentity without "sip:" (2.2.2.9.2, 4.11).
        let uri = doc.uri.hasPrefix("sip:") ? String(doc.uri.dropFirst(4)) : doc.uri
        var output = MSRTCPresentity(uri: uri)
        // Nothing published (or no container): offline, as the server's 32000 view (4.13: 18500).
        let availability = effective.availability ?? 18500
        if effective.availability == nil { report.map("state (absent)", "treated as 18500, offline") }
        if let row = msrtcRow(availability, effective.token) {
            let text = row.stateFromToken ? (effective.token?.rawValue ?? row.stateText) : row.stateText
            output.availabilityAggregate = row.availabilityAggregate
            output.activityAggregate = row.activityAggregate
            output.states = [MSRTCPresentity.AggregateState(avail: row.avail, text: text)]
            report.map(
                "state/availability=\(availability)",
                "avail \(row.avail), state \"\(text)\", aggregates \(row.availabilityAggregate)/\(row.activityAggregate) (\(row.source))"
            )
        }
        if let token = effective.token {
            report.map(
                "state/activity/@token=\(token)", "state text where the MS-PRES 3.7.5.5 row says Any or names it")
        }
        if effective.custom != nil {
            report.drop(
                "state/activity/custom", "custom activities never reach msrtc.pidf (MS-PRES 3.7.5.5 uses the token)")
        }
        reportPublicationAttributes(doc, uriTo: "presentity/@uri", report: &report)
        if let state = effective.state, let fields = Self.detailFields(of: state) {
            report.drop("state/" + fields, "msrtc.pidf has no element for it (MS-PRES 2.2.2.9.2)")
        }
        for category in doc.categories {
            switch category.payload {
            case .contactCard(let card):
                if output.displayName == nil, let name = card.displayNames.first?.text {
                    output.displayName = name
                    report.map("contactCard/displayName", "displayName")
                }
                if output.email == nil, let email = card.emails.first {
                    output.email = email
                    report.map("contactCard/email", "email")
                }
                let phone = card.phones.first { $0.type == "work" } ?? card.phones.first
                if output.phoneNumber == nil, let phone {
                    output.phoneNumber = phone.displayStrings.first?.text ?? Self.number(fromTelURI: phone.uri)
                    report.map("contactCard/phone", "phoneNumber")
                }
            case .state, .legacyInterop, .none:
                break
            default:
                report.drop(category.name.rawValue, "msrtc.pidf has no element for it")
            }
        }
        return (output, report)
    }

    /// The number of a tel URI, without the scheme and parameters.
    static func number(fromTelURI uri: String) -> String {
        var s = Substring(uri)
        if s.lowercased().hasPrefix("tel:") { s = s.dropFirst(4) }
        return String(s.prefix { $0 != ";" })
    }

    /// msrtc.pidf → categories (legacy partners): avail is an enhanced
    /// availability already; the state text becomes a token when it is one
    /// (`msrtc-states.tsv`).
    public func categories(from doc: MSRTCPresentity) -> (CategoriesDocument, MappingReport) {
        var report = MappingReport()
        let uri = doc.uri.contains(":") ? doc.uri : "sip:" + doc.uri
        var output = CategoriesDocument(uri: uri)
        if let state = doc.states.first {
            var ms = MSState(
                type: .aggregateState,
                availability: state.avail ?? doc.availabilityAggregate.map(Self.availability(fromAggregate:)))
            let text = state.text.trimmingXMLWhitespace()
            if let known = tables.msrtcStates[text] {
                if let token = known { ms.activities = [MSActivity(token: token)] }
                report.map(
                    "aggregate/states/state",
                    "availability \(ms.availability.map(String.init) ?? "none")" + (known.map { ", token \($0)" } ?? "")
                )
            } else if tables.msActivityTokens.contains(MSActivityToken(text)) {
                ms.activities = [MSActivity(token: MSActivityToken(text))]
                report.map("aggregate/states/state", "token \(text)")
            } else if !text.isEmpty {
                ms.activities = [MSActivity(custom: [.init(text)])]
                report.map("aggregate/states/state", "custom activity \"\(text)\"")
            }
            output.categories.append(Category(name: .state, instance: 0, payload: .state(ms)))
        } else if let aggregate = doc.availabilityAggregate {
            let ms = MSState(type: .aggregateState, availability: Self.availability(fromAggregate: aggregate))
            output.categories.append(Category(name: .state, instance: 0, payload: .state(ms)))
            report.map("availability/@aggregate", "availability \(Self.availability(fromAggregate: aggregate))")
        }
        if doc.activityAggregate != nil {
            report.drop("activity/@aggregate", "implied by the state; [MS-SIP] code, not needed")
        }
        report.map("presentity/@uri", "categories/@uri (with sip:)")
        var card = ContactCard()
        if let name = doc.displayName {
            card.displayNames = [.init(name)]
            report.map("displayName", "contactCard displayName")
        }
        if let email = doc.email {
            card.emails = [email]
            report.map("email", "contactCard email")
        }
        if let number = doc.phoneNumber {
            card.phones = [
                .init(type: "work", uri: "tel:" + number.filter { !$0.isWhitespace }, displayStrings: [.init(number)])
            ]
            report.map("phoneNumber", "contactCard phone (work)")
        }
        if card != ContactCard() {
            output.categories.append(Category(name: .contactCard, instance: 0, payload: .contactCard(card)))
        }
        for e in doc.extensions { report.drop(e.name.local, "unknown msrtc element") }
        return (output, report)
    }

    /// An availability for an msrtc document that has only the [MS-SIP]
    /// availability aggregate: 0 → offline, otherwise online (§3.7.5.5 uses 0
    /// for the offline rows and 300 for all others).
    static func availability(fromAggregate aggregate: UInt32) -> UInt32 { aggregate == 0 ? 18500 : 3500 }
}
