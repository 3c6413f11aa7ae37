import Foundation
import Multipart
import Testing

private let vectors = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Vectors/rfc4475")

@Suite("Multipart bodies (RFC 2046 §5.1)")
struct MultipartBodyTests {
    /// The body of RFC 4475 §3.1.1.11 (mpart01.dat): the 553 bytes after the header section.
    func mpart01Body() throws -> [UInt8] {
        let bytes = [UInt8](try Data(contentsOf: vectors.appendingPathComponent("mpart01.dat")))
        let crlfcrlf: [UInt8] = [13, 10, 13, 10]
        let start = try #require((0..<(bytes.count - 3)).first { Array(bytes[$0..<($0 + 4)]) == crlfcrlf }) + 4
        return Array(bytes[start..<(start + 553)])
    }

    @Test func rfc4475Mpart01BodySplitsIntoTextAndBinaryParts() throws {
        let body = try MultipartBody(parsing: try mpart01Body(), boundary: "7a9cbec02ceef655")
        #expect(body.parts.count == 2)
        #expect(body.parts[0].header("content-type") == "text/plain")
        #expect(body.parts[0].header("Content-Transfer-Encoding") == "binary")
        #expect(body.parts[0].body == Array("Hello".utf8))
        #expect(body.parts[1].header("Content-Type") == "application/octet-stream")
        let binary = body.parts[1].body
        #expect(binary.filter { $0 == 0 }.count == 2)
        #expect(binary.first == 0x30)  // DER SEQUENCE of the S/MIME blob
    }

    @Test func bareLFLineEndsAreAccepted() throws {
        let text = "preamble\n--b1\nContent-Type: text/plain\n\none\n--b1\nContent-Type: application/pidf+xml\n\n<presence/>\n--b1--\n"
        let body = try MultipartBody(parsing: Array(text.utf8), boundary: "b1")
        #expect(body.parts.map { String(decoding: $0.body, as: UTF8.self) } == ["one", "<presence/>"])
        #expect(body.parts[1].header("content-type") == "application/pidf+xml")
    }

    @Test func missingCloseDelimiterIsAnError() {
        let text = "--b1\r\nContent-Type: text/plain\r\n\r\none\r\n--b1\r\n\r\ntwo\r\n"
        #expect(throws: MultipartBody.ParseError.self) {
            try MultipartBody(parsing: Array(text.utf8), boundary: "b1")
        }
    }

    @Test func missingDelimiterAndBadBoundaryAreErrors() {
        #expect(throws: MultipartBody.ParseError.self) { try MultipartBody(parsing: Array("no parts".utf8), boundary: "b1") }
        #expect(throws: MultipartBody.ParseError.self) { try MultipartBody(parsing: [], boundary: "") }
    }

    @Test func writtenBodiesParseBackToTheSameParts() throws {
        let original = MultipartBody(boundary: "urn:uuid:7f3a", parts: [
            .init(headers: [("Content-Type", "application/rlmi+xml"), ("Content-ID", "<resourceList>")], body: Array("<list/>".utf8)),
            .init(headers: [("Content-Type", "application/octet-stream")], body: [0, 13, 10, 45, 45, 255]),
            .init(headers: [], body: []),
        ])
        let parsed = try MultipartBody(parsing: original.bytes, boundary: "urn:uuid:7f3a")
        // Each content comes back with the line end written after it (the empty line before the
        // next delimiter), and only that.
        #expect(parsed.parts.map(\.body) == original.parts.map { $0.body + [13, 10] })
        #expect(parsed.parts.map(\.headers.count) == [2, 1, 0])
        #expect(parsed.bytes == original.bytes)
    }

    /// [MS-PRES] §4.5: every delimiter follows an empty line, so a reader that drops the four
    /// bytes before each delimiter (libpurple's, under SIPE) still gets each XML document whole;
    /// a content that already ends with a line end gets no second one.
    @Test func anEmptyLineStandsBeforeEveryDelimiterAsInTheMSPRESExamples() throws {
        let body = MultipartBody(boundary: "b6778ced", parts: [
            .init(headers: [("Content-Type", "application/rlmi+xml")], body: Array("<list/>".utf8)),
            .init(headers: [("Content-Type", "application/msrtc-event-categories+xml")], body: Array("<categories/>\n".utf8)),
            .init(headers: [], body: Array("<x/>\r\n".utf8)),
        ]).bytes
        let text = String(decoding: body, as: UTF8.self)
        #expect(text == """
            --b6778ced\r
            Content-Type: application/rlmi+xml\r
            \r
            <list/>\r
            \r
            --b6778ced\r
            Content-Type: application/msrtc-event-categories+xml\r
            \r
            <categories/>
            \r
            \r
            --b6778ced\r
            \r
            <x/>\r
            \r
            --b6778ced--\r

            """)
        // What libpurple keeps of each part: up to four bytes before the next delimiter.
        // (On bytes: a Swift String holds CRLF as one character.)
        let pieces = text.components(separatedBy: "--b6778ced").dropFirst().dropLast().map { Array($0.utf8) }
        let kept = pieces.map { piece -> String in
            let blank = (0..<(piece.count - 3)).first { Array(piece[$0..<($0 + 4)]) == [13, 10, 13, 10] }!
            return String(decoding: piece[(blank + 4)...].dropLast(4), as: UTF8.self)
        }
        #expect(kept == ["<list/>", "<categories/>\n", "<x/>"])
    }
}
