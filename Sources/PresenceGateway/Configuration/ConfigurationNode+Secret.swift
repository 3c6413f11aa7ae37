import Foundation

extension ConfigurationNode {
    /// A secret kept in a file of its own rather than in the configuration (`token-file`,
    /// `password-file`): the file's text without its final line end. A relative path is taken in
    /// `$CREDENTIALS_DIRECTORY` when systemd set it (`LoadCredential=`, the service's own copy,
    /// readable by it alone), else in the working directory. An unreadable or empty file is an
    /// error at this node's line and column; the secret itself never appears in a message.
    func secretFile(environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ConfigurationError) -> String
    {
        let name = try string()
        var path = name
        if !name.hasPrefix("/"), let directory = environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty {
            path = directory + "/" + name
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw error("cannot read \(path)")
        }
        var text = String(decoding: data, as: UTF8.self)
        while text.hasSuffix("\n") || text.hasSuffix("\r") { text.removeLast() }
        guard !text.isEmpty else { throw error("\(path) is empty") }
        return text
    }
}
