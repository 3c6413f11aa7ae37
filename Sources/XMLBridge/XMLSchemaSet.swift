#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The project's schemas, given as embedded files, compiled on demand and
/// looked up by document root.
///
/// libxml2 resolves `xs:import`/`xs:include` through the file system, so the
/// set writes every `Schemas/…​.xsd` entry of the dictionary once into a
/// private temporary directory (created by `mkdtemp`, mode 0700, files 0600),
/// keeping the relative layout so the relative `schemaLocation`s resolve. The
/// directory is removed when the set is released.
///
/// Which schema validates which root comes from `Schemas/roots.tsv`:
///
/// ```
/// namespace <TAB> root <TAB> schema <TAB> source
/// ```
///
/// where `schema` is relative to `Schemas/`. A (namespace, root) pair may have
/// several rows (the RFC 4662 and MS-PRES 6.9 RLMI schemas disagree); the first
/// row is the default.
///
/// Compiled schemas are cached per path behind a lock; a compiled schema is
/// safe to share across threads (each validation uses its own context).
public final class XMLSchemaSet: @unchecked Sendable {
    /// One row of `Schemas/roots.tsv`.
    public struct Root: Sendable, Hashable {
        public var namespace: String
        public var root: String
        /// Path relative to `Schemas/`, e.g. `ietf/presence-bundle.xsd`.
        public var schema: String
        public var source: String
    }

    /// The rows of `Schemas/roots.tsv`, in file order.
    public let roots: [Root]
    /// The private directory the schema files were written to.
    public let directory: String

    private let lock = Lock()
    private var cache: [String: XMLSchema] = [:]
    private var created: [String] = []  // files and folders below `directory`, in creation order

    /// The folder of the embedded files that holds the schemas.
    public static let folder = "Schemas/"

    /// Writes the `Schemas/**.xsd` entries of `files` (keys are paths relative
    /// to the package root, as the EmbedFiles plugin produces them) to a new
    /// private temporary directory and reads `Schemas/roots.tsv`.
    ///
    /// Keys that are absolute, empty or contain `.`/`..` components are refused.
    public init(files: [String: String]) throws(XMLError) {
        guard let table = files[Self.folder + "roots.tsv"] else {
            throw XMLError(.schemaUnusable, "the embedded files have no \(Self.folder)roots.tsv")
        }
        roots = try Self.parseRoots(table)
        directory = try Self.makePrivateDirectory()
        do throws(XMLError) {
            for key in files.keys.sorted() where key.hasPrefix(Self.folder) && key.hasSuffix(".xsd") {
                try store(key: key, contents: files[key] ?? "")
            }
            for row in roots where files[Self.folder + row.schema] == nil {
                throw XMLError(.schemaUnusable, "roots.tsv names \(row.schema), which is not among the embedded files")
            }
        } catch {
            removeFiles()
            throw error
        }
    }

    deinit { removeFiles() }

    /// The compiled schema at `path` (relative to `Schemas/`), compiled on first use.
    public func schema(at path: String) throws(XMLError) -> XMLSchema {
        try Self.checkRelative(path)
        lock.lock()
        defer { lock.unlock() }
        if let cached = cache[path] { return cached }
        let schema = try XMLSchema(path: directory + "/" + Self.folder + path)
        cache[path] = schema
        return schema
    }

    /// The schema that validates documents whose root element is
    /// `{namespace}root`, or `nil` when `roots.tsv` names none.
    public func schema(forNamespace namespace: String, root: String) throws(XMLError) -> XMLSchema? {
        guard let row = roots.first(where: { $0.namespace == namespace && $0.root == root }) else { return nil }
        return try schema(at: row.schema)
    }

    /// Every row for `{namespace}root`, default first.
    public func rows(forNamespace namespace: String, root: String) -> [Root] {
        roots.filter { $0.namespace == namespace && $0.root == root }
    }

    // MARK: - roots.tsv

    static func parseRoots(_ table: String) throws(XMLError) -> [Root] {
        var result: [Root] = []
        var header: [Substring]?
        for (index, rawLine) in table.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard let columns = header else {
                guard fields.count >= 3, fields[0] == "namespace", fields[1] == "root", fields[2] == "schema" else {
                    throw XMLError(
                        .schemaUnusable, "roots.tsv: header must be namespace, root, schema, source", line: index + 1,
                        column: 1)
                }
                header = fields
                continue
            }
            guard fields.count == columns.count else {
                throw XMLError(
                    .schemaUnusable, "roots.tsv: \(fields.count) fields; the header has \(columns.count)",
                    line: index + 1, column: 1)
            }
            let schema = String(fields[2])
            try checkRelative(schema)
            result.append(
                Root(
                    namespace: String(fields[0]), root: String(fields[1]), schema: schema,
                    source: fields.count > 3 ? String(fields[3]) : ""))
        }
        guard header != nil else { throw XMLError(.schemaUnusable, "roots.tsv is empty") }
        return result
    }

    // MARK: - Files

    /// Refuses paths that could leave the private directory.
    static func checkRelative(_ path: String) throws(XMLError) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard !path.isEmpty, !path.hasPrefix("/"), !path.utf8.contains(0),
            parts.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." })
        else {
            throw XMLError(.schemaUnusable, "schema path \"\(path)\" is not a plain relative path")
        }
    }

    private static func makePrivateDirectory() throws(XMLError) -> String {
        var base = "/tmp"
        if let env = getenv("TMPDIR") {
            let value = String(cString: env)
            if value.hasPrefix("/") { base = value.hasSuffix("/") ? String(value.dropLast()) : value }
        }
        var template = Array((base + "/xmlbridge-schemas.XXXXXX").utf8CString)
        // mkdtemp creates the directory with mode 0700.
        let made = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.flatMap { mkdtemp($0) }
        }
        guard made != nil else {
            throw XMLError(.schemaUnusable, "cannot create a temporary directory in \(base) (errno \(errno))")
        }
        let path = template.withUnsafeBufferPointer { buffer in
            String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        _ = chmod(path, 0o700)
        return path
    }

    private func store(key: String, contents: String) throws(XMLError) {
        try Self.checkRelative(key)
        let parts = key.split(separator: "/")
        var path = directory
        for folder in parts.dropLast() {
            path += "/" + folder
            if mkdir(path, 0o700) == 0 {
                created.append(path)
            } else if errno != EEXIST {
                throw XMLError(.schemaUnusable, "cannot create \(path) (errno \(errno))")
            }
        }
        path += "/" + (parts.last ?? "")
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw XMLError(.schemaUnusable, "cannot create \(path) (errno \(errno))") }
        created.append(path)
        defer { close(fd) }
        let bytes = Array(contents.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { buffer in
                write(fd, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
            }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw XMLError(.schemaUnusable, "cannot write \(path) (errno \(errno))") }
            offset += n
        }
    }

    private func removeFiles() {
        for path in created.reversed() {
            if unlink(path) != 0 { _ = rmdir(path) }
        }
        created.removeAll()
        _ = rmdir(directory)
    }
}

/// A small mutex over `pthread_mutex_t` (Synchronization.Mutex needs macOS 15).
final class Lock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
}
