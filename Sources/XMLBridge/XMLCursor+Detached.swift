extension XMLCursor {
    /// This element and everything in it, as a recording of its own: the
    /// same names, prefixes, declarations, attributes, text and positions,
    /// without the rest of the document.
    ///
    /// For keeping an element verbatim cheaply: the subtree's part of each
    /// flat run (nodes, attributes, declarations, the value bytes) is copied
    /// into one allocation, with positions moved to start at zero, and the
    /// name, prefix and URI tables are shared (a parse's are its parser
    /// context's, which every recording of that context shares), where
    /// ``subtree`` builds one value per element and text node, and holding
    /// the cursor itself would keep the whole document's recording alive. A
    /// run of character data is returned as it is.
    public var detached: XMLCursor {
        let root = events.nodes[index]
        if root.isText { return self }
        let start = index
        let end = Int(root.end)
        // The subtree's attributes, declarations and bytes were recorded in
        // document order, so each lies in one contiguous range.
        let attributeStart = Int(root.attributeStart)
        let declarationStart = Int(root.declarationStart)
        var attributeEnd = Int(root.attributeStart + root.attributeCount)
        var declarationEnd = Int(root.declarationStart + root.declarationCount)
        var byteStart = Int.max
        var byteEnd = 0
        let nodes = events.nodes[start..<end]
        for n in nodes {
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
        let attributes = events.attributes[attributeStart..<attributeEnd]
        for a in attributes where a.valueCount > 0 {
            byteStart = min(byteStart, Int(a.valueStart))
            byteEnd = max(byteEnd, Int(a.valueStart + a.valueCount))
        }
        if byteStart > byteEnd {
            byteStart = 0
            byteEnd = 0
        }
        let shift = Int32(byteStart)
        let base = Int32(start)
        let firstAttribute = Int32(attributeStart)
        let firstDeclaration = Int32(declarationStart)
        let recording = XMLEvents(
            nodes: UnsafeBufferPointer(rebasing: nodes), tables: events.tables,
            attributes: UnsafeBufferPointer(rebasing: attributes),
            declarations: UnsafeBufferPointer(rebasing: events.declarations[declarationStart..<declarationEnd]),
            bytes: UnsafeBufferPointer(rebasing: events.bytes[byteStart..<byteEnd])
        ) { nodes, attributes in
            for i in nodes.indices {
                if nodes[i].isText {
                    nodes[i].textStart = nodes[i].textCount > 0 ? nodes[i].textStart - shift : 0
                } else {
                    nodes[i].end -= base
                    nodes[i].attributeStart -= firstAttribute
                    nodes[i].declarationStart -= firstDeclaration
                }
            }
            for i in attributes.indices {
                attributes[i].valueStart = attributes[i].valueCount > 0 ? attributes[i].valueStart - shift : 0
            }
        }
        return recording.root
    }
}
