import Foundation

/// A uniform type identifier: the Linux port of `UniformTypeIdentifiers.UTType`.
///
/// Types are identified by their `identifier`; two values with the same identifier are equal.
/// The system types mirror Apple's table; apps add their own with `UTType.register(_:)` (Linux has no
/// Info.plist), and filename extensions or MIME types that neither knows come from the freedesktop
/// shared-mime-info database or, failing that, give a dynamic (`dyn.`) type, as on Apple platforms.
public struct UTType: Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    let info: UTTypeInfo

    init(info: UTTypeInfo) { self.info = info }

    /// The declared type with this identifier, or nil when nothing declares it.
    public init?(_ identifier: String) {
        guard let info = UTTypeRegistry.shared.info(forIdentifier: identifier) else { return nil }
        self.info = info
    }

    /// The type an app owns. When no declaration was registered for it, the type is still made,
    /// conforming to `parentType` (or `.data`), as Apple does when the Info.plist lacks it.
    public init(exportedAs identifier: String, conformingTo parentType: UTType? = nil) {
        self.init(declaredAs: identifier, kind: .exported, conformingTo: parentType)
    }

    /// A type owned elsewhere that the app recognises; same lookup rules as `init(exportedAs:)`.
    public init(importedAs identifier: String, conformingTo parentType: UTType? = nil) {
        self.init(declaredAs: identifier, kind: .imported, conformingTo: parentType)
    }

    private init(declaredAs identifier: String, kind: UTTypeDeclaration.Kind, conformingTo parentType: UTType?) {
        if let info = UTTypeRegistry.shared.info(forIdentifier: identifier) {
            self.info = info
        } else {
            let parent = parentType ?? .data
            self.info = UTTypeRegistry.shared.undeclaredInfo(identifier: identifier, conformingTo: parent)
        }
    }

    public init?(filenameExtension: String, conformingTo supertype: UTType = .data) {
        self.init(tag: filenameExtension, tagClass: .filenameExtension, conformingTo: supertype)
    }

    public init?(mimeType: String, conformingTo supertype: UTType = .data) {
        self.init(tag: mimeType, tagClass: .mimeType, conformingTo: supertype)
    }

    /// The preferred type for a tag; a dynamic type when no declared type carries it.
    public init?(tag: String, tagClass: UTTagClass, conformingTo supertype: UTType?) {
        guard let first = UTType.types(tag: tag, tagClass: tagClass, conformingTo: supertype).first else { return nil }
        self = first
    }

    /// Every type carrying the tag, preferred first; a single dynamic type when none does.
    public static func types(tag: String, tagClass: UTTagClass, conformingTo supertype: UTType?) -> [UTType] {
        UTTypeRegistry.shared.types(tag: tag, tagClass: tagClass, conformingTo: supertype)
    }

    public var identifier: String { info.identifier }
    public var tags: [UTTagClass: [String]] { info.tags }
    public var preferredFilenameExtension: String? { info.tags[.filenameExtension]?.first }
    public var preferredMIMEType: String? { info.tags[.mimeType]?.first }
    public var localizedDescription: String? { info.localizedDescription }
    /// Where the type's declaration says it is documented.
    public var referenceURL: URL? { info.referenceURL }
    /// The version of the type's declaration, if it has one.
    public var version: NSNumber? { info.version.map { NSNumber(value: $0) } }

    /// Every type this one conforms to, directly or through others (not itself).
    public var supertypes: Set<UTType> {
        Set(info.allSupertypeIdentifiers.compactMap { UTTypeRegistry.shared.info(forIdentifier: $0).map(UTType.init(info:)) })
    }

    public var isDeclared: Bool { info.isDeclared }
    public var isDynamic: Bool { info.isDynamic }
    public var isPublic: Bool { identifier.hasPrefix("public.") }

    /// True for the type itself and every type it conforms to.
    public func conforms(to type: UTType) -> Bool {
        type.identifier == identifier || info.allSupertypeIdentifiers.contains(type.identifier)
    }

    public func isSupertype(of type: UTType) -> Bool { type.conforms(to: self) && type != self }
    public func isSubtype(of type: UTType) -> Bool { conforms(to: type) && type != self }

    public var description: String { identifier }
    public var debugDescription: String {
        "\(identifier) (\(localizedDescription ?? "no description"))"
    }

    public static func == (lhs: UTType, rhs: UTType) -> Bool { lhs.identifier == rhs.identifier }
    public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }

    /// Declares an app's exported or imported type so that lookups by identifier, extension and
    /// MIME type find it. Later declarations of the same identifier replace earlier ones.
    public static func register(_ declaration: UTTypeDeclaration) {
        UTTypeRegistry.shared.register([declaration])
    }

    public static func register(_ declarations: [UTTypeDeclaration]) {
        UTTypeRegistry.shared.register(declarations)
    }
}

extension UTType: Codable {
    public init(from decoder: Decoder) throws {
        let identifier = try decoder.singleValueContainer().decode(String.self)
        if let info = UTTypeRegistry.shared.info(forIdentifier: identifier) {
            self.info = info
        } else {
            self.info = UTTypeRegistry.shared.undeclaredInfo(identifier: identifier, conformingTo: .data)
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(identifier)
    }
}

extension UTType {
    /// DocFS extension, not on Apple platforms: every filename extension some type is known by — the
    /// system table, the app's declarations and the freedesktop MIME database — sorted. For tools
    /// that list which files are which type (`docfs types`).
    public static var knownFilenameExtensions: [String] { UTTypeRegistry.shared.knownFilenameExtensions }
}
