import Foundation
import SIPStack
import Testing

/// How an event package is stored in the durable store's records (docs/state.md, "What is
/// stored"): one string since schema version 2, the object of version 1 still read.
@Suite struct SIPEventPackageCodingTests {
    struct Holder: Codable, Equatable {
        var package: SIPEventPackage
    }

    static let winfo = SIPEventPackage(
        name: "presence.winfo", bodyTypes: ["application/watcherinfo+xml"], defaultBodyType: "application/watcherinfo+xml",
        defaultExpires: 3600, minimumExpires: 60, maximumExpires: 7200)

    @Test func aPackageIsStoredAsOneStringAndReadBack() throws {
        let data = try JSONEncoder().encode(Holder(package: .presence))
        let text = String(decoding: data, as: UTF8.self)
        #expect(text == #"{"package":"presence 3600 60 86400 application\/pidf+xml "#
            + #"application\/msrtc-event-categories+xml,text\/xml+msrtc.pidf,application\/pidf+xml"}"#)
        #expect(try JSONDecoder().decode(Holder.self, from: data) == Holder(package: .presence))
        let winfo = try JSONEncoder().encode(Holder(package: Self.winfo))
        #expect(try JSONDecoder().decode(Holder.self, from: winfo) == Holder(package: Self.winfo))
        // No body types at all (an open vocabulary: a package may name none).
        var bare = Self.winfo
        bare.bodyTypes = []
        let none = try JSONEncoder().encode(Holder(package: bare))
        #expect(try JSONDecoder().decode(Holder.self, from: none) == Holder(package: bare))
    }

    @Test func theObjectOfSchemaVersion1IsStillRead() throws {
        let version1 = #"""
            {"package":{"name":"presence","bodyTypes":["application/msrtc-event-categories+xml","text/xml+msrtc.pidf",
            "application/pidf+xml"],"defaultBodyType":"application/pidf+xml","defaultExpires":3600,"minimumExpires":60,
            "maximumExpires":86400}}
            """#
        #expect(try JSONDecoder().decode(Holder.self, from: Data(version1.utf8)) == Holder(package: .presence))
    }

    @Test func aDamagedPackageIsADecodingError() {
        for damaged in [#""presence 3600 60""#, #""presence x 60 86400 a/b a/b""#, #""""#, "7", #"{"name":"presence"}"#] {
            #expect(throws: DecodingError.self, "\(damaged)") {
                _ = try JSONDecoder().decode(Holder.self, from: Data(#"{"package":\#(damaged)}"#.utf8))
            }
        }
    }
}
