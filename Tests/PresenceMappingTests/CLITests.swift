import Foundation
import Testing

/// Runs the built `presence-map` (swift test builds every product next to the test bundle).
struct CLITests {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static var binary: URL? {
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("presence-map")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return nil
    }

    struct Run { var status: Int32; var stdout: String; var stderr: String }

    static func run(_ arguments: [String], stdin: String? = nil) throws -> Run {
        let process = Process()
        // Bound first: assigned straight to the optional property, `#require` took the optional
        // itself as its value and never failed.
        let executable = try #require(binary, "presence-map was not built next to the tests")
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = packageRoot
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, stdout: String(decoding: o, as: UTF8.self), stderr: String(decoding: e, as: UTF8.self))
    }

    @Test func convertsAnMSRTCNotifyBodyToPIDF() throws {
        // [MS-PRES] §4.11: avail 6500 "busy" → 3.7.5.4 row 4: open + busy.
        let r = try Self.run(["convert", "--to", "pidf", "--report", "Vectors/presence/examples/input/4.11-msrtc-notify.xml"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("<basic>open</basic>"))
        #expect(r.stdout.contains("<rpid:busy/>"))
        #expect(r.stderr.contains("mapped"))
    }

    @Test func readsStandardInputAndWritesTheMicrosoftDialect() throws {
        let categories = """
            <categories xmlns="http://schemas.microsoft.com/2006/09/sip/categories" uri="sip:bob@contoso.com">
            <category name="state" instance="1"><state xmlns="http://schemas.microsoft.com/2006/09/sip/state"
             xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="aggregateState"><availability>15500</availability></state></category>
            </categories>
            """
        let r = try Self.run(["convert", "--to", "pidf", "--dialect", "microsoft", "-"], stdin: categories)
        #expect(r.status == 0)
        #expect(r.stdout.contains("urn:ietf:params:xml:ns:pidf:status:rpid-status"))
        #expect(r.stdout.contains(">away</"))
    }

    @Test func invalidInputExitsOneWithFileLineAndColumn() throws {
        let r = try Self.run(["convert", "--to", "msrtc", "Vectors/presence/ua/input/ua-error-not-well-formed.xml"])
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("Vectors/presence/ua/input/ua-error-not-well-formed.xml:6:"))
        #expect(!r.stderr.contains("Fatal error"))
        let xxe = try Self.run(["convert", "--to", "pidf", "-"], stdin: "<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><x>&e;</x>")
        #expect(xxe.status == 1)
        #expect(xxe.stderr.contains("doctype-forbidden"))
        let other = try Self.run(["convert", "--to", "pidf", "-"], stdin: "<root xmlns=\"urn:x\"/>")
        #expect(other.status == 1)
        #expect(other.stderr.contains("<stdin>:1:"))
        let missing = try Self.run(["convert", "--to", "pidf", "no-such-file.xml"])
        #expect(missing.status == 1)
    }

    @Test func aggregatePrintsWhatTheServerComputesFromAPublish() throws {
        // [MS-PRES] §4.3.3: the category publish gives the workingHours instance of container 1.
        let r = try Self.run(["aggregate", "Vectors/presence/computed/input-4.3.3-publish-calendarData.xml"])
        #expect(r.status == 0)
        #expect(r.stdout.contains(#"<category name="workingHours" instance="0" container="1" expireType="static">"#))
        #expect(r.stdout.contains("<StartTimeInMinutes>540</StartTimeInMinutes>"))
        // §4.3.4's container 2 inputs from standard input: the dndState of the manual userState 9000.
        let inputs = try String(contentsOf: Self.packageRoot.appendingPathComponent(
            "Vectors/presence/aggregation/input/4.3.4-container2.xml"), encoding: .utf8)
        let dnd = try Self.run(["aggregate", "-"], stdin: inputs)
        #expect(dnd.status == 0)
        #expect(dnd.stdout.contains(#"<category name="dndState" instance="0" container="2" expireType="static">"#))
        #expect(dnd.stdout.contains("<availability>9500</availability>"))
        // Not a categories document or a publish: exit 1 at the root element.
        let pidf = try Self.run(["aggregate", "Vectors/presence/ua/input/ua-default-ns-person-rpid.xml"])
        #expect(pidf.status == 1)
        #expect(pidf.stderr.hasPrefix("Vectors/presence/ua/input/ua-default-ns-person-rpid.xml:"))
        #expect(pidf.stderr.contains("expected categories"))
    }

    @Test func usageErrorsExitTwo() throws {
        #expect(try Self.run(["convert", "--to", "xpidf", "x.xml"]).status == 2)
        #expect(try Self.run(["convert"]).status == 2)
        #expect(try Self.run(["frobnicate"]).status == 2)
        #expect(try Self.run(["--help"]).status == 0)
    }

    @Test func brokenMappingsDirectoryIsReportedWithItsLine() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pm-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: Self.packageRoot.appendingPathComponent("Mappings"), to: dir)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("availability-msrtc.tsv")
        let text = try String(contentsOf: file, encoding: .utf8).replacingOccurrences(of: "9000\t11999", with: "9100\t11999")
        try text.write(to: file, atomically: true, encoding: .utf8)
        let r = try Self.run(["tables", "--mappings", dir.path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("availability-msrtc.tsv:"))
        #expect(r.stderr.contains("9000-9099"))
        let good = try Self.run(["tables", "--mappings", Self.packageRoot.appendingPathComponent("Mappings").path])
        #expect(good.status == 0)
        #expect(good.stdout.contains("6000-7499 token on-the-phone: basic open, activity on-the-phone"))
        #expect(good.stdout.contains("12000-14999 any token: band be-right-back"))
    }

    @Test func validateReportsViolationsWithLineAndColumn() throws {
        let ok = try Self.run(["validate", "Vectors/presence/ua/input/ua-prefixed-p-r.xml"])
        #expect(ok.status == 0)
        // RPID that pidf.xsd alone would let through: <rpid:activities> with an unknown token.
        let bad = """
            <presence xmlns="urn:ietf:params:xml:ns:pidf" xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model"
             xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid" entity="sip:a@example.com">
            <dm:person id="p1">
              <rpid:activities><rpid:dancing/></rpid:activities>
            </dm:person>
            </presence>
            """
        let r = try Self.run(["validate", "-"], stdin: bad)
        #expect(r.status == 1)
        #expect(r.stderr.contains("-:4:"))
    }

    @Test func validateSaysWhyMSRTCPIDFIsNotChecked() throws {
        // Its schema is in [MS-SIP] section 6, not in the project; Appendix D defines only an extension.
        let r = try Self.run(["validate", "Vectors/presence/examples/input/4.11-msrtc-notify.xml"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("4.11-msrtc-notify.xml:"))
        #expect(r.stderr.contains("cannot be validated"))
        #expect(r.stderr.contains("MS-SIP"))
    }

    /// [MS-PRES] §3.7.5.4 row 7: 9000-11999 is open + busy and nothing else; the do-not-disturb
    /// marker only with --rpid-extensions.
    @Test func doNotDisturbIsTheTableRowUnlessExtensionsAreAsked() throws {
        let plain = try Self.run(["convert", "--to", "pidf", "--report", "Vectors/presence/table/input/avail-9500.xml"])
        #expect(plain.status == 0)
        #expect(plain.stdout.contains("<rpid:busy/>"))
        #expect(!plain.stdout.contains("do-not-disturb"))
        let extended = try Self.run(["convert", "--to", "pidf", "--rpid-extensions", "Vectors/presence/table/input/avail-9500.xml"])
        #expect(extended.status == 0)
        #expect(extended.stdout.contains("<rpid:busy/>"))
        #expect(extended.stdout.contains("do-not-disturb"))
    }

    /// linphone's PUBLISH: the status extension, the contact with its priority and the timestamps
    /// do not reach the categories, and the report says so (RFC 3863 §4.1.5, §4.1.7, §4.4).
    @Test func reportListsWhatLinphonesPublishLoses() throws {
        let r = try Self.run(["convert", "--to", "categories", "--report", "Vectors/presence/ua/input/ua-linphone-away.xml"])
        #expect(r.status == 0)
        let dropped = r.stderr.split(separator: "\n").filter { $0.hasPrefix("dropped") }
        #expect(dropped.contains { $0.contains("pidfonline.xsd}online") }, "\(r.stderr)")
        #expect(dropped.contains { $0.contains("contact") && $0.contains("priority") }, "\(r.stderr)")
        #expect(dropped.contains { $0.contains("tuple[qmmrxl]/timestamp") }, "\(r.stderr)")
        #expect(dropped.contains { $0.contains("person[lrjpcq]/timestamp") }, "\(r.stderr)")
    }
}
