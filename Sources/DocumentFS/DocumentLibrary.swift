import DocumentModel
import DocumentStore
import Foundation
import SystemSupport

/// The store's documents through the document API alone, without FUSE: open a document as its
/// type, change it through a `FileDocumentConfiguration` binding, save it atomically — the same
/// decoding, `existingFile` and persistence the mount uses. Also reports the state of packages.
public final class DocumentLibrary: Sendable {
    let store: any DocumentStore
    let registry: DocumentTypeRegistry
    let readOnly: Bool

    public init(store: any DocumentStore, types: [DocumentType], readOnly: Bool = false) {
        self.store = store
        self.registry = DocumentTypeRegistry(types: types)
        self.readOnly = readOnly
    }

    public enum LibraryError: Error, CustomStringConvertible {
        case notClaimed(path: String, type: String)
        case notEditable(path: String)

        public var description: String {
            switch self {
            case .notClaimed(let path, let type): "\(path) is not a document of type \(type)"
            case .notEditable(let path): "\(path) is not editable"
            }
        }
    }

    /// Reads and decodes the document at `path` (a file or a package folder) as `type`.
    public func open<Document: FileDocument>(_ type: Document.Type, at path: String) throws -> OpenDocument<Document> {
        let status = try store.status(of: path)
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let contentType = UTType(filenameExtension: (name as NSString).pathExtension, conformingTo: status.kind == .directory ? .directory : .data)
        guard let contentType, Document.readableContentTypes.contains(where: { contentType.conforms(to: $0) }) else {
            throw LibraryError.notClaimed(path: path, type: String(reflecting: type))
        }
        let file = try store.fileWrapper(at: path)
        let document = try Document(configuration: FileDocumentReadConfiguration(contentType: contentType, file: file))
        let editable = !readOnly && status.permissions & 0o222 != 0
            && Document.writableContentTypes.contains { contentType.conforms(to: $0) }
        return OpenDocument(document: document, path: path, contentType: contentType, isEditable: editable, library: self)
    }

    /// Encodes `document` with the stored item as `existingFile`, checks that the result decodes,
    /// and persists it atomically (unchanged files of a package are hard-linked, not rewritten).
    func save<Document: FileDocument>(_ document: Document, at path: String, contentType: UTType) throws {
        let existing = try? store.fileWrapper(at: path)
        let result = try document.fileWrapper(configuration: FileDocumentWriteConfiguration(contentType: contentType, existingFile: existing))
        _ = try Document(configuration: FileDocumentReadConfiguration(contentType: contentType, file: result))
        try store.persist(result, at: path, durable: true)
        if result.isDirectory { try PackageMarker.mark(path, in: store) }
    }

    /// What `docfs status` reports of one package.
    public struct PackageReport: Sendable {
        public enum State: Sendable, Equatable {
            case valid
            case draft(reason: String)
            case corrupt(reason: String)
        }
        public let path: String
        public let typeName: String
        public let state: State
    }

    /// Every package in the store (folders a directory-reading type claims), with its state:
    /// a draft until it first decodes, corrupt when it decoded once and no longer does.
    public func packageReports() -> [PackageReport] {
        var reports: [PackageReport] = []
        var pending = [""]
        while let directory = pending.popLast() {
            for entry in (try? store.list(directory)) ?? [] where entry.kind == .directory || entry.kind == .unknown {
                let path = directory.isEmpty ? entry.name : directory + "/" + entry.name
                guard (try? store.status(of: path))?.kind == .directory else { continue }
                guard let claim = registry.claim(forName: entry.name, isDirectory: true) else {
                    pending.append(path)
                    continue
                }
                let state: PackageReport.State
                do {
                    _ = try claim.type.decode(FileDocumentReadConfiguration(contentType: claim.contentType, file: store.fileWrapper(at: path)))
                    state = .valid
                } catch {
                    state = PackageMarker.isMarked(path, in: store) ? .corrupt(reason: describe(error)) : .draft(reason: describe(error))
                }
                reports.append(PackageReport(path: path, typeName: claim.type.name, state: state))
            }
        }
        return reports.sorted { $0.path < $1.path }
    }
}

/// A document opened through `DocumentLibrary`: edit it through `configuration`, then `save()`.
public final class OpenDocument<Document: FileDocument> {
    public private(set) var document: Document
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

    /// The configuration a view would get: a live binding to the document, its URL, its editability.
    public var configuration: FileDocumentConfiguration<Document> {
        FileDocumentConfiguration(
            document: Binding(get: { self.document }, set: { self.document = $0 }),
            fileURL: library.store.rootURL.appendingPathComponent(path), isEditable: isEditable)
    }

    public func save() throws {
        guard isEditable else { throw DocumentLibrary.LibraryError.notEditable(path: path) }
        try library.save(document, at: path, contentType: contentType)
    }
}
