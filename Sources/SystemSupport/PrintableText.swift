/// Text for a log line, a terminal or a record, from strings that may hold names anyone chose: a
/// control character (a newline above all) can never start a new line or field, and a byte that is
/// not UTF-8 shows as the byte it is.
public enum PrintableText {
    /// `text` with `\` as `\\`, newline, carriage return and tab as `\n`, `\r`, `\t`, every other
    /// control character (C0, DEL, C1, and the Unicode line and paragraph separators) as `\u{…}`,
    /// and each non-UTF-8 byte of a name (see `FileSystemPath`) as `\xNN`.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x5C: result += "\\\\"
            case 0x0A: result += "\\n"
            case 0x0D: result += "\\r"
            case 0x09: result += "\\t"
            case FileSystemPath.escapeBase...(FileSystemPath.escapeBase + 0xFF):
                let byte = scalar.value - FileSystemPath.escapeBase
                result += "\\x" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16)
            case _ where isControl(scalar):
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            default:
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value == 0x5C || isControl(scalar)
            || (FileSystemPath.escapeBase...(FileSystemPath.escapeBase + 0xFF)).contains(scalar.value)
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x2028 || value == 0x2029
    }
}
