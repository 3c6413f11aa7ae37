/// What runs: the gateway's version (`presence-gateway --version`), the Swift it was built
/// with and the versions of the packages built into it, also exported as
/// `gateway_build_info{version,swift} 1` and `gateway_dependency_info{name,version} 1` so that a
/// dashboard or an alert can tell which build each node runs.
public enum GatewayVersion {
    /// The release this source is; scripts and packages take it from here.
    public static let version = "0.9.0"

    /// The Swift compiler it was built with, major.minor.
    public static let swift: String = {
        #if compiler(>=6.3)
            "6.3"
        #elseif compiler(>=6.2)
            "6.2"
        #elseif compiler(>=6.1)
            "6.1"
        #else
            "6.0"
        #endif
    }()

    /// A package built into the gateway and the version SwiftPM resolved for it.
    public struct Dependency: Sendable, Hashable {
        /// The package's identity in Package.resolved (e.g. `swift-nio`).
        public var name: String
        /// Its resolved version (else its branch, else the start of its revision).
        public var version: String
    }

    /// Every package of the build, direct and indirect, by name: Package.resolved as SwiftPM
    /// resolved it before building (the ResolvedVersions build plugin embeds it).
    public static let dependencies: [Dependency] = ResolvedDependencies.versions.map {
        Dependency(name: $0.name, version: $0.version)
    }

    /// What `--version` prints: `presence-gateway VERSION (Swift X.Y)`, then one line per
    /// dependency, `NAME VERSION`.
    public static var description: String {
        (["presence-gateway \(version) (Swift \(swift))"] + dependencies.map { "\($0.name) \($0.version)" })
            .joined(separator: "\n")
    }
}
