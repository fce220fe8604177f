import DocumentModel
import Foundation
import SystemSupport

/// The document work of the read and write paths: wrapping stored or staged bytes in a
/// `FileWrapper`, decoding them with the claiming type, and encoding the result for the store.
struct DocumentCodec: Sendable {
    /// A regular-file wrapper over the bytes of `descriptor`, mapped rather than copied when large.
    /// `status`: the descriptor's, when the caller has just taken it.
    func wrapper(for descriptor: OwnedDescriptor, name: String, status known: FileStatus? = nil) throws -> FileWrapper {
        let status = try known ?? descriptor.status()
        let contents = try FileIO.contents(of: descriptor.rawValue, size: Int(status.size))
        let wrapper = FileWrapper(regularFileWithContents: contents)
        wrapper.filename = name
        wrapper.preferredFilename = name
        wrapper.fileAttributes = [
            FileAttributeKey.posixPermissions.rawValue: NSNumber(value: status.permissions),
            FileAttributeKey.modificationDate.rawValue: status.modificationTime.date,
            FileAttributeKey.size.rawValue: NSNumber(value: status.size),
        ]
        return wrapper
    }

    func decode(_ file: FileWrapper, claim: DocumentClaim) throws -> DecodedDocument {
        try DocumentMetrics.timed(DocumentMetrics.validation) {
            try claim.type.decode(FileDocumentReadConfiguration(contentType: claim.contentType, file: file))
        }
    }

    /// `existingFile` is read only if the type asks for it, during the call.
    func encode(_ document: DecodedDocument, claim: DocumentClaim, existingFile: @escaping () -> FileWrapper?) throws -> FileWrapper {
        let configuration = FileDocumentWriteConfiguration(contentType: claim.contentType, readingExistingFile: existingFile)
        defer { configuration.endOfCall() }
        return try document.encode(configuration)
    }

    /// Whether a returned wrapper holds exactly `bytes`, so the staged file can be installed as is.
    /// The common case — a document that returns the very bytes it read — is recognised by identity.
    static func wrapper(_ wrapper: FileWrapper, holdsExactly bytes: Data) -> Bool {
        guard wrapper.isRegularFile, let contents = wrapper.regularFileContents, contents.count == bytes.count else { return false }
        let sameStorage = contents.withUnsafeBytes { left in bytes.withUnsafeBytes { right in left.baseAddress == right.baseAddress } }
        return sameStorage || contents == bytes
    }
}
