import DocumentModel
import Glibc
import SystemSupport

/// Which files are documents of which type. In order:
/// 1. name patterns (`*.conf` → a type, or raw): when several match a name, the longest pattern
///    wins (ties: the one that sorts first), so `settings.local.conf` can be excepted from `*.conf`;
/// 2. extensions given to a type directly (a command type's `extensions`), compared ignoring case;
/// 3. the extension's content type (the built-in table of Apple's types, the app's declarations,
///    shared-mime-info) against each type's readable types, the first type in `types` that reads a
///    type it conforms to claiming the file.
/// Anything else is raw data, stored as written.
public struct DocumentTypeRules: Sendable {
    public var types: [DocumentType]
    public var patterns: [NamePattern]
    /// Lower-cased extension → the type that claims it, before content types are consulted.
    public var extensions: [String: DocumentType]

    public init(types: [DocumentType], patterns: [NamePattern] = [], extensions: [String: DocumentType] = [:]) {
        self.types = types
        self.patterns = patterns.sorted { ($0.glob.utf8.count, $1.glob) > ($1.glob.utf8.count, $0.glob) }
        self.extensions = Dictionary(extensions.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
    }
}

/// A shell-style pattern (`*`, `?`, `[…]`) on a file's name, not its path, and what it makes of the
/// names it matches.
public struct NamePattern: Sendable {
    public enum Target: Sendable {
        case document(DocumentType)
        /// Not a document: stored as written, never validated.
        case raw
    }

    public let glob: String
    public let target: Target

    public init(glob: String, target: Target) {
        self.glob = glob
        self.target = target
    }

    /// By the name's own bytes, as the pattern's: a name that is not UTF-8 is carried escaped
    /// (three bytes a byte), which `?` did not match, so `?.conf` passed by `\xff.conf` unjudged.
    func matches(_ name: String) -> Bool {
        FileSystemPath.withCString(glob) { pattern in FileSystemPath.withCString(name) { fnmatch(pattern, $0, 0) == 0 } }
    }
}
