public import XMLBridge

/// The `note` category (example-derived: [MS-PRES] has no schema for it, docs/flows.md, "Note category format").
///
/// ```
/// <note xmlns="http://schemas.microsoft.com/2006/09/sip/note">
///   <body type="personal|OOF" uri="" startTime? endTime?>text</body>*
/// </note>
/// ```
public struct MSNote: Hashable, Sendable {
    public var bodies: [Body]

    /// One `body`: 56 bytes inline, its rarely written attributes (start and end times, unknown
    /// ones) out of line, since a gateway keeps the note of every watched presentity.
    public struct Body: Hashable, Sendable {
        /// "personal" in every spec example; out-of-office notes use "OOF", a value [MS-PRES] does
        /// not document (docs/flows.md, "Note category format"): this project reads any value and
        /// writes "OOF" for them.
        public var type: String?
        public var uri: String?
        public var text: String
        private var rare: SharedFields<Rare>?

        struct Rare: RareFields {
            var startTime: String?
            var endTime: String?
            var otherAttributes: [XMLAttribute] = []

            var isEmpty: Bool { startTime == nil && endTime == nil && otherAttributes.isEmpty }

            /// Unknown attributes compare in any order (an XML element's attributes have none).
            static func == (a: Rare, b: Rare) -> Bool {
                a.startTime == b.startTime && a.endTime == b.endTime
                    && a.otherAttributes.count == b.otherAttributes.count
                    && a.otherAttributes.allSatisfy { x in
                        b.otherAttributes.contains { $0.name == x.name && $0.value == x.value }
                    }
            }

            func hash(into hasher: inout Hasher) { hasher.combine(startTime) }
        }

        public init(
            text: String, type: String? = "personal", uri: String? = "", startTime: String? = nil,
            endTime: String? = nil, otherAttributes: [XMLAttribute] = []
        ) {
            self.text = text
            self.type = type
            self.uri = uri
            let rare = Rare(startTime: startTime, endTime: endTime, otherAttributes: otherAttributes)
            self.rare = Optional(keeping: rare)
        }

        public var startTime: String? {
            get { rare?.value.startTime }
            set { rare.update(emptying: newValue == nil) { $0.startTime = newValue } }
        }
        public var endTime: String? {
            get { rare?.value.endTime }
            set { rare.update(emptying: newValue == nil) { $0.endTime = newValue } }
        }
        public var otherAttributes: [XMLAttribute] {
            get { rare?.value.otherAttributes ?? [] }
            set { rare.update(emptying: newValue.isEmpty) { $0.otherAttributes = newValue } }
        }

        public static func == (a: Body, b: Body) -> Bool {
            a.type == b.type && a.uri == b.uri && a.text == b.text && a.rare == b.rare
        }

        public func hash(into hasher: inout Hasher) { hasher.combine(text) }
    }

    public init(bodies: [Body] = []) { self.bodies = bodies }
}
