public import Multipart

extension SIPMessage {
    /// The body as a MIME multipart (RFC 2046 §5.1) when Content-Type is `multipart/*` with a
    /// boundary; nil for other bodies.
    public func multipartBody() throws(SIPParseError) -> MultipartBody? {
        guard let type = try headers.contentType, type.isMultipart else { return nil }
        guard let boundary = type.boundary else {
            throw SIPParseError(
                .invalidHeaderValue, expected: "a boundary parameter on multipart Content-Type", header: "Content-Type")
        }
        do {
            return try MultipartBody(parsing: body, boundary: boundary)
        } catch {
            throw SIPParseError(.invalidMultipart, expected: error.message, offset: error.offset, header: "body")
        }
    }
}
