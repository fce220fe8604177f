import DocumentModel
import TOMLKit

extension UTType {
    /// TOML (toml.io). Apple declares no type for it, so DocFS does, with the MIME type TOML registered.
    public static let toml: UTType = {
        UTType.register(UTTypeDeclaration(
            identifier: "io.toml.document", kind: .imported, conformsTo: ["public.plain-text"],
            filenameExtensions: ["toml"], mimeTypes: ["application/toml"], description: "TOML document"))
        return UTType(importedAs: "io.toml.document", conformingTo: .plainText)
    }()
}

/// A TOML document (`.toml`): accepted when it parses as TOML 1.0 (toml++, through TOMLKit) —
/// no duplicate keys or tables, valid strings, numbers and dates — and refused naming the line and
/// column of the first problem. Saved exactly as written. toml++ is C++ that aborts on some inputs:
/// a mount runs the check in a helper process (`ParserSandbox`).
public struct TOMLDocument: FileDocument {
    public static var readableContentTypes: [UTType] { [.toml] }

    public private(set) var contents: Data

    /// The parsed table.
    public func table() throws -> TOMLTable { try TOMLTable(string: String(decoding: contents, as: UTF8.self)) }

    public init(configuration: ReadConfiguration) throws {
        let data = try configuration.utf8Bytes(format: "TOML")
        _ = try ParserCheck.toml.run(data)
        contents = data
    }

    public func fileWrapper(configuration: WriteConfiguration) throws -> FileWrapper {
        FileWrapper(regularFileWithContents: contents)
    }
}
