import Multipart
import PresenceDocuments
import SIPMessages
import SIPStack

/// A list's notification bodies (RFC 4662 §5): the server writes them from its own table and the
/// members' parts the coordinator rendered for it (``Parts``), and keeps the new version and
/// what each part said.
extension ResourceListServer {
    /// A member's part as rendered in the subscription's body type, by member watch; a member
    /// without state yet has none.
    typealias Parts = [Int: [UInt8]]

    /// The right-hand side of the gateway's Content-IDs (RFC 2392).
    static let contentIDHost = "gateway"

    /// The member watches of list `key` whose parts a body would hold: every member's, or the
    /// one member `only` names.
    func memberWatches(of key: Int, only member: String?) -> [Int] {
        self[key]?.members.filter { member == nil || $0.uri == member }.compactMap(\.watch) ?? []
    }

    /// The next notification body of list `key` whose list URI is `uri`, and its type: with
    /// `only` nil, full state (every member); else that member alone, or nothing (an empty body)
    /// when its part is unchanged. A member without state yet is listed without an instance
    /// (§4.5), an ended one `terminated` with its reason. `answered`: the version moves on (§5.2:
    /// version 0 in the first notification, then exactly one higher in each). The multipart
    /// boundary is taken from `ids`.
    mutating func body(
        of key: Int, uri: String, only member: String?, parts: Parts, bodyType: String, answered: Bool,
        ids: inout IdentifierSource
    ) -> (body: [UInt8], type: String) {
        guard let list = self[key], member.map({ uri in list.members.contains { $0.uri == uri } }) ?? true else {
            return ([], bodyType)
        }
        let boundary = ids.boundary()
        var sent: [(index: Int, digest: BodyDigest?)] = []
        var rlmi = RLMIList(uri: uri, fullState: member == nil)
        var multipart: [MultipartBody.Part] = []
        for index in list.members.indices where member == nil || list.members[index].uri == member {
            let entry = list.members[index]
            var resource = RLMIList.Resource(uri: entry.uri)
            defer { rlmi.resources.append(resource) }
            guard let memberKey = entry.watch else {
                resource.instances = [
                    RLMIList.Instance(id: entry.instance, state: .terminated, reason: entry.ended ?? "rejected")
                ]
                sent.append((index, nil))
                continue
            }
            guard let part = parts[memberKey] else { continue }
            let digest = BodyDigest(part)
            if member != nil, digest == entry.sent { return ([], bodyType) }
            sent.append((index, digest))
            let cid = "\(index).\(boundary)@\(Self.contentIDHost)"
            resource.instances = [RLMIList.Instance(id: entry.instance, state: .active, cid: cid)]
            multipart.append(
                MultipartBody.Part(
                    headers: [
                        ("Content-Transfer-Encoding", "binary"), ("Content-ID", "<\(cid)>"), ("Content-Type", bodyType),
                    ],
                    body: part))
        }
        rlmi.version =
            modify(key) { list in
                for (index, digest) in sent { list.members[index].sent = digest }
                if answered { list.version += 1 }
                return list.version
            } ?? list.version
        let start = "list.\(boundary)@\(Self.contentIDHost)"
        multipart.insert(
            MultipartBody.Part(
                headers: [
                    ("Content-Transfer-Encoding", "binary"), ("Content-ID", "<\(start)>"),
                    ("Content-Type", SIPBodyType.rlmi),
                ], body: rlmi.serialized()),
            at: 0)
        let type =
            "\(SIPBodyType.multipartRelated);type=\"\(SIPBodyType.rlmi)\";start=\"<\(start)>\";boundary=\(boundary)"
        return (MultipartBody(boundary: boundary, parts: multipart).bytes, type)
    }
}
