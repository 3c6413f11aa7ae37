import Foundation
import SIPMessages

/// Builds a request or response from SIP text written with `\n` line ends (converted to CRLF).
func sip(_ text: String) -> SIPMessage {
    let wire = text.replacingOccurrences(of: "\n", with: "\r\n")
    do {
        return try SIPMessage(parsing: Array(wire.utf8))
    } catch {
        fatalError("test message does not parse: \(error)\n\(text)")
    }
}

func request(_ text: String) -> SIPRequest {
    guard let r = sip(text).request else { fatalError("not a request") }
    return r
}

func response(_ text: String) -> SIPResponse {
    guard let r = sip(text).response else { fatalError("not a response") }
    return r
}

/// A SUBSCRIBE from an OMA watcher with two Record-Routes (RFC 3856 §6 shape).
func presenceSubscribe(expires: String? = "600", accept: String? = "application/pidf+xml",
                       supported: String? = nil, event: String? = "presence", cseq: Int = 1,
                       toTag: String? = nil) -> SIPRequest {
    var lines = [
        "SUBSCRIBE sip:bob@contoso.com SIP/2.0",
        "Via: SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bKsub\(cseq)",
        "Max-Forwards: 70",
        "Record-Route: <sip:p1.oma.example;lr>",
        "Record-Route: <sip:p2.oma.example;lr>",
        "From: <sip:alice@oma.example>;tag=watcher1",
        "To: <sip:bob@contoso.com>" + (toTag.map { ";tag=\($0)" } ?? ""),
        "Call-ID: sub-call-1@192.0.2.10",
        "CSeq: \(cseq) SUBSCRIBE",
        "Contact: <sip:alice@192.0.2.10:5060>",
    ]
    if let event { lines.append("Event: \(event)") }
    if let accept { lines.append("Accept: \(accept)") }
    if let supported { lines.append("Supported: \(supported)") }
    if let expires { lines.append("Expires: \(expires)") }
    lines.append("Content-Length: 0")
    return request(lines.joined(separator: "\n") + "\n\n")
}
