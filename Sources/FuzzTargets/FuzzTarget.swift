import Foundation
import Multipart
import PresenceDocuments
public import PresenceGateway
import PresenceMapping
import SIPMessages
import XMLBridge

/// One fuzz target: a named entry function over arbitrary bytes (README, "Fuzzing and soak").
///
/// ``check(_:)`` never traps on its own: it returns what property failed (nil when none did),
/// and the libFuzzer harness (`presence-fuzz`) turns a failure into a crash. The properties:
/// nothing traps; a SIP message that parses serializes and parses back to the same bytes; a
/// stream frames the same however it is cut; everything the project writes as XML parses again
/// and decodes again with the codec that wrote it; the gateway core survives any message from
/// either side.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// RFC 3261 §7 messages as one datagram: parse, serialize, parse again, compare.
    case sip
    /// RFC 3261 §18.3 stream framing, cut at input-chosen points, then each framed message as `sip`.
    case framer
    /// The XML bridge: parse (namespaces, limits, no DTD or entities), write, parse again.
    case xml
    /// `application/pidf+xml` (RFC 3863, RFC 4479, RFC 4480, RFC 4482) through ``PIDFDocument``.
    case pidf
    /// `application/msrtc-event-categories+xml` ([MS-PRES] §2.2.2.1) through ``CategoriesDocument``.
    case categories
    /// `text/xml+msrtc.pidf` ([MS-PRES] §2.2.2.9) through ``MSRTCPresentity``.
    case msrtc
    /// `application/msrtc-adrl-categorylist+xml` ([MS-PRES] §2.2.2.4.1) through ``BatchSubscribe``.
    case batchsub
    /// `application/rlmi+xml` (RFC 4662 §5) through ``RLMIList``, strict and lenient.
    case rlmi
    /// `application/pidf-diff+xml` (RFC 5262) through ``PIDFDiff``: full state reads back as
    /// written; a diff's operations (RFC 5261) applied to a presence document apply or fail, and
    /// what they leave is XML that parses.
    case pidfDiff = "pidf-diff"
    /// `application/simple-filter+xml` (RFC 4661) through ``SimpleFilter``: each filter read is
    /// applied to a presence document and its triggers evaluated; what it leaves is XML that parses.
    case simpleFilter = "simple-filter"
    /// A pres-rules document (RFC 5025, as an XCAP server may serve it) through ``PresRules``: its
    /// rules in force now, in sphere `work`, decide a watcher, and what its transformations show of a presence
    /// document reads back as PIDF.
    case presRules = "pres-rules"
    /// An RFC 4826 `rls-services` document (a file, or as an XCAP server may serve it) read as the
    /// lists the gateway serves: each list and member an enterprise address of record, each list
    /// with 1 to the limit of members, none repeated, none a list itself.
    case rlsServices = "rls-services"
    /// `application/msrtc-category-publish+xml` ([MS-PRES] §2.2.2.2) through ``CategoryPublish``.
    case catpub
    /// `application/msrtc-fault+xml` ([MS-PRES] §2.2.2.2.3) through ``PublishFault``.
    case fault
    /// The provisional UPnP Presence:1 payloads (ISO/IEC 29341-26-16 arguments; docs/upnp-payloads.md)
    /// through ``UPnPContactID``, ``UPnPContactPresenceList``, ``UPnPRegistrationResult`` and
    /// ``UPnPWatcherList``: each that reads the input writes what reads back equal.
    case upnpPayload = "upnp-payload"
    /// RFC 2046 §5.1 multipart bodies (first line `--boundary`), then a batch SUBSCRIBE's 200
    /// ([MS-PRES] §2.2.2.4.2) through ``BatchSubscribeResponse``.
    case multipart
    /// PIDF → categories and msrtc.pidf ([MS-PRES] §3.7.5.4, §3.7.5.5) through ``PresenceMapper``.
    case mapPIDF = "map-pidf"
    /// Categories → PIDF (both dialects) and msrtc.pidf.
    case mapCategories = "map-categories"
    /// msrtc.pidf → categories and PIDF.
    case mapMSRTC = "map-msrtc"
    /// Whole SIP messages into the gateway's router and core (``GatewayFuzzHarness``).
    case gateway
    /// NOTIFYs of an OMA resource list server (RFC 4662) into a list subscription of the core
    /// (``ListNotifyFuzzHarness``): any headers and body, in the list's dialog.
    case listNotify = "list-notify"
    /// NOTIFYs of an OMA presence server's watcher information (RFC 3858) into a linked
    /// identity's `presence.winfo` subscription (``WinfoNotifyFuzzHarness``): any headers and body.
    case winfoNotify = "winfo-notify"

    /// The target named `name` (its raw value), or nil.
    public init?(named name: String) { self.init(rawValue: name) }

    /// Runs one input; nil when every property held, else what failed (with the output that failed it).
    public func check(_ bytes: [UInt8]) -> String? {
        switch self {
        case .sip: return Self.checkSIP(bytes)
        case .framer: return Self.checkFramer(bytes)
        case .xml: return Self.checkXML(bytes)
        case .pidf:
            guard let doc = try? PIDFDocument(bytes: bytes) else { return nil }
            return Self.roundTrip(doc.serialized(), "PIDF") { try PIDFDocument(bytes: $0) }
        case .categories:
            guard let doc = try? CategoriesDocument(bytes: bytes) else { return nil }
            // The tree decoder must agree with the event decoder on what the tree holds.
            if let root = try? XMLParser.parse(bytes, vocabulary: .presence),
                (try? CategoriesDocument(xml: root)) == nil
            {
                return "categories: decoded from events but not from the tree"
            }
            return Self.roundTrip(doc.serialized(), "categories") { try CategoriesDocument(bytes: $0) }
        case .msrtc:
            guard let doc = try? MSRTCPresentity(bytes: bytes) else { return nil }
            return Self.roundTrip(doc.serialized(), "msrtc.pidf") { try MSRTCPresentity(bytes: $0) }
        case .batchsub:
            guard let doc = try? BatchSubscribe(bytes: bytes) else { return nil }
            return Self.roundTrip(doc.serialized(), "batchSub") { try BatchSubscribe(bytes: $0) }
        case .rlmi:
            _ = try? RLMIList(lenientBytes: bytes)
            guard let doc = try? RLMIList(bytes: bytes) else { return nil }
            return Self.roundTrip(doc.serialized(), "RLMI") { try RLMIList(bytes: $0) }
        case .pidfDiff:
            guard let body = try? PIDFDiff(bytes: bytes) else { return nil }
            switch body {
            case .full(let version, let presence):
                return Self.roundTrip(PIDFDiff.full(presence, version: version ?? 0), "pidf-full") {
                    try PIDFDiff(bytes: $0)
                }
            case .diff(_, let operations):
                guard var document = Self.diffBase else { return "the diff base does not parse" }
                guard (try? PIDFDiff.apply(operations, to: &document)) != nil else { return nil }
                return Self.roundTrip(XMLWriter().bytes(document), "patched presence") { try XMLParser.parse($0) }
            }
        case .presRules:
            guard let rules = try? PresRules(bytes: bytes) else { return nil }
            guard let root = Self.diffBase, let document = try? PIDFDocument(xml: root) else {
                return "the presence document does not parse"
            }
            let inForce = rules.inForce(at: Date()).decidingSphere("work")
            for uri in ["sip:a@example.com", "sip:b@other.example"] {
                guard let watcher = WatcherIdentity(uri: uri, network: .federated) else { continue }
                _ = inForce.subHandling(for: watcher)
                guard let permissions = inForce.permissions(for: watcher) else { continue }
                if let failure = Self.roundTrip(
                    permissions.apply(to: document).serialized(), "shown presence",
                    {
                        try PIDFDocument(bytes: $0)
                    })
                {
                    return failure
                }
            }
            return nil
        case .simpleFilter:
            guard let filters = try? SimpleFilter.filters(bytes: bytes) else { return nil }
            guard let document = Self.diffBase else { return "the presence document does not parse" }
            for filter in filters {
                _ = filter.triggered(from: document, to: document)
                if let failure = Self.roundTrip(
                    XMLWriter().bytes(filter.apply(to: document)), "filtered presence",
                    {
                        try XMLParser.parse($0)
                    })
                {
                    return failure
                }
            }
            return nil
        case .catpub:
            guard let doc = try? CategoryPublish(bytes: bytes) else { return nil }
            return Self.roundTrip(doc.serialized(), "category publish") { try CategoryPublish(bytes: $0) }
        case .fault:
            guard let doc = try? PublishFault(bytes: bytes) else { return nil }
            return Self.roundTrip(doc.serialized(), "publish fault") { try PublishFault(bytes: $0) }
        case .upnpPayload: return Self.checkUPnPPayload(bytes)
        case .multipart: return Self.checkMultipart(bytes)
        case .mapPIDF:
            guard let mapper = Self.mapper else { return "the built-in mapping tables do not load" }
            guard let doc = try? PIDFDocument(bytes: bytes) else { return nil }
            return Self.firstFailure(
                Self.roundTrip(mapper.categories(from: doc).0.serialized(), "PIDF -> categories") {
                    try CategoriesDocument(bytes: $0)
                },
                Self.roundTrip(mapper.msrtc(from: doc).0.serialized(), "PIDF -> msrtc.pidf") {
                    try MSRTCPresentity(bytes: $0)
                })
        case .mapCategories:
            guard let mapper = Self.mapper else { return "the built-in mapping tables do not load" }
            guard let doc = try? CategoriesDocument(bytes: bytes) else { return nil }
            return Self.firstFailure(
                Self.roundTrip(mapper.pidf(from: doc, dialect: .rfc).0.serialized(), "categories -> PIDF") {
                    try PIDFDocument(bytes: $0)
                },
                Self.roundTrip(
                    mapper.pidf(from: doc, dialect: .microsoft).0.serialized(), "categories -> PIDF (Microsoft)"
                ) {
                    try PIDFDocument(bytes: $0)
                },
                Self.roundTrip(mapper.msrtc(from: doc).0.serialized(), "categories -> msrtc.pidf") {
                    try MSRTCPresentity(bytes: $0)
                })
        case .mapMSRTC:
            guard let mapper = Self.mapper else { return "the built-in mapping tables do not load" }
            guard let doc = try? MSRTCPresentity(bytes: bytes) else { return nil }
            return Self.firstFailure(
                Self.roundTrip(mapper.categories(from: doc).0.serialized(), "msrtc.pidf -> categories") {
                    try CategoriesDocument(bytes: $0)
                },
                Self.roundTrip(mapper.pidf(from: doc).0.serialized(), "msrtc.pidf -> PIDF") {
                    try PIDFDocument(bytes: $0)
                })
        case .rlsServices:
            return Self.checkRLSServices(bytes)
        case .gateway:
            return GatewayFuzzHarness.shared.check(bytes)
        case .listNotify:
            return ListNotifyFuzzHarness.shared.check(bytes)
        case .winfoNotify:
            return WinfoNotifyFuzzHarness.shared.check(bytes)
        }
    }

    static func checkUPnPPayload(_ bytes: [UInt8]) -> String? {
        /// `written` must read back, with the reader that read the input, to the same value.
        func same<T: Equatable>(
            _ value: T, _ written: [UInt8], _ what: String, _ read: ([UInt8]) throws -> T
        ) -> String? {
            if let failure = roundTrip(written, what, read) { return failure }
            guard (try? read(written)) == value else {
                return "\(what): wrote what reads back different\n\(String(decoding: written, as: UTF8.self))"
            }
            return nil
        }
        if let id = try? UPnPContactID(bytes: bytes) {
            return same(id, id.serialized(), "UPnP contact") { try UPnPContactID(bytes: $0) }
        }
        if let list = try? UPnPContactPresenceList(bytes: bytes) {
            // The nested PIDF is compared by its presence only: the `pidf` target checks its codec.
            func outline(_ list: UPnPContactPresenceList) -> [String] {
                list.contacts.map { "\($0.uri) \($0.state) \($0.band ?? "-") \($0.presence?.entity ?? "-")" }
            }
            return same(outline(list), list.serialized(), "UPnP contacts") {
                outline(try UPnPContactPresenceList(bytes: $0))
            }
        }
        if let result = try? UPnPRegistrationResult(bytes: bytes) {
            return same(result, result.serialized(), "UPnP registration") { try UPnPRegistrationResult(bytes: $0) }
        }
        if let list = try? UPnPWatcherList(bytes: bytes) {
            return same(list, list.serialized(), "UPnP watchers") { try UPnPWatcherList(bytes: $0) }
        }
        return nil
    }

    /// The enterprise side (contoso.com) and member limit the `rls-services` target reads with.
    public static let listDomains = (try? GatewayConfiguration(yaml: GatewayConfiguration.defaultYAML))?.enterprise
    public static let listLimit = 8

    static func checkRLSServices(_ bytes: [UInt8]) -> String? {
        guard let domains = listDomains else { return "the embedded configuration does not load" }
        guard
            let lists = try? GatewayConfiguration.resourceLists(
                rlsServices: bytes, enterprise: domains, limit: listLimit)
        else { return nil }
        func enterprise(_ address: String) -> Bool {
            WatcherIdentity.addressOfRecord(address) == address && address.hasSuffix("@contoso.com")
        }
        for (list, members) in lists {
            guard enterprise(list) else { return "rls-services: list \(list) is not an enterprise address of record" }
            guard (1...listLimit).contains(members.count), Set(members).count == members.count else {
                return "rls-services: list \(list) has \(members.count) members, or one twice: \(members)"
            }
            if let member = members.first(where: { !enterprise($0) || lists[$0] != nil }) {
                return "rls-services: member \(member) of \(list) is not an enterprise address, or is a list"
            }
        }
        return nil
    }

    /// Every target over the same input (the corpus runner's default).
    public static func checkAll(_ bytes: [UInt8]) -> String? {
        for target in allCases {
            if let failure = target.check(bytes) { return "\(target.rawValue): \(failure)" }
        }
        return nil
    }

    static let mapper: PresenceMapper? = try? PresenceMapper(tables: MappingTables.builtIn())

    /// The presence document `pidf-diff` and `simple-filter` inputs are applied to: tuples, a note, a person and a
    /// device, in the namespaces diffs name them by.
    static let diffBase: XMLElement? = try? XMLParser.parse(
        Array(
            """
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model" \
            xmlns:r="urn:ietf:params:xml:ns:pidf:rpid" entity="pres:someone@example.com">\
            <tuple id="t1"><status><basic>open</basic></status><contact priority="0.8">sip:a@example.com</contact></tuple>\
            <tuple id="t2"><status><basic>closed</basic></status></tuple><note xml:lang="en">n</note>\
            <dm:person id="p1"><r:activities><r:busy/></r:activities></dm:person>\
            <dm:device id="d1"><dm:deviceID>urn:x</dm:deviceID></dm:device></presence>
            """.utf8))

    /// Limits for reading back what the project wrote: generous, since a document that passed
    /// the input limits may legitimately grow when written (namespace declarations, escapes).
    static let outputLimits = XMLLimits(maxBytes: 64 << 20, maxDepth: 256, maxElements: 1 << 20)

    /// `written` must parse as XML and decode again with `decode`.
    static func roundTrip<T>(_ written: [UInt8], _ what: String, _ decode: ([UInt8]) throws -> T) -> String? {
        do {
            _ = try XMLParser.parse(written, limits: outputLimits)
        } catch {
            return "\(what): wrote XML it cannot parse back (\(error))\n\(String(decoding: written, as: UTF8.self))"
        }
        do {
            _ = try decode(written)
        } catch {
            return
                "\(what): wrote a document it cannot decode back (\(error))\n\(String(decoding: written, as: UTF8.self))"
        }
        return nil
    }

    static func firstFailure(_ failures: String?...) -> String? { failures.lazy.compactMap { $0 }.first }

    static func checkSIP(_ bytes: [UInt8]) -> String? {
        if case .unstable(let why) = fuzzSIPMessage(bytes) {
            return "SIP round trip unstable: \(why)\n\(String(decoding: bytes, as: UTF8.self))"
        }
        return nil
    }

    /// RFC 3261 §18.3: framing depends on the bytes, never on how the reads cut them.
    static func checkFramer(_ bytes: [UInt8]) -> String? {
        func frame(_ chunks: [ArraySlice<UInt8>]) -> (events: [SIPStreamFramer.Event], failed: Bool) {
            var framer = SIPStreamFramer(maxBufferedBytes: 1 << 16)
            var events: [SIPStreamFramer.Event] = []
            do {
                for chunk in chunks {
                    try framer.append(chunk)
                    while let event = try framer.next() { events.append(event) }
                }
            } catch {
                return (events, true)
            }
            return (events, false)
        }
        let whole = frame([bytes[...]])
        let a = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
        let b = bytes.count < 2 ? a : max(a, Int(bytes[1]) * 7 % (bytes.count + 1))
        let cut = frame([bytes[..<a], bytes[a..<b], bytes[b...]])
        if whole.events != cut.events || whole.failed != cut.failed {
            return
                "framing depends on the cut (\(a), \(b)): \(whole.events.count) events (failed \(whole.failed)) whole, "
                + "\(cut.events.count) (failed \(cut.failed)) cut"
        }
        for case .message(let message) in whole.events {
            if let failure = checkSIP(message) { return failure }
        }
        return nil
    }

    static func checkXML(_ bytes: [UInt8]) -> String? {
        guard let root = try? XMLParser.parse(bytes) else { return nil }
        let written = XMLWriter().bytes(root)
        guard let again = try? XMLParser.parse(written, limits: outputLimits) else {
            return "XML: wrote what it cannot parse back\n\(String(decoding: written, as: UTF8.self))"
        }
        // Writing what was read back gives the same bytes (the writer is deterministic).
        if XMLWriter().bytes(again) != written {
            return "XML: writing the re-parsed tree gave other bytes\n\(String(decoding: written, as: UTF8.self))"
        }
        return nil
    }

    /// First line `--BOUNDARY`: the body is parsed with that boundary (RFC 2046 §5.1.1); what
    /// parses is written and must parse back to the same parts.
    static func checkMultipart(_ bytes: [UInt8]) -> String? {
        guard bytes.starts(with: [0x2D, 0x2D]) else { return nil }
        let end = bytes.firstIndex(where: { $0 == 0x0D || $0 == 0x0A }) ?? bytes.count
        let boundary = String(decoding: bytes[2..<end], as: UTF8.self)
        guard !boundary.isEmpty, let body = try? MultipartBody(parsing: bytes, boundary: boundary) else { return nil }
        _ = try? BatchSubscribeResponse(multipart: body)
        guard let again = try? MultipartBody(parsing: body.bytes, boundary: boundary) else {
            return "multipart: wrote a body it cannot parse back\n\(String(decoding: body.bytes, as: UTF8.self))"
        }
        if again.parts.map(\.body) != body.parts.map(\.body) {
            return "multipart: parts changed in a round trip"
        }
        return nil
    }
}
