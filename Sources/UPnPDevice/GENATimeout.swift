/// A TIMEOUT field: `Second-` followed by seconds, or `Second-infinite` (UDA 1.1 §4.1.2).
public enum GENATimeout: Sendable, Hashable {
    case seconds(Int)
    case infinite

    public init?(_ field: String) {
        let value = field.trimmingCharacters(in: " \t")
        guard value.lowercased().hasPrefix("second-") else { return nil }
        let rest = value.dropFirst("second-".count)
        if rest.lowercased() == "infinite" {
            self = .infinite
        } else if let seconds = Int(rest), seconds > 0 {
            self = .seconds(seconds)
        } else {
            return nil
        }
    }
}
