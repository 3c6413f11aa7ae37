extension XMLCursor {
    /// This element and everything in it, as a recording of its own: the
    /// same names, prefixes, declarations, attributes, text and positions,
    /// without the rest of the document.
    ///
    /// For keeping an element verbatim cheaply: a few flat arrays are copied
    /// (nodes, attributes, the value bytes, and only the names and prefixes
    /// the subtree uses), where ``subtree`` builds one value per element and
    /// text node, and holding the cursor itself would keep the whole
    /// document's recording alive. A run of character data is returned as it is.
    public var detached: XMLCursor {
        let nodes = events.nodes
        let root = nodes[index]
        if root.isText { return self }
        let start = index, end = Int(root.end)
        // The subtree's attributes, declarations and bytes were recorded in
        // document order, so each lies in one contiguous range.
        var attributeEnd = Int(root.attributeStart + root.attributeCount)
        var declarationEnd = Int(root.declarationStart + root.declarationCount)
        var byteStart = Int.max, byteEnd = 0
        var nameMap = [Int32](repeating: -1, count: events.names.count)
        var prefixMap = [Int32](repeating: -1, count: events.prefixes.count)
        var names: [XMLName] = [XMLName("", "")]
        var prefixes: [String] = []
        nameMap[0] = 0
        func name(_ id: Int32) -> Int32 {
            let i = Int(id)
            if nameMap[i] < 0 {
                nameMap[i] = Int32(names.count)
                names.append(events.names[i])
            }
            return nameMap[i]
        }
        func prefix(_ id: Int32) -> Int32 {
            guard id >= 0 else { return -1 }
            let i = Int(id)
            if prefixMap[i] < 0 {
                prefixMap[i] = Int32(prefixes.count)
                prefixes.append(events.prefixes[i])
            }
            return prefixMap[i]
        }
        let attributeStart = Int(root.attributeStart), declarationStart = Int(root.declarationStart)
        for i in start..<end {
            let n = nodes[i]
            if n.isText {
                if n.textCount > 0 {
                    byteStart = min(byteStart, Int(n.textStart))
                    byteEnd = max(byteEnd, Int(n.textStart + n.textCount))
                }
            } else {
                attributeEnd = max(attributeEnd, Int(n.attributeStart + n.attributeCount))
                declarationEnd = max(declarationEnd, Int(n.declarationStart + n.declarationCount))
            }
        }
        var attributes = Array(events.attributes[attributeStart..<attributeEnd])
        for a in attributes where a.valueCount > 0 {
            byteStart = min(byteStart, Int(a.valueStart))
            byteEnd = max(byteEnd, Int(a.valueStart + a.valueCount))
        }
        if byteStart > byteEnd { byteStart = 0; byteEnd = 0 }
        let shift = Int32(byteStart)
        for i in attributes.indices {
            attributes[i].name = name(attributes[i].name)
            attributes[i].prefix = prefix(attributes[i].prefix)
            attributes[i].valueStart = attributes[i].valueCount > 0 ? attributes[i].valueStart - shift : 0
        }
        var copied = Array(nodes[start..<end])
        let base = Int32(start)
        for i in copied.indices {
            if copied[i].isText {
                copied[i].textStart = copied[i].textCount > 0 ? copied[i].textStart - shift : 0
            } else {
                copied[i].end -= base
                copied[i].name = name(copied[i].name)
                copied[i].prefix = prefix(copied[i].prefix)
                copied[i].attributeStart -= Int32(attributeStart)
                copied[i].declarationStart -= Int32(declarationStart)
            }
        }
        // Before the tables are handed over: a declaration's prefix may be one no name used.
        let declarations = events.declarations[declarationStart..<declarationEnd].map {
            XMLEvents.Declaration(prefix: prefix($0.prefix), uri: $0.uri)
        }
        let recording = XMLEvents.copying(
            nodes: copied, names: names, prefixes: prefixes, attributes: attributes,
            declarations: declarations, uris: events.uris,
            bytes: Array(events.bytes[byteStart..<byteEnd]))
        return recording.root
    }
}
