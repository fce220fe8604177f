import DocumentModel

/// Comma- or tab-separated values (`.csv`, `.tsv`) in UTF-8, accepted when every record parses and
/// has as many fields as the first (the rules are those of `DelimitedValuesValidator`), refused
/// naming the line and column of the first problem. Saved exactly as written.
public struct DelimitedTextDocument: FileDocument {
    public static var readableContentTypes: [UTType] { [.commaSeparatedText, .tabSeparatedText] }

    public private(set) var contents: Data

    public init(configuration: ReadConfiguration) throws {
        let isTabSeparated = configuration.contentType.conforms(to: .tabSeparatedText)
        let format = isTabSeparated ? "tab-separated values" : "comma-separated values"
        let data = try configuration.utf8Bytes(format: format)
        let validator = DelimitedValuesValidator(dialect: isTabSeparated ? .tabSeparated : .commaSeparated)
        let problem = data.withUnsafeBytes { validator.validate($0)?.description }
        if let problem { throw refusal("not valid \(format): \(problem)") }
        contents = data
    }

    public func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: contents)
    }
}
