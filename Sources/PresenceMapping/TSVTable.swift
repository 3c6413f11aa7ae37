/// A tab-separated table as the files in `Mappings/` write it: `#` comment
/// lines, one header row, `-` for an empty field.
struct TSVTable {
    struct Row {
        let file: String
        let line: Int
        let columns: [String]
        let fields: [String]

        /// The field of a column; `nil` for `-`.
        func optional(_ column: String) -> String? {
            guard let i = columns.firstIndex(of: column) else { return nil }
            let value = fields[i]
            return value == "-" ? nil : value
        }

        func string(_ column: String) -> String { optional(column) ?? "" }

        func error(_ column: String, _ message: String, code: MappingError.Code = .malformedRow) -> MappingError {
            // Column = 1-based character position of the field in the line.
            var position = 1
            if let index = columns.firstIndex(of: column) {
                for f in fields.prefix(index) { position += f.count + 1 }
            }
            return MappingError(code, "column \(column): \(message)", file: file, line: line, column: position)
        }

        func uint32(_ column: String) throws(MappingError) -> UInt32 {
            guard let value = UInt32(string(column)) else {
                throw error(column, "\"\(string(column))\" is not an integer in 0...4294967295")
            }
            return value
        }
    }

    let file: String
    let columns: [String]
    let rows: [Row]

    init(file: String, text: String, required: [String]) throws(MappingError) {
        self.file = file
        var header: [String]?
        var rows: [Row] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard let columns = header else {
                header = fields
                for name in required where !fields.contains(name) {
                    throw MappingError(
                        .malformedRow, "header lacks column \"\(name)\"", file: file, line: index + 1, column: 1)
                }
                continue
            }
            guard fields.count == columns.count else {
                throw MappingError(
                    .malformedRow, "\(fields.count) fields where the header has \(columns.count)",
                    file: file, line: index + 1, column: 1)
            }
            rows.append(Row(file: file, line: index + 1, columns: columns, fields: fields))
        }
        guard let header else { throw MappingError(.malformedRow, "no header row", file: file) }
        self.columns = header
        self.rows = rows
    }
}
