/// An enhanced-presence `categories` document ([MS-PRES] §2.2.2.1, schema §6.2).
///
/// ```
/// <categories uri="sip:publisher"> <category name instance? container? version?
///     publishTime? expireType? expires? endpointId?> payload? </category>* </categories>
/// ```
public struct CategoriesDocument: Hashable, Sendable {
    /// The publisher (`uri` attribute, required).
    public var uri: String
    public var categories: [Category]

    public init(uri: String, categories: [Category] = []) {
        self.uri = uri
        self.categories = categories
    }

    /// The categories with a given name, in document order.
    public func categories(named name: CategoryName) -> [Category] { categories.filter { $0.name == name } }
}
