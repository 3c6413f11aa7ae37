import SIPMessages
import _GatewayInternals

extension SubscriberSubscription {
    /// The parts of a ``Configuration`` that many subscriptions of one agent have in common —
    /// Contact, package, Event id, Accept, Supported, extra headers, body type — with the Event
    /// header as written. Held once (``SharedValue``) and referenced by each subscription.
    struct Profile: Sendable, Hashable {
        var contact: SIPAddress
        var package: SIPEventPackage
        var eventID: String?
        var accept: [String]
        var supported: [String]
        var extraHeaders: SIPHeaders
        var bodyType: String?
        var bodyGivenPerRequest: Bool
        var minInterval: UInt32?
        var maxInterval: UInt32?
        /// The Event header (RFC 6665 §8.2.1: `package;id=...`, with any RFC 6446 intervals).
        var event: String

        init(_ configuration: Configuration) {
            contact = configuration.contact
            package = configuration.package
            eventID = configuration.eventID
            accept = configuration.accept
            supported = configuration.supported
            extraHeaders = configuration.extraHeaders
            bodyType = configuration.bodyType
            bodyGivenPerRequest = configuration.bodyGivenPerRequest
            minInterval = configuration.minInterval
            maxInterval = configuration.maxInterval
            var header = SIPEvent(package: configuration.package.name)
            if let id = configuration.eventID { header.parameters.set("id", id) }
            // RFC 6446 asks in notifications per second: at most one per min-interval, at least
            // one per max-interval.
            if let minInterval, minInterval > 0 {
                header.parameters.set("max-rate", SubscriptionTerms.decimal(1 / Double(minInterval)))
            }
            if let maxInterval, maxInterval > 0 {
                header.parameters.set("min-rate", SubscriptionTerms.decimal(1 / Double(maxInterval)))
            }
            event = header.description
        }
    }

    /// A ``Configuration`` as a subscription keeps it for hours: the shared ``Profile``, the
    /// Request-URI, From and To as their wire text in one string (parsed again when the
    /// configuration is read: for a resubscription or a batch body), Expires and the body.
    struct StoredConfiguration: Sendable {
        var profile: SharedValue<Profile>
        private var addresses: Addresses
        var expires: UInt32
        var body: [UInt8]

        private enum Addresses: Sendable {
            /// Request-URI, From and To written out, joined by LF (no written URI or address
            /// contains one).
            case text(String)
            /// Values that do not read back from their written form (only possible for values
            /// built in code) are kept as they are.
            case parsed(SharedValue<Parsed>)
        }

        struct Parsed: Sendable, Hashable {
            var target: SIPURI
            var from: SIPAddress
            var to: SIPAddress
        }

        init(_ configuration: Configuration) {
            profile = Self.profiles.shared(Profile(configuration))
            expires = configuration.expires
            body = configuration.body
            let fields = [
                configuration.target.description, configuration.from.description, configuration.to.description,
            ]
            let readsBack =
                !fields.contains { $0.utf8.contains(0x0A) }
                && (try? SIPURI(fields[0])) == configuration.target
                && (try? SIPAddress(fields[1])) == configuration.from
                && (try? SIPAddress(fields[2])) == configuration.to
            addresses =
                readsBack
                ? .text(fields.linesInExactCapacity())
                : .parsed(
                    SharedValue(
                        Parsed(
                            target: configuration.target.detached, from: configuration.from.detached,
                            to: configuration.to.detached)))
        }

        var configuration: Configuration {
            let parsed: Parsed
            switch addresses {
            case .parsed(let box):
                parsed = box.value
            case .text(let text):
                let fields = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                // Verified to read back when stored; the fallbacks are never taken.
                let empty = SIPURI(host: "")
                let target = fields.count == 3 ? (try? SIPURI(fields[0])) ?? empty : empty
                let from =
                    fields.count == 3 ? (try? SIPAddress(fields[1])) ?? SIPAddress(uri: empty) : SIPAddress(uri: empty)
                let to =
                    fields.count == 3 ? (try? SIPAddress(fields[2])) ?? SIPAddress(uri: empty) : SIPAddress(uri: empty)
                parsed = Parsed(target: target, from: from, to: to)
            }
            let p = profile.value
            return Configuration(
                target: parsed.target, from: parsed.from, to: parsed.to, contact: p.contact,
                package: p.package, eventID: p.eventID, accept: p.accept, expires: expires,
                supported: p.supported, extraHeaders: p.extraHeaders, body: body, bodyType: p.bodyType,
                bodyGivenPerRequest: p.bodyGivenPerRequest, minInterval: p.minInterval, maxInterval: p.maxInterval)
        }

        static let profiles = SharedValueTable<Profile>()
    }
}
