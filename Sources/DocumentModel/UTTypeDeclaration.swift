/// What is known about one declared type: the Linux stand-in for an entry of
/// `UTExportedTypeDeclarations` / `UTImportedTypeDeclarations` in an app's Info.plist.
public struct UTTypeDeclaration: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable {
        /// Declared by the system (the built-in table).
        case system
        /// Owned and declared by the app (`init(exportedAs:)`).
        case exported
        /// Owned by someone else, declared by the app so it can be recognised (`init(importedAs:)`).
        case imported
    }

    public var identifier: String
    public var kind: Kind
    /// Identifiers of the direct supertypes.
    public var conformsTo: [String]
    /// Filename extensions without the dot, preferred first.
    public var filenameExtensions: [String]
    /// MIME types, preferred first.
    public var mimeTypes: [String]
    public var description: String?
    /// Where the type is documented (`UTTypeReferenceURL`).
    public var referenceURL: URL?
    /// The declaration's version (`UTTypeVersion`).
    public var version: Int?

    public init(
        identifier: String,
        kind: Kind = .exported,
        conformsTo: [String] = [],
        filenameExtensions: [String] = [],
        mimeTypes: [String] = [],
        description: String? = nil,
        referenceURL: URL? = nil,
        version: Int? = nil
    ) {
        self.referenceURL = referenceURL
        self.version = version
        self.identifier = identifier
        self.kind = kind
        self.conformsTo = conformsTo
        self.filenameExtensions = filenameExtensions
        self.mimeTypes = mimeTypes
        self.description = description
    }
}
