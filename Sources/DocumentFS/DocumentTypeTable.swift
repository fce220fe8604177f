import DocumentModel

/// The rule that decides which files are documents, for tools that explain it (`docfs types`): the
/// same registry the mount uses.
public struct DocumentTypeTable: Sendable {
    private let classifier: DocumentClassifier
    private var registry: DocumentTypeRegistry { classifier.registry }

    public init(types: [DocumentType]) {
        self.init(rules: DocumentTypeRules(types: types))
    }

    public init(rules: DocumentTypeRules) {
        classifier = DocumentClassifier(rules: rules)
    }

    public struct Verdict: Sendable {
        /// The content type the document is read as; for raw data, the extension's type if any.
        public let contentType: String?
        /// The document type that validates such files (or folders, for a package type); nil: raw.
        public let documentType: String?
        public let isPackage: Bool
        /// What decided: a name pattern (`pattern *.conf`), a configured extension, or the content type.
        public let reason: String
    }

    public func verdict(forName name: String) -> Verdict {
        let pattern = registry.rules.patterns.first { $0.matches(name) }
        let fileExtension = DocumentClassifier.fileExtension(of: name)?.lowercased()
        func reason() -> String {
            if let pattern { return "pattern \(pattern.glob)" }
            if let fileExtension, registry.rules.extensions[fileExtension] != nil { return "extension .\(fileExtension) in the configuration" }
            return "content type"
        }
        for isDirectory in [false, true] {
            if let claim = classifier.claim(forPath: name, isDirectory: isDirectory) {
                return Verdict(contentType: claim.contentType.identifier, documentType: claim.type.name, isPackage: isDirectory, reason: reason())
            }
        }
        let contentType = fileExtension.flatMap { UTType(filenameExtension: $0) }
        return Verdict(contentType: contentType?.identifier, documentType: nil, isPackage: false, reason: reason())
    }

    /// The registered types, in the order they are tried.
    public var types: [DocumentType] { registry.types }
    public var patterns: [NamePattern] { registry.rules.patterns }
    public var configuredExtensions: [String: DocumentType] { registry.rules.extensions }
}
