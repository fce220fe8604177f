import DocumentFS
import StandardDocuments

/// The document types DocFS ships, in the order they are tried, under the names configuration files
/// and `docfs types` use. Specific formats come before `text`, which takes every other type
/// conforming to `public.text`.
public enum StandardDocumentTypes {
    public static let all: [DocumentType] = [
        .fileDocument(JSONDocument.self, named: "json"),
        .fileDocument(YAMLDocument.self, named: "yaml"),
        .fileDocument(TOMLDocument.self, named: "toml"),
        .fileDocument(PropertyListDocument.self, named: "plist"),
        .fileDocument(XMLTextDocument.self, named: "xml"),
        .fileDocument(DelimitedTextDocument.self, named: "csv"),
        .fileDocument(PlainTextDocument.self, named: "text"),
        .fileDocument(TextBundleDocument.self, named: "textbundle"),
    ]

    public static func named(_ name: String) -> DocumentType? { all.first { $0.name == name } }
}
