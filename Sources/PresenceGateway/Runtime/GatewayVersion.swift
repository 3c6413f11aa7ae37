/// What runs: the gateway's version (`presence-gateway --version`) and the Swift it was built
/// with, also exported as `gateway_build_info{version,swift} 1` so that a dashboard or an alert
/// can tell which build each node runs.
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
}
