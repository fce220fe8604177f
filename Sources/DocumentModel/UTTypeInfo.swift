import Foundation

/// The resolved facts of one type, computed once and shared by every `UTType` value naming it, so
/// that `conforms(to:)` is a set lookup rather than a walk of the declaration graph.
final class UTTypeInfo: Sendable {
    let identifier: String
    let directSupertypeIdentifiers: [String]
    let allSupertypeIdentifiers: Set<String>
    let tags: [UTTagClass: [String]]
    let localizedDescription: String?
    let isDeclared: Bool
    let isDynamic: Bool
    let referenceURL: URL?
    let version: Int?

    init(
        identifier: String, directSupertypeIdentifiers: [String], allSupertypeIdentifiers: Set<String>,
        tags: [UTTagClass: [String]], localizedDescription: String?, isDeclared: Bool, isDynamic: Bool,
        referenceURL: URL? = nil, version: Int? = nil
    ) {
        self.referenceURL = referenceURL
        self.version = version
        self.identifier = identifier
        self.directSupertypeIdentifiers = directSupertypeIdentifiers
        self.allSupertypeIdentifiers = allSupertypeIdentifiers
        self.tags = tags
        self.localizedDescription = localizedDescription
        self.isDeclared = isDeclared
        self.isDynamic = isDynamic
    }
}
