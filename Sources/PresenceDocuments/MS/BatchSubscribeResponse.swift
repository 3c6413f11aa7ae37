/// The multipart/related body of a category SUBSCRIBE's 200 OK (and of RLMI
/// notifications): an RLMI part, then one categories document per accepted
/// resource ([MS-PRES] §2.2.2.4.2, RFC 2387, RFC 4662 §5).
public struct BatchSubscribeResponse: Hashable, Sendable {
    public var list: RLMIList
    public var categories: [CategoriesDocument]
    public init(list: RLMIList, categories: [CategoriesDocument] = []) {
        self.list = list
        self.categories = categories
    }
}
