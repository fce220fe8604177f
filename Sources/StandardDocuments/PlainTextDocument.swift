import DocumentModel

/// Plain text — `.txt`, `.md`, source code and every other type conforming to `public.plain-text` —
/// as UTF-8. Anything that is not valid UTF-8 is refused with `CocoaError(.fileReadCorruptFile)`.
///
/// The document keeps the bytes it was read from (a mapped file stays mapped) and decodes `text`
/// only when asked, so validating a large file costs one pass and no copy; saving an unchanged
/// document returns the very bytes it read.
public struct PlainTextDocument: FileDocument {
    public static var readableContentTypes: [UTType] { [.plainText] }

    private var contents: Data

    public var text: String {
        get { String(decoding: contents, as: UTF8.self) }
        set { contents = Data(newValue.utf8) }
    }

    public init(text: String = "") { contents = Data(text.utf8) }

    public init(configuration: ReadConfiguration) throws {
        guard let data = configuration.file.regularFileContents else { throw CocoaError(.fileReadCorruptFile) }
        let problem = data.withUnsafeBytes { bytes -> String? in
            guard let offset = firstInvalidUTF8(bytes) else { return nil }
            return "not valid UTF-8 text: \(describeByte(at: offset, in: bytes)) at byte offset \(offset) (\(TextPosition(of: offset, in: bytes)))"
        }
        if let problem { throw CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedFailureReasonErrorKey: problem]) }
        contents = data
    }

    public func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: contents)
    }
}
