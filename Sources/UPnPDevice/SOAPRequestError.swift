/// Why a control request was refused before any action ran.
public enum SOAPRequestError: Error, Hashable, Sendable {
    /// The request is no SOAP envelope at all (not XML, no Envelope or Body): HTTP 400.
    case badRequest(String)
    /// The envelope names no action of the service, or the wrong arguments: a UPnP fault.
    case fault(UPnPFault)
}
