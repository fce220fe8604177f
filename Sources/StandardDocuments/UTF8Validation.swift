/// Whether `bytes` are well-formed UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF), checked in place: validating a mapped 1 GiB file must not build a 1 GiB String.
func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var index = 0
    let count = bytes.count
    while index < count {
        // Fast path: eight ASCII bytes at a time.
        while index + 8 <= count,
              bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
            index += 8
        }
        guard index < count else { return true }
        let lead = bytes[index]
        if lead < 0x80 { index += 1; continue }
        let length: Int
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upper = 0x9F
        case 0xF0: length = 4; lower = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upper = 0x8F
        default: return false
        }
        guard index + length <= count else { return false }
        let second = bytes[index + 1]
        guard second >= lower && second <= upper else { return false }
        for offset in 2..<max(2, length) where bytes[index + offset] & 0xC0 != 0x80 { return false }
        index += length
    }
    return true
}
