/// Where a byte offset falls in a text, for error messages: 1-based line and column, the column
/// counted in characters (UTF-8 sequences), not bytes.
struct TextPosition: CustomStringConvertible, Sendable {
    var line = 1
    var column = 1
    var offset: Int

    init(of offset: Int, in bytes: UnsafeRawBufferPointer) {
        self.offset = offset
        for index in 0..<min(offset, bytes.count) {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
    }

    var description: String { "line \(line), column \(column)" }
}

/// A byte as an error message shows it.
func describeByte(at offset: Int, in bytes: UnsafeRawBufferPointer) -> String {
    guard offset < bytes.count else { return "the end of the document" }
    let byte = bytes[offset]
    if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
    switch byte {
    case UInt8(ascii: " "): return "a space"
    case UInt8(ascii: "\n"): return "a line break"
    case UInt8(ascii: "\t"): return "a tab"
    default: return "byte 0x" + String(byte, radix: 16, uppercase: true)
    }
}
