/// One well-formed UTF-8 sequence, as the Unicode standard defines it: no overlong forms, no
/// surrogates, nothing past U+10FFFF. Shared by the name encoding and the text validators.
public enum UTF8Sequence {
    /// The code point and length of the multi-byte sequence starting at `index`, or nil when the
    /// bytes there are not one.
    public static func decode(_ bytes: UnsafeRawBufferPointer, at index: Int) -> (value: UInt32, length: Int)? {
        let lead = bytes[index]
        let length: Int
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        var value: UInt32
        switch lead {
        case 0xC2...0xDF: length = 2; value = UInt32(lead & 0x1F)
        case 0xE0: length = 3; lower = 0xA0; value = UInt32(lead & 0x0F)
        case 0xE1...0xEC, 0xEE...0xEF: length = 3; value = UInt32(lead & 0x0F)
        case 0xED: length = 3; upper = 0x9F; value = UInt32(lead & 0x0F)
        case 0xF0: length = 4; lower = 0x90; value = UInt32(lead & 0x07)
        case 0xF1...0xF3: length = 4; value = UInt32(lead & 0x07)
        case 0xF4: length = 4; upper = 0x8F; value = UInt32(lead & 0x07)
        default: return nil
        }
        guard index + length <= bytes.count else { return nil }
        let second = bytes[index + 1]
        guard second >= lower && second <= upper else { return nil }
        value = value << 6 | UInt32(second & 0x3F)
        for offset in 2..<max(2, length) {
            let byte = bytes[index + offset]
            guard byte & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt32(byte & 0x3F)
        }
        return (value, length)
    }
}
