import DocumentModel
import DocumentStore
import Foundation
import Logging
import SystemSupport

/// The store's documents through the document API alone, without FUSE: open a document as its
/// type, change it through a `FileDocumentConfiguration` binding, save it atomically — the same
/// decoding, `existingFile` and persistence the mount uses. Also reports the state of packages.
public final class DocumentLibrary: Sendable {
    public let store: any DocumentStore
    let classifier: DocumentClassifier
    let pipeline: CommitPipeline
    let readOnly: Bool

    public convenience init(store: any DocumentStore, types: [DocumentType], readOnly: Bool = false) {
        self.init(store: store, rules: DocumentTypeRules(types: types), readOnly: readOnly)
    }

    /// A library whose files are claimed by `rules` (types, name patterns, extensions), as a mount
    /// with the same rules claims them.
    public init(store: any DocumentStore, rules: DocumentTypeRules, readOnly: Bool = false) {
        self.store = store
        self.classifier = DocumentClassifier(rules: rules)
        self.pipeline = CommitPipeline(store: store, codec: DocumentCodec(), logger: Logger(label: "docfs.library"))
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

    /// Encodes the document (`encode`, given the stored item as `existingFile`), checks that what it
    /// returns decodes as `type` would decode it in a mount, and persists it atomically through the
    /// commit pipeline, keeping the version it replaces (unchanged files of a package are
    /// hard-linked, not rewritten). A version that cannot be kept fails the save here, unlike in a
    /// mount: the library's caller is there to be told, and can save again.
    func save(at path: String, as type: DocumentType, contentType: UTType, encode: (FileDocumentWriteConfiguration) throws -> FileWrapper) throws {
        let existing = try? store.fileWrapper(at: path)
        let result = try encode(FileDocumentWriteConfiguration(contentType: contentType, existingFile: existing))
        try pipeline.check(result, claim: DocumentClaim(type: type, contentType: contentType, isWritableType: true))
        try pipeline.commit(replacing: [.init(path: path)], saving: [path], by: geteuid(), versionsRequired: true) {
            _ = try store.persist(result, at: path, durable: true)
        }
        if result.isDirectory { try PackageMarker.mark(path, in: store) }
    }

    /// Puts the version at `location` (a file, or a package's folder, outside the store's documents)
    /// back at `path` as a save by `user`: checked by the type that claims `path`, as a mount checks
    /// a save, and keeping the version it replaces. A file takes the version's own mode and owner.
    public func restore(_ path: String, from location: String, by user: uid_t) throws {
        guard !readOnly else { throw LibraryError.notEditable(path: path) }
        let version = try FileWrapper(url: URL(fileURLWithPath: location), options: .immediate)
        if let claim = classifier.claim(forPath: path, isDirectory: version.isDirectory) { try pipeline.check(version, claim: claim) }
        if version.isDirectory {
            try pipeline.commit(replacing: [.init(path: path)], saving: [path], by: user, versionsRequired: true) {
                _ = try store.persist(version, at: path, durable: true)
                store.restoreMetadata(fromVersionAt: location, to: path)
            }
            if classifier.claim(forPath: path, isDirectory: true) != nil { try PackageMarker.mark(path, in: store) }
            return
        }
        let source = OwnedDescriptor(try FileIO.open(location, O_RDONLY | O_NOFOLLOW))
        let staged = try store.makeStagingFile(seededFrom: source, for: path)
        do {
            let saved = try source.status()
            fchown(staged.descriptor.rawValue, saved.userID, saved.groupID)
            fchmod(staged.descriptor.rawValue, saved.permissions)
            try pipeline.commit(replacing: [.init(path: path)], saving: [path], by: user, versionsRequired: true) {
                _ = try store.install(staged, at: path, durable: true)
            }
        } catch {
            store.discard(staged)
            throw error
        }
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
                    if let claim = classifier.claim(forPath: path, isDirectory: true) {
                        found.append(FoundDocument(path: path, isPackage: true, claim: claim))
                    } else {
                        pending.append(path)
                    }
                case .regular:
                    if let claim = classifier.claim(forPath: path, isDirectory: false) {
                        found.append(FoundDocument(path: path, isPackage: false, claim: claim))
                    }
                default:
                    continue
                }
            }
        }
        return found.sorted { PathKey($0.path) < PathKey($1.path) }
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
        let document = document
        try library.save(at: path, as: .fileDocument(Document.self), contentType: contentType) { try document.fileWrapper(configuration: $0) }
    }
}
