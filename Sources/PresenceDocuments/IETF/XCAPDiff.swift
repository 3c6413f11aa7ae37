import Foundation
public import XMLBridge

/// An `application/xcap-diff+xml` document (RFC 5874 §3): which XCAP documents changed, each by
/// its `sel` (its path below the XCAP root) with its new and previous ETags. What an XCAP server
/// sends to a subscriber of the `xcap-diff` event (RFC 5875). The patch operations a `document`
/// may carry, and `element` and `attribute` changes, are not read: a subscriber fetches the
/// document again.
public struct XCAPDiff: Hashable, Sendable {
    public struct Document: Hashable, Sendable {
        public var sel: String
        public var newETag: String?
        public var previousETag: String?

        public init(sel: String, newETag: String? = nil, previousETag: String? = nil) {
            self.sel = sel
            self.newETag = newETag
            self.previousETag = previousETag
        }
    }

    /// The XCAP root URI the `sel`s are relative to.
    public var root: String
    public var documents: [Document]

    public init(root: String, documents: [Document] = []) {
        self.root = root
        self.documents = documents
    }

    /// The URI of `document` (RFC 4825 §6: the root, then the `sel` path), percent-decoded so
    /// that two spellings of one URI compare equal.
    public func documentURI(of document: Document) -> String {
        var root = root
        while root.hasSuffix("/") { root.removeLast() }
        var sel = Substring(document.sel)
        while sel.hasPrefix("/") { sel = sel.dropFirst() }
        return Self.decoded("\(root)/\(sel)")
    }

    /// `uri` with its percent-escapes decoded (as written when one is not valid).
    public static func decoded(_ uri: String) -> String { uri.removingPercentEncoding ?? uri }
}

extension XCAPDiff {
    static let namespace = "urn:ietf:params:xml:ns:xcap-diff"

    /// Reads an `xcap-diff` document (RFC 5874 §3, §5): the root needs `xcap-root`, each
    /// `document` a `sel`; other children are skipped.
    public init(cursor xml: XMLCursor) throws(XMLError) {
        try xml.expect(XMLName(Self.namespace, "xcap-diff"))
        guard let root = xml[attribute: "xcap-root"] else {
            throw xml.error("xcap-diff needs xcap-root (RFC 5874 §5)")
        }
        self.init(root: root)
        for document in xml.elements(XMLName(Self.namespace, "document")) {
            guard let sel = document[attribute: "sel"] else {
                throw document.error("document needs sel (RFC 5874 §5)")
            }
            documents.append(
                Document(
                    sel: sel, newETag: document[attribute: "new-etag"],
                    previousETag: document[attribute: "previous-etag"]))
        }
    }

    /// Parses and decodes an `application/xcap-diff+xml` body.
    public init(bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(XMLError) {
        self = try decodeEvents(bytes, limits: limits) { root throws(XMLError) in try Self(cursor: root) }
    }
}
