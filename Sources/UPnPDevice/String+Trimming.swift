extension String {
    func trimmingCharacters(in set: String) -> String {
        let chars = Set(set)
        guard let start = firstIndex(where: { !chars.contains($0) }),
            let end = lastIndex(where: { !chars.contains($0) })
        else { return "" }
        return String(self[start...end])
    }
}
