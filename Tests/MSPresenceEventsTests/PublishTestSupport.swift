import Foundation
import NIOCore
import PresenceDocuments
import MSPresenceEvents
import SIPMessages
import XMLBridge

/// `shared/spec/examples` beside the package (CI keeps `shared/` beside the clone).
let examplesDirectory: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("../shared/spec/examples").standardizedFileURL

func example(_ file: String) throws -> [UInt8] {
    Array(try Data(contentsOf: examplesDirectory.appendingPathComponent(file)))
}

/// A publish SERVICE with the headers of [MS-PRES] §4.2.1 and `body`.
func serviceRequest(body: [UInt8], from: String = "<sip:bob@contoso.com>;tag=b5410171e2;epid=84d3db8c23",
                    to: String = "<sip:bob@contoso.com>",
                    contentType: String = "application/msrtc-category-publish+xml", cseq: Int = 1) -> SIPRequest {
    var h = SIPHeaders()
    h.append(.via, "SIP/2.0/TCP 172.24.32.124:53925;branch=z9hG4bKsvc\(cseq)")
    h.append(.maxForwards, "70")
    h.append(.from, from)
    h.append(.to, to)
    h.append(.callID, "82369a8c95ba4778b3b9220e4abb73d8")
    h.append(.cseq, "\(cseq) SERVICE")
    h.append(.contact, "<sip:bob@contoso.com;opaque=user:epid:fvceImg6cFWG7W6lvUt_-AAA;gruu>")
    h.append(.contentType, contentType)
    // Through the parser, as from the wire.
    let request = SIPRequest(method: .service, uri: (try? SIPURI("sip:bob@contoso.com")) ?? SIPURI(scheme: .sip, opaque: ""),
                             headers: h, body: body)
    do {
        guard let parsed = try SIPMessage(parsing: request.serialized()).request else { fatalError("not a request") }
        return parsed
    } catch {
        fatalError("test SERVICE does not parse: \(error)")
    }
}

/// The categories document of a roamingData 200 OK body.
func roamingCategories(_ body: [UInt8]) throws -> CategoriesDocument {
    let root = try XMLParser.parse(body)
    guard root.name == XMLName(NS.roamingSelf, "roamingData"),
          let categories = root.element(XMLName(NS.categories, "categories")) else {
        throw XMLError(.unexpectedContent, "no roamingData/categories", line: 0, column: 0)
    }
    return try CategoriesDocument(xml: categories)
}

/// A note payload as in §4.2.1.
func note(_ text: String) throws -> CategoryPayload {
    let xml = "<note xmlns=\"http://schemas.microsoft.com/2006/09/sip/note\"><body type=\"personal\" uri=\"\">\(text)</body></note>"
    return try CategoryPayload(categoryChildren: [.element(try XMLParser.parse(xml))], name: .note)
}
