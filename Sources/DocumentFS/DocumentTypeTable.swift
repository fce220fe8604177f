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
        /// The same, for people: a dynamic type (`dyn.…`, one made for a MIME type of the
        /// freedesktop database) by its MIME type.
        public let contentTypeName: String?
        /// The document type that validates such files (or folders, for a package type); nil: raw.
        public let documentType: String?
        public let isPackage: Bool
        /// What decided, in words: a name pattern (`pattern *.conf`), a configured extension, or
        /// which type reads the extension's content type (or that none does).
        public let reason: String
    }

    /// The verdict on a file (or with `isDirectory`, a folder) named `name`; without
    /// `isDirectory`, a file's, else a package folder's.
    public func verdict(forName name: String, isDirectory: Bool? = nil) -> Verdict {
        let pattern = registry.rules.patterns.first { $0.matches(name) }
        let fileExtension = DocumentClassifier.fileExtension(of: name)?.lowercased()
        let configured = fileExtension.flatMap { registry.rules.extensions[$0] } != nil
        for folder in isDirectory.map({ [$0] }) ?? [false, true] {
            if let claim = classifier.claim(forPath: name, isDirectory: folder) {
                let reason = pattern.map { "pattern \($0.glob)" } ?? (configured ? "extension .\(fileExtension ?? "") in the configuration" : Self.reading(claim))
                return Verdict(
                    contentType: claim.contentType.identifier, contentTypeName: Self.name(of: claim.contentType), documentType: claim.type.name,
                    isPackage: folder, reason: reason)
            }
        }
        let contentType = fileExtension.flatMap { UTType(filenameExtension: $0, conformingTo: isDirectory == true ? .directory : .data) }
        let reason: String
        if let pattern {
            reason = "pattern \(pattern.glob)"
        } else if let contentType, let known = Self.name(of: contentType) {
            reason = "no document type reads \(known)\(isDirectory == true ? ": a plain folder" : "")"
        } else if fileExtension != nil {
            reason = "no content type is known for its extension"
        } else {
            reason = isDirectory == true ? "a plain folder: no extension" : "no extension"
        }
        return Verdict(contentType: contentType?.identifier, contentTypeName: contentType.flatMap(Self.name), documentType: nil, isPackage: false, reason: reason)
    }

    /// A type's identifier, or for a dynamic one its MIME type; nil for a dynamic type that has
    /// none (an extension nothing knows).
    private static func name(of type: UTType) -> String? {
        type.isDynamic ? type.preferredMIMEType : type.identifier
    }

    /// "text reads public.plain-text", or with the type the content type conforms to:
    /// "text reads public.text, which net.daringfireball.markdown conforms to".
    private static func reading(_ claim: DocumentClaim) -> String {
        let read = claim.type.readableContentTypes.first { claim.contentType.conforms(to: $0) } ?? claim.contentType
        return read == claim.contentType
            ? "\(claim.type.name) reads \(name(of: read) ?? read.identifier)"
            : "\(claim.type.name) reads \(name(of: read) ?? read.identifier), which \(name(of: claim.contentType) ?? claim.contentType.identifier) conforms to"
    }

    /// The registered types, in the order they are tried.
    public var types: [DocumentType] { registry.types }
    public var patterns: [NamePattern] { registry.rules.patterns }
    public var configuredExtensions: [String: DocumentType] { registry.rules.extensions }
}
