import DocumentModel

/// Text — `.txt`, `.md`, `.html`, source code and every other type conforming to `public.text` that
/// no more specific type claims — as UTF-8; the two UTF-16 types (`.utxt`) as UTF-16 with or
/// without a byte order mark. Anything else is refused with `CocoaError(.fileReadCorruptFile)`
/// naming the first bad byte's line and column.
///
/// The document keeps the bytes it was read from (a mapped file stays mapped) and decodes `text`
/// only when asked, so validating a large file costs one pass and no copy; saving an unchanged
/// document returns the very bytes it read.
public struct PlainTextDocument: FileDocument {
    public static var readableContentTypes: [UTType] { [.text] }

    private var contents: Data
    private var isUTF16 = false

    public var text: String {
        get { isUTF16 ? UTF16Text.decode(contents) : String(decoding: contents, as: UTF8.self) }
        set {
            contents = Data(newValue.utf8)
            isUTF16 = false
        }
    }

    public init(text: String = "") { contents = Data(text.utf8) }

    public init(configuration: ReadConfiguration) throws {
        let data = try configuration.regularFileBytes()
        if configuration.contentType.conforms(to: .utf16PlainText) || configuration.contentType.conforms(to: .utf16ExternalPlainText) {
            if let problem = UTF16Text.problem(in: data) { throw refusal("not valid UTF-16 text: \(problem)") }
            contents = data
            isUTF16 = true
            return
        }
        let problem = data.withUnsafeBytes { bytes -> String? in
            guard let offset = firstInvalidUTF8(bytes) else { return nil }
            return "not valid UTF-8 text: \(describeByte(at: offset, in: bytes)) at byte offset \(offset) (\(TextPosition(of: offset, in: bytes)))"
        }
        if let problem { throw refusal(problem) }
        contents = data
    }

    public func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: contents)
    }
}

/// UTF-16 text: big-endian unless a byte order mark says otherwise (as Unicode specifies for text
/// without one).
enum UTF16Text {
    static func problem(in data: Data) -> String? {
        guard data.count % 2 == 0 else { return "\(data.count) bytes is an odd length for UTF-16" }
        var expectingLowSurrogate = false
        let units = codeUnits(data)
        for (index, unit) in units.enumerated() {
            switch unit {
            case 0xD800...0xDBFF:
                if expectingLowSurrogate { return "an unpaired high surrogate at byte offset \((index - 1) * 2)" }
                expectingLowSurrogate = true
            case 0xDC00...0xDFFF:
                if !expectingLowSurrogate { return "an unpaired low surrogate at byte offset \(index * 2)" }
                expectingLowSurrogate = false
            default:
                if expectingLowSurrogate { return "an unpaired high surrogate at byte offset \((index - 1) * 2)" }
            }
        }
        return expectingLowSurrogate ? "the text ends inside a surrogate pair" : nil
    }

    static func decode(_ data: Data) -> String {
        var units = codeUnits(data)[...]
        if units.first == 0xFEFF { units = units.dropFirst() }
        return String(decoding: units, as: UTF16.self)
    }

    private static func codeUnits(_ data: Data) -> [UInt16] {
        let bytes = Array(data)
        let littleEndian = bytes.starts(with: [0xFF, 0xFE])
        return stride(from: 0, to: bytes.count - 1, by: 2).map { offset in
            littleEndian ? UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
                         : UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
        }
    }
}
