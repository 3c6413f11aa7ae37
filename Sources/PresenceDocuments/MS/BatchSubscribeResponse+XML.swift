public import Multipart
public import XMLBridge

extension BatchSubscribeResponse {
    /// Media type of the RLMI part ([MS-PRES] §2.2.2.4.2; RFC 4662 §5).
    public static let rlmiContentType = "application/rlmi+xml"
    /// Media type of each categories part ([MS-PRES] §2.2.2.4.2).
    public static let categoriesContentType = "application/msrtc-event-categories+xml"
    /// `Content-ID` of the RLMI part, named by the `start` parameter of the body's Content-Type.
    public static let rlmiContentID = "resourceList"

    /// Decodes the parts of a category SUBSCRIBE 200 OK (`multipart/related;
    /// type="application/rlmi+xml";start=resourceList`, [MS-PRES] §2.2.2.4.2,
    /// §2.2.2.4.2).
    ///
    /// The RLMI part is the first part whose Content-Type is
    /// `application/rlmi+xml` or whose Content-ID is `resourceList` (with or
    /// without angle brackets); every other part with Content-Type
    /// `application/msrtc-event-categories+xml` is a categories document, in
    /// order. Parts of other types are ignored. A body without an RLMI part is an error.
    public init(multipart: MultipartBody, limits: XMLLimits = XMLLimits()) throws(XMLError) {
        func isRLMI(_ part: MultipartBody.Part) -> Bool {
            let id = (part.header("Content-ID") ?? "").trimmingXMLWhitespace()
            return part.mediaType == Self.rlmiContentType || id == Self.rlmiContentID
                || id == "<\(Self.rlmiContentID)>"
        }
        guard let index = multipart.parts.firstIndex(where: isRLMI) else {
            throw XMLError(.unexpectedContent, "multipart body has no application/rlmi+xml part")
        }
        var categories: [CategoriesDocument] = []
        for (i, part) in multipart.parts.enumerated() where i != index && part.mediaType == Self.categoriesContentType {
            categories.append(try CategoriesDocument(bytes: part.body, limits: limits))
        }
        self.init(list: try RLMIList(bytes: multipart.parts[index].body, limits: limits), categories: categories)
    }

    /// The multipart body, part headers as in the seed (§2.2.2.4.2):
    /// `Content-Transfer-Encoding: binary`, `Content-ID: resourceList` and
    /// `Content-Type: application/rlmi+xml` on the first part,
    /// `Content-Transfer-Encoding: binary` and `Content-Type:
    /// application/msrtc-event-categories+xml` on the others.
    public func multipart(boundary: String) -> MultipartBody {
        var parts = [
            MultipartBody.Part(
                headers: [
                    ("Content-Transfer-Encoding", "binary"), ("Content-ID", Self.rlmiContentID),
                    ("Content-Type", Self.rlmiContentType),
                ], body: list.serialized())
        ]
        for document in categories {
            parts.append(
                MultipartBody.Part(
                    headers: [
                        ("Content-Transfer-Encoding", "binary"), ("Content-Type", Self.categoriesContentType),
                    ], body: document.serialized()))
        }
        return MultipartBody(boundary: boundary, parts: parts)
    }
}
