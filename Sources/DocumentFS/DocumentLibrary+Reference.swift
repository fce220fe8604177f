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

    /// The content type of the item at `path` if one of `readable` claims it, and whether the
    /// document may be saved.
    func claim(_ path: String, readable: [UTType], writable: [UTType], typeName: String) throws -> (UTType, Bool) {
        let status = try store.status(of: path)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let contentType = UTType(filenameExtension: (name as NSString).pathExtension, conformingTo: status.kind == .directory ? .directory : .data)
        guard let contentType, readable.contains(where: { contentType.conforms(to: $0) }) else {
            throw LibraryError.notClaimed(path: path, type: typeName)
        }
        let editable = !readOnly && status.permissions & 0o222 != 0 && writable.contains { contentType.conforms(to: $0) }
        return (contentType, editable)
    }

    /// Snapshots and encodes the document with the stored item as `existingFile`, checks that the
    /// result decodes, and persists it atomically.
    func save<Document: ReferenceFileDocument>(_ document: Document, at path: String, contentType: UTType) throws {
        let existing = try? store.fileWrapper(at: path)
        let snapshot = try document.snapshot(contentType: contentType)
        let result = try document.fileWrapper(snapshot: snapshot, configuration: FileDocumentWriteConfiguration(contentType: contentType, existingFile: existing))
        _ = try Document(configuration: FileDocumentReadConfiguration(contentType: contentType, file: result))
        try persist(result, at: path)
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
        try library.save(document, at: path, contentType: contentType)
    }
}
