import Foundation
import Testing
import XMLBridge

/// XSD validation with the schemas the project carries in Schemas/.
@Suite struct XMLSchemaTests {
    static func schema(_ relative: String) throws -> XMLSchema {
        try XMLSchema(path: TestFiles.schemas.appending(path: relative).path)
    }

    static let rpidWithUnknownActivity = """
        <?xml version="1.0" encoding="UTF-8"?>
        <presence xmlns="urn:ietf:params:xml:ns:pidf"
            xmlns:dm="urn:ietf:params:xml:ns:pidf:data-model"
            xmlns:rpid="urn:ietf:params:xml:ns:pidf:rpid"
            entity="pres:someone@example.com">
          <tuple id="t1"><status><basic>open</basic></status></tuple>
          <dm:person id="p1">
            <rpid:activities><rpid:not-an-activity/></rpid:activities>
          </dm:person>
        </presence>
        """

    @Test func missingSchemaFileIsUnusable() {
        do {
            _ = try XMLSchema(path: "/nonexistent/\(UUID().uuidString)/pidf.xsd")
            Issue.record("a missing schema compiled")
        } catch {
            #expect(error.code == .schemaUnusable)
        }
    }

    @Test func schemaThatIsNotXMLIsUnusable() throws {
        let path = FileManager.default.temporaryDirectory.appending(path: "xmlbridge-\(UUID().uuidString).xsd").path
        try Data("not a schema".utf8).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        do { _ = try XMLSchema(path: path) } catch { #expect(error.code == .schemaUnusable) }
    }

    @Test(arguments: ["rfc3863-presence-basic.xml", "rfc4482-cipid.xml", "rfc5196-caps.xml", "rfc5262-pidf-full.xml"])
    func bundleValidatesKnownGoodPIDF(_ name: String) throws {
        // ../shared/spec/ietf-schemas/README.md lists these as valid against presence-bundle.xsd.
        let bundle = try Self.schema("ietf/presence-bundle.xsd")
        let errors = try bundle.validate(TestFiles.bytes(TestFiles.ietfExamples.appending(path: name)))
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test func basicOutsideTheEnumerationIsReportedWithItsLine() throws {
        // RFC 3863 §4.4: basic is an enumeration of "open" and "closed".
        let good = try String(contentsOf: TestFiles.ietfExamples.appending(path: "rfc3863-presence-basic.xml"), encoding: .utf8)
        #expect(good.contains("<basic>open</basic>"))
        let bad = good.replacingOccurrences(of: "<basic>open</basic>", with: "<basic>maybe</basic>")
        let expectedLine = try #require(bad.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains("maybe") }) + 1
        for schema in [try Self.schema("ietf/pidf.xsd"), try Self.schema("ietf/presence-bundle.xsd")] {
            let errors = try schema.validate(Array(bad.utf8))
            let first = try #require(errors.first)
            #expect(first.code == .schemaViolation)
            #expect(first.line == expectedLine)
            #expect(first.line > 0)
        }
    }

    @Test func invalidRPIDActivityPassesPIDFAloneButFailsTheBundle() throws {
        // PIDF's ##other wildcard is lax: without RPID in the schema set, the unknown RPID
        // element is skipped. The bundle imports rpid.xsd, so the activity is checked.
        let doc = Array(Self.rpidWithUnknownActivity.utf8)
        #expect(try Self.schema("ietf/pidf.xsd").validate(doc).isEmpty)
        let errors = try Self.schema("ietf/presence-bundle.xsd").validate(doc)
        let first = try #require(errors.first)
        #expect(first.code == .schemaViolation)
        #expect(first.line == 8)
    }

    @Test func validationRefusesADoctypeBeforeLibxml2SeesTheDocument() throws {
        let doc = #"<!DOCTYPE presence [<!ENTITY e "x">]><presence xmlns="urn:ietf:params:xml:ns:pidf" entity="pres:a@b">&e;</presence>"#
        do {
            _ = try Self.schema("ietf/pidf.xsd").validate(Array(doc.utf8))
            Issue.record("validated a document with a DTD")
        } catch let error as XMLError {
            #expect(error.code == .doctypeForbidden)
        }
    }

    @Test(arguments: ["2.2.2.1-categories-document.xml", "2.2.2.3.2-self-subscribe-200ok.xml", "2.2.2.2.1-publish-request.xml"])
    func msHarnessValidatesSpecExamples(_ name: String) throws {
        let errors = try Self.schema("ms-pres/harness/all.xsd").validate(TestFiles.bytes(TestFiles.msExamples.appending(path: name)))
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test func compiledSchemaIsSharedAcrossConcurrentValidations() async throws {
        let bundle = try Self.schema("ietf/presence-bundle.xsd")
        let good = try TestFiles.bytes(TestFiles.ietfExamples.appending(path: "rfc4482-cipid.xml"))
        let bad = Array(Self.rpidWithUnknownActivity.utf8)
        let results = try await withThrowingTaskGroup(of: (Bool, Int).self) { group in
            for i in 0..<8 {
                group.addTask {
                    let isGood = i.isMultiple(of: 2)
                    var count = 0
                    for _ in 0..<20 { count = try bundle.validate(isGood ? good : bad).count }
                    return (isGood, count)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.count == 8)
        for (isGood, count) in results { #expect(isGood ? count == 0 : count > 0) }
    }
}
