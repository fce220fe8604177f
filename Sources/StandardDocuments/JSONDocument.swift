import DocumentModel

/// A JSON document (`public.json`): accepted when it parses as JSON (any value at the top level,
/// as RFC 8259 allows), refused with `CocoaError(.fileReadCorruptFile)` otherwise. Saved exactly as
/// written — DocFS validates JSON, it does not reformat it.
public struct JSONDocument: FileDocument {
    public static var readableContentTypes: [UTType] { [.json] }

    public private(set) var contents: Data

    /// The parsed value (`[String: Any]`, `[Any]`, `String`, `NSNumber`, `NSNull`).
    public func value() throws -> Any {
        try JSONSerialization.jsonObject(with: contents, options: [.fragmentsAllowed])
    }

    public init(value: Any) throws {
        contents = try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys])
    }

    public init(configuration: ReadConfiguration) throws {
        guard let data = configuration.file.regularFileContents else { throw CocoaError(.fileReadCorruptFile) }
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw CocoaError(.fileReadCorruptFile, userInfo: [
                NSLocalizedFailureReasonErrorKey: "not valid JSON: \(error.localizedDescription)", NSUnderlyingErrorKey: error,
            ])
        }
        contents = data
    }

    public func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: contents)
    }
}
