import Foundation

/// The sipp scenarios of these tests, next to this source file (run with the shared
/// ``Sipp`` runner of PeerTestSupport).
enum PeerScenarios {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Scenarios")

    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
}
