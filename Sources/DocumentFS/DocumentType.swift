import SystemSupport
import DocumentModel
import Synchronization

/// A document type served by DocFS: a `FileDocument` or `ReferenceFileDocument` type, erased so
/// types of both kinds can be registered side by side.
public struct DocumentType: Sendable {
    /// The name configuration files and `docfs types` use (`json`), or the Swift type's name.
    public let name: String
    public let readableContentTypes: [UTType]
    public let writableContentTypes: [UTType]
    let decode: @Sendable (FileDocumentReadConfiguration) throws -> DecodedDocument

    /// A value-type document: decoded with `init(configuration:)`, saved with `fileWrapper(configuration:)`.
    public static func fileDocument<Document: FileDocument>(_ type: Document.Type, named name: String? = nil) -> DocumentType {
        DocumentType(
            name: name ?? String(reflecting: type), readableContentTypes: type.readableContentTypes,
            writableContentTypes: type.writableContentTypes,
            decode: { configuration in
                let document = try Document(configuration: configuration)
                return DecodedDocument { try document.fileWrapper(configuration: $0) }
            })
    }

    /// A reference-type document: saved by taking a `snapshot(contentType:)` and serializing it with
    /// `fileWrapper(snapshot:configuration:)`, as SwiftUI does.
    public static func referenceFileDocument<Document: ReferenceFileDocument>(_ type: Document.Type, named name: String? = nil) -> DocumentType {
        DocumentType(
            name: name ?? String(reflecting: type), readableContentTypes: type.readableContentTypes,
            writableContentTypes: type.writableContentTypes,
            decode: { configuration in
                let document = try Document(configuration: configuration)
                return DecodedDocument { writeConfiguration in
                    let snapshot = try document.snapshot(contentType: writeConfiguration.contentType)
                    return try document.fileWrapper(snapshot: snapshot, configuration: writeConfiguration)
                }
            })
    }

    /// A type that only validates: `validate` throws to refuse the content, and what it accepts is
    /// stored exactly as written (an external validator command is one).
    public static func validator(
        named name: String, readableContentTypes: [UTType],
        validate: @escaping @Sendable (FileDocumentReadConfiguration) throws -> Void
    ) -> DocumentType {
        DocumentType(
            name: name, readableContentTypes: readableContentTypes, writableContentTypes: readableContentTypes,
            decode: { configuration in
                try validate(configuration)
                let file = configuration.file
                return DecodedDocument { _ in file }
            })
    }

    /// Whether documents of this type are folders (packages) rather than regular files.
    public var readsDirectories: Bool { readableContentTypes.contains { $0.conforms(to: .directory) } }
}

/// A document that decoded, ready to be saved.
struct DecodedDocument {
    let encode: (FileDocumentWriteConfiguration) throws -> FileWrapper
}

/// Which registered type serves a file, as what content type, and whether it can be written back.
struct DocumentClaim: Sendable {
    let type: DocumentType
    let contentType: UTType
    /// False when the file's type is readable but not among the type's `writableContentTypes`.
    let isWritableType: Bool
}

/// The registered types and the rule that picks one for a name (see `DocumentTypeRules`).
final class DocumentTypeRegistry: Sendable {
    let rules: DocumentTypeRules
    var types: [DocumentType] { rules.types }
    private let claimsByExtension: OrderedMutex<[ExtensionKey: DocumentClaim?]>

    private struct ExtensionKey: Hashable {
        var fileExtension: String
        var isDirectory: Bool
    }

    init(rules: DocumentTypeRules) {
        self.rules = rules
        claimsByExtension = OrderedMutex(.leaf, [:])
    }

    /// The claim on a file named `name`; nil for raw data (no extension, or no type reads it).
    func claim(forName name: String, isDirectory: Bool) -> DocumentClaim? {
        if let pattern = rules.patterns.first(where: { $0.matches(name) }) {
            switch pattern.target {
            case .raw: return nil
            case .document(let type) where type.readsDirectories == isDirectory:
                return assignedClaim(type, extension: Self.fileExtension(of: name))
            case .document: break
            }
        }
        guard let fileExtension = Self.fileExtension(of: name) else { return nil }
        let key = ExtensionKey(fileExtension: fileExtension, isDirectory: isDirectory)
        if let cached = claimsByExtension.withLock({ $0[key] }) { return cached }
        let claim: DocumentClaim?
        if let type = rules.extensions[fileExtension] {
            claim = type.readsDirectories == isDirectory ? assignedClaim(type, extension: fileExtension) : nil
        } else {
            claim = resolve(fileExtension: fileExtension, isDirectory: isDirectory)
        }
        claimsByExtension.withLock { $0[key] = claim }
        return claim
    }

    /// The lower-cased text after a name's last dot; nil for none, or for a dot file like `.profile`.
    private static func fileExtension(of name: String) -> String? {
        DocumentClassifier.fileExtension(of: name)?.lowercased()
    }

    /// A claim by a type the configuration names for the file: as the extension's content type when
    /// the type reads it, else as the type's first readable type.
    private func assignedClaim(_ type: DocumentType, extension fileExtension: String?) -> DocumentClaim? {
        let ownType = fileExtension.flatMap { UTType(filenameExtension: $0) }
        let contentType = ownType.flatMap { own in type.readableContentTypes.contains { own.conforms(to: $0) } ? own : nil }
            ?? type.readableContentTypes.first
        guard let contentType else { return nil }
        return DocumentClaim(type: type, contentType: contentType, isWritableType: true)
    }

    private func resolve(fileExtension: String, isDirectory: Bool) -> DocumentClaim? {
        guard let contentType = UTType(filenameExtension: fileExtension, conformingTo: isDirectory ? .directory : .data)
                ?? UTType(filenameExtension: fileExtension)
        else { return nil }
        for type in types where type.readsDirectories == isDirectory {
            guard type.readableContentTypes.contains(where: { contentType.conforms(to: $0) }) else { continue }
            let writable = type.writableContentTypes.contains { contentType.conforms(to: $0) }
            return DocumentClaim(type: type, contentType: contentType, isWritableType: writable)
        }
        return nil
    }
}
