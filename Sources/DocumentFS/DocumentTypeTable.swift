import DocumentModel

/// The rule that decides which files are documents, for tools that explain it (`docfs types`): the
/// same registry the mount uses.
public struct DocumentTypeTable: Sendable {
    private let registry: DocumentTypeRegistry

    public init(types: [DocumentType]) {
        registry = DocumentTypeRegistry(types: types)
    }

    public struct Verdict: Sendable {
        /// The name's content type, if its extension has one.
        public let contentType: String?
        /// The document type that validates such files (or folders, for a package type); nil: raw.
        public let documentType: String?
        public let isPackage: Bool
    }

    public func verdict(forName name: String) -> Verdict {
        if let claim = registry.claim(forName: name, isDirectory: false) {
            return Verdict(contentType: claim.contentType.identifier, documentType: claim.type.name, isPackage: false)
        }
        if let claim = registry.claim(forName: name, isDirectory: true) {
            return Verdict(contentType: claim.contentType.identifier, documentType: claim.type.name, isPackage: true)
        }
        let bytes = name.utf8
        let fileExtension = bytes.lastIndex(of: UInt8(ascii: ".")).map { String(name[bytes.index(after: $0)...]) }
        let contentType = fileExtension.flatMap { $0.isEmpty ? nil : UTType(filenameExtension: $0) }
        return Verdict(contentType: contentType?.identifier, documentType: nil, isPackage: false)
    }
}
