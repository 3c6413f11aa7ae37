/// Data files built into the program from the package (`Mappings/`, `Schemas/`).
public enum BuiltInFiles {
    /// The files whose path (relative to the package root) starts with `prefix`.
    public static func files(under prefix: String) -> [String: String] {
        EmbeddedFiles.files.filter { $0.key.hasPrefix(prefix) }
    }
}
