import XMLBridge

extension Bool {
    /// Parses xs:boolean ("true", "false", "1", "0", surrounding white space allowed).
    public init?(xsd text: String) {
        // The usual value, without white space, compared before a trimmed copy is made.
        switch text {
        case "true", "1":
            self = true
            return
        case "false", "0":
            self = false
            return
        default: break
        }
        switch text.trimmingXMLWhitespace() {
        case "true", "1": self = true
        case "false", "0": self = false
        default: return nil
        }
    }
}
