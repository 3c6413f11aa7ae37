/// The Event header (RFC 6665 §8.2.1, was RFC 3265 §7.2.1).
///
/// ```
/// Event             =  ( "Event" / "o" ) HCOLON event-type *( SEMI event-param )
/// event-type        =  event-package *( "." event-template )
/// event-param       =  generic-param / ( "id" EQUAL token )
/// ```
public struct SIPEvent: Sendable, Hashable, CustomStringConvertible {
    /// The event-type as written, templates included (`presence`, `presence.winfo`,
    /// `vnd-microsoft-roaming-self`).
    public var package: String
    public var parameters: SIPParameters

    public init(package: String, parameters: SIPParameters = []) {
        self.package = package
        self.parameters = parameters
    }

    public init(_ text: String) throws(SIPParseError) {
        let bytes = Array(text.utf8)
        self = try SIPEvent.parse(bytes[...], header: "Event")
    }

    /// The `id` parameter distinguishing subscriptions in one dialog.
    public var id: String? { parameters.value("id") }

    public var description: String {
        var out = Array(package.utf8)
        parameters.write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func parse(_ bytes: ArraySlice<UInt8>, header: String?) throws(SIPParseError) -> SIPEvent {
        var s = SIPScanner(bytes, header: header, code: .invalidHeaderValue)
        s.skipLWS()
        let t = try s.token("event-type (token)")
        var e = SIPEvent(package: SIPByte.string(t))
        try s.parameters(into: &e.parameters)
        try s.expectEnd("';' parameter or end of Event")
        return e
    }

    /// Allow-Events: `event-type *(COMMA event-type)` (RFC 6665 §8.2.2).
    static func parseAllowEvents(_ s: inout SIPScanner) throws(SIPParseError) -> [String] {
        var out: [String] = []
        s.skipLWS()
        if s.isAtEnd { return out }
        repeat {
            out.append(SIPByte.string(try s.token("event-type (token)")))
        } while s.consumeSeparator(0x2C)
        try s.expectEnd("',' or end of Allow-Events")
        return out
    }
}
