import DocumentModel
import Synchronization

/// A document type served by DocFS: a `FileDocument` or `ReferenceFileDocument` type, erased so
/// types of both kinds can be registered side by side.
public struct DocumentType: Sendable {
    /// The Swift type's name, for logs.
    public let name: String
    public let readableContentTypes: [UTType]
    public let writableContentTypes: [UTType]
    let decode: @Sendable (FileDocumentReadConfiguration) throws -> DecodedDocument

    /// A value-type document: decoded with `init(configuration:)`, saved with `fileWrapper(configuration:)`.
    public static func fileDocument<Document: FileDocument>(_ type: Document.Type) -> DocumentType {
        DocumentType(
            name: String(reflecting: type), readableContentTypes: type.readableContentTypes,
            writableContentTypes: type.writableContentTypes,
            decode: { configuration in
                let document = try Document(configuration: configuration)
                return DecodedDocument { try document.fileWrapper(configuration: $0) }
            })
    }

    /// A reference-type document: saved by taking a `snapshot(contentType:)` and serializing it with
    /// `fileWrapper(snapshot:configuration:)`, as SwiftUI does.
    public static func referenceFileDocument<Document: ReferenceFileDocument>(_ type: Document.Type) -> DocumentType {
        DocumentType(
            name: String(reflecting: type), readableContentTypes: type.readableContentTypes,
            writableContentTypes: type.writableContentTypes,
            decode: { configuration in
                let document = try Document(configuration: configuration)
                return DecodedDocument { writeConfiguration in
                    let snapshot = try document.snapshot(contentType: writeConfiguration.contentType)
                    return try document.fileWrapper(snapshot: snapshot, configuration: writeConfiguration)
                }
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

/// The registered types and the rule that picks one for a name: the file's content type comes from
/// its extension, and the first registered type with a readable type it conforms to claims it.
final class DocumentTypeRegistry: Sendable {
    let types: [DocumentType]
    private let claimsByExtension: Mutex<[ExtensionKey: DocumentClaim?]>

    private struct ExtensionKey: Hashable {
        var fileExtension: String
        var isDirectory: Bool
    }

    init(types: [DocumentType]) {
        self.types = types
        claimsByExtension = Mutex([:])
    }

    /// The claim on a file named `name`; nil for raw data (no extension, or no type reads it).
    func claim(forName name: String, isDirectory: Bool) -> DocumentClaim? {
        let bytes = name.utf8
        guard let dot = bytes.lastIndex(of: UInt8(ascii: ".")), dot != bytes.startIndex else { return nil }
        let fileExtension = name[bytes.index(after: dot)...].lowercased()
        guard !fileExtension.isEmpty else { return nil }
        let key = ExtensionKey(fileExtension: fileExtension, isDirectory: isDirectory)
        if let cached = claimsByExtension.withLock({ $0[key] }) { return cached }
        let claim = resolve(fileExtension: fileExtension, isDirectory: isDirectory)
        claimsByExtension.withLock { $0[key] = claim }
        return claim
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
