import DocumentFS
import StandardDocuments

/// The document types `docfs` serves: JSON before plain text (JSON is text, not plain text, so the
/// order only matters for types that claim both); anything neither claims is raw data.
enum StandardDocumentTypes {
    static let all: [DocumentType] = [
        .fileDocument(JSONDocument.self),
        .fileDocument(PlainTextDocument.self),
        .fileDocument(TextBundleDocument.self),
    ]
}
