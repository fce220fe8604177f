import DocumentModel
import DocumentStore
import Foundation
import SystemSupport

/// The store's documents through the document API alone, without FUSE: open a document as its
/// type, change it through a `FileDocumentConfiguration` binding, save it atomically — the same
/// decoding, `existingFile` and persistence the mount uses. Also reports the state of packages.
public final class DocumentLibrary: Sendable {
    public let store: any DocumentStore
    let registry: DocumentTypeRegistry
    let readOnly: Bool

    public convenience init(store: any DocumentStore, types: [DocumentType], readOnly: Bool = false) {
        self.init(store: store, rules: DocumentTypeRules(types: types), readOnly: readOnly)
    }

    /// A library whose files are claimed by `rules` (types, name patterns, extensions), as a mount
    /// with the same rules claims them.
    public init(store: any DocumentStore, rules: DocumentTypeRules, readOnly: Bool = false) {
        self.store = store
        self.registry = DocumentTypeRegistry(rules: rules)
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
        let (contentType, editable) = try claim(path, readable: Document.readableContentTypes, writable: Document.writableContentTypes, typeName: String(reflecting: type))
        let document = try Document(configuration: FileDocumentReadConfiguration(contentType: contentType, file: try store.fileWrapper(at: path)))
        return OpenDocument(document: document, path: path, contentType: contentType, isEditable: editable, library: self)
    }

    /// Encodes `document` with the stored item as `existingFile`, checks that the result decodes,
    /// and persists it atomically (unchanged files of a package are hard-linked, not rewritten).
    func save<Document: FileDocument>(_ document: Document, at path: String, contentType: UTType) throws {
        let existing = try? store.fileWrapper(at: path)
        let result = try document.fileWrapper(configuration: FileDocumentWriteConfiguration(contentType: contentType, existingFile: existing))
        _ = try Document(configuration: FileDocumentReadConfiguration(contentType: contentType, file: result))
        try persist(result, at: path)
    }

    /// Persists a checked `result` atomically, keeping the version it replaces: the one end of every
    /// save a library makes. A version that cannot be kept fails the save here, unlike in a mount:
    /// the library's caller is there to be told, and can save again.
    func persist(_ result: FileWrapper, at path: String) throws {
        try store.keepVersion(of: path)
        try store.persist(result, at: path, durable: true)
        store.recordSave(of: path, by: geteuid())
        if result.isDirectory { try PackageMarker.mark(path, in: store) }
    }

    /// What `docfs check` and `docfs status` report of one document.
    public struct DocumentReport: Sendable {
        public enum State: Sendable, Equatable {
            case valid
            /// An empty file, or a package that has never decoded: not refused, not served as valid.
            case draft(reason: String)
            case corrupt(reason: String)
        }
        public let path: String
        public let typeName: String
        public let contentType: String
        public let isPackage: Bool
        public let state: State
    }

    /// A document found in the store: its path, whether it is a package, and the type that claims it.
    public struct FoundDocument: Sendable {
        public let path: String
        public let isPackage: Bool
        let claim: DocumentClaim
    }

    /// Every document in the store — files and packages a registered type claims — without reading
    /// any of them. The private area, raw files and the insides of packages are skipped.
    public func documents() -> [FoundDocument] {
        var found: [FoundDocument] = []
        var pending = [""]
        while let directory = pending.popLast() {
            for entry in (try? store.list(directory)) ?? [] {
                let path = StorePath.join(directory, entry.name)
                var kind = entry.kind
                if kind == .unknown {
                    switch (try? store.status(of: path))?.kind {
                    case .directory: kind = .directory
                    case .regular: kind = .regular
                    default: continue
                    }
                }
                switch kind {
                case .directory:
                    if let claim = registry.claim(forName: entry.name.string, isDirectory: true) {
                        found.append(FoundDocument(path: path, isPackage: true, claim: claim))
                    } else {
                        pending.append(path)
                    }
                case .regular:
                    if let claim = registry.claim(forName: entry.name.string, isDirectory: false) {
                        found.append(FoundDocument(path: path, isPackage: false, claim: claim))
                    }
                default:
                    continue
                }
            }
        }
        return found.sorted { $0.path < $1.path }
    }

    /// Decodes one document as the mount would serve it, reading only.
    public func check(_ document: FoundDocument) -> DocumentReport {
        let state: DocumentReport.State
        do {
            if !document.isPackage, (try store.status(of: document.path)).size == 0 {
                state = .draft(reason: "it is empty")
            } else {
                let file = try store.fileWrapper(at: document.path)
                _ = try document.claim.type.decode(FileDocumentReadConfiguration(contentType: document.claim.contentType, file: file))
                state = .valid
            }
        } catch {
            let reason = describe(error)
            state = document.isPackage && !PackageMarker.isMarked(document.path, in: store) ? .draft(reason: reason) : .corrupt(reason: reason)
        }
        return DocumentReport(
            path: document.path, typeName: document.claim.type.name, contentType: document.claim.contentType.identifier,
            isPackage: document.isPackage, state: state)
    }

    /// Every package in the store with its state: a draft until it first decodes, corrupt when it
    /// decoded once and no longer does.
    public func packageReports() -> [DocumentReport] {
        documents().filter(\.isPackage).map(check)
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
