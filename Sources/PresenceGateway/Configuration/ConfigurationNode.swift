import Yams

/// A YAML node with its place in the file, read strictly: every key of a mapping must be known,
/// and every value must have the expected shape. Errors name the line and column.
struct ConfigurationNode {
    let node: Node
    /// The dotted path from the root, for messages (`oma.next-hop`).
    let path: String

    init(_ node: Node, path: String = "") {
        self.node = node
        self.path = path
    }

    static func parse(_ text: String) throws(ConfigurationError) -> ConfigurationNode {
        do {
            guard let node = try Yams.compose(yaml: text) else {
                throw ConfigurationError("the configuration is empty")
            }
            return ConfigurationNode(node)
        } catch let error as ConfigurationError {
            throw error
        } catch let error as YamlError {
            throw Self.located(error)
        } catch {
            throw ConfigurationError("\(error)")
        }
    }

    private static func located(_ error: YamlError) -> ConfigurationError {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _),
            .composer(_, let problem, let mark, _):
            return ConfigurationError("YAML: \(problem)", line: mark.line, column: mark.column)
        default:
            return ConfigurationError("YAML: \(error)")
        }
    }

    func error(_ message: String) -> ConfigurationError {
        let prefix = path.isEmpty ? "" : "\(path): "
        return ConfigurationError(prefix + message, line: node.mark?.line ?? 0, column: node.mark?.column ?? 0)
    }

    /// The mapping's entries, after checking that every key is one of `known`.
    func mapping(known: Set<String>) throws(ConfigurationError) -> [String: ConfigurationNode] {
        guard let mapping = node.mapping else { throw error("expected a mapping") }
        var result: [String: ConfigurationNode] = [:]
        for (key, value) in mapping {
            guard let name = key.string else { throw ConfigurationNode(key, path: path).error("keys must be strings") }
            let child = ConfigurationNode(value, path: path.isEmpty ? name : "\(path).\(name)")
            guard known.contains(name) else {
                throw ConfigurationNode(key, path: path).error(
                    "unknown key '\(name)' (expected one of: \(known.sorted().joined(separator: ", ")))")
            }
            guard result[name] == nil else { throw ConfigurationNode(key, path: path).error("duplicate key '\(name)'") }
            result[name] = child
        }
        return result
    }

    /// A mapping whose keys are free (e.g. presentity URIs), in file order.
    func entries() throws(ConfigurationError) -> [(String, ConfigurationNode)] {
        guard let mapping = node.mapping else { throw error("expected a mapping") }
        var result: [(String, ConfigurationNode)] = []
        for (key, value) in mapping {
            guard let name = key.string else { throw ConfigurationNode(key, path: path).error("keys must be strings") }
            result.append((name, ConfigurationNode(value, path: path.isEmpty ? name : "\(path).\(name)")))
        }
        return result
    }

    func list() throws(ConfigurationError) -> [ConfigurationNode] {
        guard let sequence = node.sequence else { throw error("expected a list") }
        return sequence.enumerated().map { ConfigurationNode($1, path: "\(path)[\($0)]") }
    }

    func string() throws(ConfigurationError) -> String {
        guard let scalar = node.scalar else { throw error("expected a text value") }
        return scalar.string
    }

    func strings() throws(ConfigurationError) -> [String] {
        var result: [String] = []
        for item in try list() { result.append(try item.string()) }
        return result
    }

    func bool() throws(ConfigurationError) -> Bool {
        switch try string().lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default: throw error("expected true or false")
        }
    }

    func integer<T: FixedWidthInteger>(_ type: T.Type = T.self, in range: ClosedRange<T>) throws(ConfigurationError)
        -> T
    {
        guard let value = T(try string()), range.contains(value) else {
            throw error("expected a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    func number(in range: ClosedRange<Double>) throws(ConfigurationError) -> Double {
        guard let value = Double(try string()), range.contains(value) else {
            throw error("expected a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// One of `choices` (for closed vocabularies such as a transport or a network).
    func choice<T>(_ choices: [String: T]) throws(ConfigurationError) -> T {
        let text = try string()
        guard let value = choices[text] else {
            throw error("'\(text)' is not one of: \(choices.keys.sorted().joined(separator: ", "))")
        }
        return value
    }
}
