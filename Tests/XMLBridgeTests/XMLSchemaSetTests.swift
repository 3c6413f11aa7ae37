import Foundation
import Testing
import XMLBridge

/// XMLSchemaSet over the Schemas/ folder read from disk, keyed like the embedded files.
@Suite struct XMLSchemaSetTests {
    static let pidf = "urn:ietf:params:xml:ns:pidf"
    static let rlmi = "urn:ietf:params:xml:ns:rlmi"

    static func rootName(_ bytes: [UInt8]) throws -> XMLName { try XMLParser.parse(bytes).name }

    @Test func schemaForPIDFPresenceValidatesRFCExample() throws {
        let set = try XMLSchemaSet(files: TestFiles.embeddedSchemaFiles())
        let doc = try TestFiles.bytes(TestFiles.ietfExamples.appending(path: "rfc3863-presence-basic.xml"))
        let name = try Self.rootName(doc)
        let schema = try #require(try set.schema(forNamespace: name.namespace, root: name.local))
        #expect(schema.path.hasSuffix("Schemas/ietf/presence-bundle.xsd"))
        #expect(try schema.validate(doc).isEmpty)
        // Validating through the bundle checks RPID too.
        #expect(!(try schema.validate(Array(XMLSchemaTests.rpidWithUnknownActivity.utf8)).isEmpty))
    }

    @Test func unknownRootHasNoSchema() throws {
        let set = try XMLSchemaSet(files: TestFiles.embeddedSchemaFiles())
        #expect(try set.schema(forNamespace: "urn:unknown", root: "presence") == nil)
        #expect(try set.schema(forNamespace: Self.pidf, root: "tuple") == nil)
        // MS-PRES 9 only defines <aggregate>; the msrtc.pidf presentity root has no schema.
        #expect(try set.schema(forNamespace: "http://schemas.microsoft.com/2002/09/sip/presence", root: "presentity") == nil)
    }

    /// Every row of roots.tsv validates at least one real example document with that root.
    @Test func everyRootRowValidatesARealDocument() throws {
        let set = try XMLSchemaSet(files: TestFiles.embeddedSchemaFiles())
        var examples: [URL] = []
        for folder in [TestFiles.msExamples, TestFiles.ietfExamples, TestFiles.upnpExamples] {
            examples += try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
                .filter { $0.pathExtension == "xml" }
        }
        var validated: Set<XMLSchemaSet.Root> = []
        for url in examples {
            let bytes = try TestFiles.bytes(url)
            let name = try Self.rootName(bytes)
            for row in set.rows(forNamespace: name.namespace, root: name.local) where !validated.contains(row) {
                if try set.schema(at: row.schema).validate(bytes).isEmpty { validated.insert(row) }
            }
        }
        // No spec example of these validates, for reasons in the schemas (Schemas/README.md):
        // batchSub examples use attributes 6.8 does not declare; device examples put white space
        // in empty capability elements. Checked here with those defects removed.
        let batch = #"<batchSub xmlns="http://schemas.microsoft.com/2006/01/sip/batch-subscribe"><action name="subscribe"><adhocList><resource uri="sip:john@contoso.com"/></adhocList><categoryList xmlns="http://schemas.microsoft.com/2006/09/sip/categorylist"><category name="state"/></categoryList></action></batchSub>"#
        let device = #"<device xmlns="http://schemas.microsoft.com/2006/09/sip/device" endpointId="2CD4F7CA-B1D1-5EDA-8D79-79EE4298414D"><capabilities preferred="false" uri="sip:bob@contoso.com"><text capture="true" render="true" publish="false"/></capabilities><timezone>00:00:00-00:00</timezone><machineName>BOB-B</machineName></device>"#
        for text in [batch, device] {
            let name = try Self.rootName(Array(text.utf8))
            let row = try #require(set.rows(forNamespace: name.namespace, root: name.local).first)
            if try set.schema(at: row.schema).validate(Array(text.utf8)).isEmpty { validated.insert(row) }
        }
        let missing = set.roots.filter { !validated.contains($0) }
        #expect(missing.isEmpty, "rows with no validating document: \(missing.map { "\($0.root) \($0.schema)" })")
    }

    @Test func rlmiHasTheRFCSchemaFirstAndMicrosoftsSecond() throws {
        let set = try XMLSchemaSet(files: TestFiles.embeddedSchemaFiles())
        let rows = set.rows(forNamespace: Self.rlmi, root: "list")
        #expect(rows.map(\.schema) == ["ietf/rlmi.xsd", "ms-pres/6.9-rlmi.xsd"])
        // MS-PRES 4.6: state="resubscribe" is a Microsoft extension RFC 4662 §5.1 does not allow.
        let ms = try TestFiles.bytes(TestFiles.msExamples.appending(path: "4.6-batch-200ok-rlmi-resubscribe.xml"))
        #expect(!(try set.schema(at: rows[0].schema).validate(ms).isEmpty))
        #expect(try set.schema(at: rows[1].schema).validate(ms).isEmpty)
    }

    @Test func schemasAreCompiledOnceAndShared() async throws {
        let set = try XMLSchemaSet(files: TestFiles.embeddedSchemaFiles())
        let ids = try await withThrowingTaskGroup(of: ObjectIdentifier.self) { group in
            for _ in 0..<4 {
                group.addTask { ObjectIdentifier(try set.schema(at: "ietf/presence-bundle.xsd")) }
            }
            return try await group.reduce(into: Set<ObjectIdentifier>()) { $0.insert($1) }
        }
        #expect(ids.count == 1)
    }

    @Test func filesGoToAPrivateDirectoryThatIsRemovedWithTheSet() throws {
        var set: XMLSchemaSet? = try XMLSchemaSet(files: TestFiles.embeddedSchemaFiles())
        let directory = try #require(set?.directory)
        let attributes = try FileManager.default.attributesOfItem(atPath: directory)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o700)
        #expect(FileManager.default.fileExists(atPath: directory + "/Schemas/ms-pres/stubs/statetypes.stub.xsd"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/Schemas/README.md"))
        _ = set
        set = nil
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    @Test(arguments: ["../etc/passwd", "/etc/passwd", "ietf//pidf.xsd", "./pidf.xsd", ""])
    func pathsThatCouldLeaveTheDirectoryAreRefused(_ path: String) throws {
        let set = try XMLSchemaSet(files: TestFiles.embeddedSchemaFiles())
        do { _ = try set.schema(at: path); Issue.record("accepted \(path)") } catch { #expect(error.code == .schemaUnusable) }
    }

    @Test func malformedOrMissingRootsTableIsUnusable() {
        var files = (try? TestFiles.embeddedSchemaFiles()) ?? [:]
        files["Schemas/roots.tsv"] = nil
        do { _ = try XMLSchemaSet(files: files); Issue.record("accepted no roots.tsv") } catch { #expect(error.code == .schemaUnusable) }
        files["Schemas/roots.tsv"] = "namespace\troot\tschema\tsource\nurn:x\tr\t../escape.xsd\tnone\n"
        do { _ = try XMLSchemaSet(files: files); Issue.record("accepted ../") } catch { #expect(error.code == .schemaUnusable) }
        files["Schemas/roots.tsv"] = "namespace\troot\tschema\tsource\nurn:x\tr\tietf/missing.xsd\tnone\n"
        do { _ = try XMLSchemaSet(files: files); Issue.record("accepted a missing schema") } catch { #expect(error.code == .schemaUnusable) }
    }
}
