// swift-tools-version: 6.1
import Foundation
import PackageDescription

/// `PRESENCE_FUZZ=1 swift build --product presence-fuzz` builds the libFuzzer
/// target (README, "Fuzzing and soak"): the libraries get coverage and address
/// sanitizing, and only the fuzz executable links libFuzzer (the build plugin's
/// tool must stay a normal program).
let fuzzing = ProcessInfo.processInfo.environment["PRESENCE_FUZZ"] == "1"
let fuzzFlags: [SwiftSetting] = fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address"]), .define("FUZZING")] : []
let strict: [SwiftSetting] = [.enableUpcomingFeature("InternalImportsByDefault")] + fuzzFlags

let package = Package(
    name: "PresenceGateway",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "presence-gateway", targets: ["presence-gateway"]),
        .executable(name: "presence-map", targets: ["presence-map"]),
        .executable(name: "presence-bench", targets: ["presence-bench"]),
        .executable(name: "presence-fuzz", targets: ["presence-fuzz"]),
        .executable(name: "sip-bench", targets: ["sip-bench"]),
        .executable(name: "gateway-bench", targets: ["gateway-bench"]),
        .executable(name: "event-bench", targets: ["event-bench"]),
        .library(name: "PresenceMapping", targets: ["PresenceMapping"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio", exact: "2.101.3"),
        // Lock-free counters the shards share (PeerBoard); the version swift-nio already brings in.
        .package(url: "https://github.com/apple/swift-atomics", exact: "1.3.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", exact: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams", exact: "6.2.2"),
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/vapor/sqlite-nio", exact: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
        .package(url: "https://github.com/swift-server/async-http-client", exact: "1.37.0"),
        // Insecure.MD5 and SHA256 for HTTP Digest at the XCAP Aggregation Proxy and SIP Digest toward
        // OMA peers (RFC 7616, RFC 8760); the version postgres-nio already brings in.
        .package(url: "https://github.com/apple/swift-crypto.git", exact: "4.5.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        // The SAX2 event recording's hot path (XMLBridge's XMLEventRecorder and EventSink), in C.
        .target(
            name: "CXMLRecorder", dependencies: ["CLibXML2"],
            cSettings: fuzzing ? [.unsafeFlags(["-fsanitize=fuzzer-no-link,address"])] : []),
        .target(name: "XMLBridge", dependencies: ["CLibXML2", "CXMLRecorder"], swiftSettings: strict),
        // presence-gateway's start-up check that /proc is mounted, made before main.
        .target(name: "CProcCheck"),
        .target(name: "Multipart", swiftSettings: strict),
        .target(name: "PresenceDocuments", dependencies: ["XMLBridge", "Multipart"], swiftSettings: strict),
        .target(
            name: "PresenceMapping",
            dependencies: ["PresenceDocuments", "XMLBridge"],
            swiftSettings: strict,
            plugins: ["EmbedFiles"]
        ),
        .executableTarget(name: "embed-files"),
        .plugin(name: "EmbedFiles", capability: .buildTool(), dependencies: ["embed-files"]),
        // `presence-gateway --version` and gateway_dependency_info: the versions in Package.resolved.
        .executableTarget(name: "resolved-versions"),
        .plugin(name: "ResolvedVersions", capability: .buildTool(), dependencies: ["resolved-versions"]),
        .executableTarget(
            name: "presence-map",
            dependencies: [
                "PresenceMapping", "PresenceDocuments", "XMLBridge",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "presence-bench",
            dependencies: ["BenchSupport", "PresenceMapping", "PresenceDocuments", "XMLBridge"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "presence-fuzz",
            dependencies: ["FuzzTargets"],
            swiftSettings: strict,
            linkerSettings: fuzzing ? [.unsafeFlags(["-sanitize=fuzzer,address", "-use-ld=lld"])] : []
        ),
        // The fuzz targets' entry functions: presence-fuzz runs them under libFuzzer, and
        // FuzzTargetsTests replays Vectors/fuzz through them in the normal test run.
        .target(
            name: "FuzzTargets",
            dependencies: [
                "PresenceGateway", "PresenceMapping", "PresenceDocuments", "XMLBridge", "SIPMessages", "SIPTransport", "Multipart",
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .target(name: "SIPMessages", dependencies: ["Multipart"], swiftSettings: strict),
        // The general containers and storage helpers the stack and the gateway keep their
        // long-lived state in (SmallMap, PackedTable, DenseTable, SharedValueTable, TimerQueue,
        // OutOfLine, exact and sparse capacity). Internal to the package: no product exposes it.
        .target(
            name: "_GatewayInternals",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            // Release builds make its generic code available to the modules using it, which then
            // specialize it for their own types (docs/performance.md, "Generic containers").
            swiftSettings: strict + [.unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))]
        ),
        .executableTarget(
            name: "sip-bench",
            dependencies: [
                "BenchSupport", "SIPMessages", "SIPTransport", "SIPStack",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "SIPTransport",
            dependencies: [
                "SIPMessages",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "SIPStack",
            dependencies: [
                "SIPMessages", "SIPTransport", "_GatewayInternals",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            swiftSettings: strict
        ),
        // Event agents over a transaction layer (RFC 6665 subscriber and notifier, RFC 3903
        // publisher and compositor) and the stand-in [MS-PRES] presence server built on them: for
        // the tests, the scenario replays and event-bench. The gateway itself does not use them.
        .target(
            name: "SIPEventAgents",
            dependencies: [
                "SIPStack", "SIPMessages", "SIPTransport", "MSPresenceEvents", "PresenceDocuments", "_GatewayInternals",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // The stand-in presence server as a process, for Peers/sipe/run-sipe-publish.py by hand.
        .executableTarget(
            name: "presence-server-standin",
            dependencies: [
                "SIPEventAgents", "MSPresenceEvents", "SIPStack", "SIPMessages", "SIPTransport",
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .target(name: "BenchSupport", swiftSettings: strict),
        .executableTarget(
            name: "event-bench",
            dependencies: [
                "BenchSupport", "SIPStack", "SIPEventAgents", "SIPTransport", "SIPMessages",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "MSPresenceEvents",
            dependencies: [
                "SIPStack", "SIPMessages", "PresenceDocuments", "Multipart", "XMLBridge", "_GatewayInternals",
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        // The durable store of the gateway's state (docs/state.md): SQLite in one process,
        // PostgreSQL shared by several nodes.
        .target(
            name: "GatewayState",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "PresenceGateway",
            dependencies: [
                "GatewayState", "MSPresenceEvents", "PresenceMapping", "PresenceDocuments", "XMLBridge", "SIPStack", "SIPTransport", "SIPMessages", "Multipart",
                "_GatewayInternals", "UPnPDevice",
                .product(name: "Atomics", package: "swift-atomics"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict,
            plugins: ["ResolvedVersions"]
        ),
        .executableTarget(
            name: "presence-gateway",
            dependencies: [
                "CProcCheck",
                "PresenceGateway",
                "UPnPDevice",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "gateway-bench",
            dependencies: [
                "BenchSupport", "PresenceGateway", "GatewayState", "SIPStack", "MSPresenceEvents", "PresenceMapping", "PresenceDocuments", "SIPMessages",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
            ],
            swiftSettings: strict
        ),
        // The UPnP device TelephonyServer:2 with the Presence:1 service (ISO/IEC 29341-26-16):
        // SSDP, descriptions, SOAP control and GENA eventing over a backend protocol (docs/flows.md,
        // "UPnP Telephony Presence:1: the device layer").
        .target(
            name: "UPnPDevice",
            dependencies: [
                "XMLBridge",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        // Runs the device with the in-memory backend, for trying it with a control point by hand.
        .executableTarget(name: "upnp-presence-device", dependencies: ["UPnPDevice"], swiftSettings: strict),
        .testTarget(
            name: "UPnPDeviceTests",
            dependencies: [
                "UPnPDevice", "PeerTestSupport", "XMLBridge",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            exclude: ["upnp_peer.py"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "FuzzTargetsTests", dependencies: ["FuzzTargets", "PresenceGateway", "XMLBridge"], swiftSettings: strict),
        .testTarget(name: "XMLBridgeTests", dependencies: ["XMLBridge"], swiftSettings: strict),
        .testTarget(name: "MultipartTests", dependencies: ["Multipart"], swiftSettings: strict),
        .testTarget(name: "SIPMessagesTests", dependencies: ["SIPMessages", "Multipart"], swiftSettings: strict),
        .testTarget(
            name: "SIPTransportTests",
            dependencies: [
                "PeerTestSupport", "SIPTransport", "SIPMessages",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SIPStackTests",
            dependencies: [
                "SIPStack", "SIPEventAgents", "SIPTransport", "SIPMessages", "_GatewayInternals",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PeerTests",
            dependencies: [
                "PeerTestSupport", "SIPStack", "SIPTransport", "SIPMessages",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["Scenarios"],
            swiftSettings: strict
        ),
        // Shared by the real-peer test targets: process runner, free loopback ports, the sipp
        // runner with its -trace_msg reader, and Kamailio as the OMA domain (Peers/).
        .target(name: "PeerTestSupport", path: "Tests/PeerTestSupport"),
        .testTarget(
            name: "GatewayPeerTests",
            dependencies: [
                "PeerTestSupport", "PresenceGateway", "PresenceDocuments", "Multipart", "SIPMessages", "SIPTransport", "XMLBridge",
                "SIPEventAgents", "UPnPDevice",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            exclude: ["upnp_control_point.py"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "EventPeerTests",
            dependencies: [
                "PeerTestSupport", "SIPStack", "SIPEventAgents", "SIPTransport", "SIPMessages", "MSPresenceEvents",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            exclude: ["sipp"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MSPresenceEventsTests",
            dependencies: [
                "MSPresenceEvents", "SIPEventAgents", "SIPStack", "SIPMessages", "PresenceDocuments", "Multipart", "XMLBridge",
                "SIPTransport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PresenceGatewayTests",
            dependencies: [
                "PresenceGateway", "UPnPDevice", "GatewayState", "PresenceMapping", "PresenceDocuments", "MSPresenceEvents", "XMLBridge", "SIPMessages", "SIPTransport",
                "SIPStack",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "GatewayStateTests",
            dependencies: [
                "GatewayState", "PeerTestSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PresenceDocumentsTests",
            dependencies: ["PresenceDocuments", "XMLBridge", "Multipart"],
            exclude: ["Fixtures"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PresenceMappingTests",
            dependencies: ["PresenceMapping", "PresenceDocuments", "XMLBridge"],
            swiftSettings: strict
        ),
    ]
)
