import DocumentModel
import DocumentStore
import Foundation

extension DocumentLibrary {
    /// Reads and decodes the reference document at `path` as `type`.
    public func open<Document: ReferenceFileDocument>(_ type: Document.Type, at path: String) throws -> OpenReferenceDocument<Document> {
        let (contentType, editable) = try claim(path, readable: Document.readableContentTypes, writable: Document.writableContentTypes, typeName: String(reflecting: type))
        let document = try Document(configuration: FileDocumentReadConfiguration(contentType: contentType, file: try store.fileWrapper(at: path)))
        return OpenReferenceDocument(document: document, path: path, contentType: contentType, isEditable: editable, library: self)
    }

    /// The content type of the item at `path` (the mount's: see `DocumentClassifier`) if one of
    /// `readable` reads it, and whether the document may be saved.
    func claim(_ path: String, readable: [UTType], writable: [UTType], typeName: String) throws -> (UTType, Bool) {
        let status = try store.status(of: path)
        guard let contentType = classifier.declaredContentType(forPath: path, isDirectory: status.kind == .directory),
              readable.contains(where: { contentType.conforms(to: $0) })
        else {
            throw LibraryError.notClaimed(path: path, type: typeName)
        }
        let editable = !readOnly && status.permissions & 0o222 != 0 && writable.contains { contentType.conforms(to: $0) }
        return (contentType, editable)
    }

}

/// A reference document opened through `DocumentLibrary`: change it (through its methods or
/// `configuration.$document`), then `save()`.
public final class OpenReferenceDocument<Document: ReferenceFileDocument> {
    public let document: Document
    public let path: String
    public let contentType: UTType
    public let isEditable: Bool
    private let library: DocumentLibrary

    init(document: Document, path: String, contentType: UTType, isEditable: Bool, library: DocumentLibrary) {
        self.document = document
        self.path = path
        self.contentType = contentType
        self.isEditable = isEditable
        self.library = library
    }

    /// The configuration a view would get: the observed document, its URL, its editability.
    public var configuration: ReferenceFileDocumentConfiguration<Document> {
        ReferenceFileDocumentConfiguration(document: document, fileURL: library.store.rootURL.appendingPathComponent(path), isEditable: isEditable)
    }

    public func save() throws {
        guard isEditable else { throw DocumentLibrary.LibraryError.notEditable(path: path) }
        try library.save(at: path, as: .referenceFileDocument(Document.self), contentType: contentType) { configuration in
            try document.fileWrapper(snapshot: try document.snapshot(contentType: contentType), configuration: configuration)
        }
    }
}
