import DocumentModel

/// A JSON document (`public.json`): accepted when it is JSON as RFC 8259 defines it (any value at
/// the top level; no trailing commas, comments or other extensions), refused with
/// `CocoaError(.fileReadCorruptFile)` naming the line and column otherwise. Validation builds no
/// value, so a 50 MB document costs a pass over its bytes, not a tree of objects. Saved exactly as
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
        let data = try configuration.regularFileBytes()
        let failure = data.withUnsafeBytes { bytes -> JSONSyntaxError? in
            do throws(JSONSyntaxError) {
                try JSONValidator.validate(bytes)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw refusal("not valid JSON: \(failure)", underlying: failure) }
        contents = data
    }

    public func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: contents)
    }
}
