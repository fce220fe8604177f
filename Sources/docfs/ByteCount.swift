/// Sizes as people write them on a command line: `1048576`, `500K`, `20M`, `2G` (powers of 1024).
enum ByteCount {
    static func parse(_ text: String) -> Int64? {
        guard let last = text.last else { return nil }
        let multipliers: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        let multiplier = multipliers[Character(last.uppercased())]
        guard let number = Int64(multiplier == nil ? text : String(text.dropLast())), number >= 0 else { return nil }
        let (product, overflow) = number.multipliedReportingOverflow(by: multiplier ?? 1)
        return overflow ? nil : product
    }
}
