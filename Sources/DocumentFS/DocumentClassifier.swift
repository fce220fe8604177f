import DocumentModel
import DocumentStore
import SystemSupport

/// The one answer to "what is the item at this path": raw data, a document (a file or a package
/// folder) and the type that claims it with its content type, or a member of a package. The mount,
/// the document library, `docfs check`, `status` and `types` all ask it, so none of them can
/// disagree with another about a name.
struct DocumentClassifier: Sendable {
    let registry: DocumentTypeRegistry

    init(rules: DocumentTypeRules) {
        registry = DocumentTypeRegistry(rules: rules)
    }

    /// What a regular file at `path` is.
    enum Role {
        case raw
        case document(DocumentClaim)
        case packageMember(PackageMember)
    }

    func role(forPath path: String) -> Role {
        if let member = packageMember(of: path) { return .packageMember(member) }
        if let claim = claim(forPath: path, isDirectory: false) { return .document(claim) }
        return .raw
    }

    /// The claim on the item at `path` (a file, or with `isDirectory` a package folder) by its name
    /// alone; nil for raw data and plain folders.
    func claim(forPath path: String, isDirectory: Bool) -> DocumentClaim? {
        registry.claim(forName: StorePath.lastComponent(path), isDirectory: isDirectory)
    }

    /// The package holding `path`, if any: the outermost folder on the way whose name a
    /// directory-reading type claims. The package folder itself is not its own member.
    func packageMember(of path: String) -> PackageMember? {
        let bytes = path.utf8
        var start = bytes.startIndex
        while let slash = bytes[start...].firstIndex(of: UInt8(ascii: "/")) {
            // Only a name with an extension can be claimed; most folders on the way have none.
            if bytes[start..<slash].contains(UInt8(ascii: ".")),
               let claim = registry.claim(forName: String(path[start..<slash]), isDirectory: true)
            {
                return PackageMember(root: String(path[..<slash]), claim: claim, member: String(path[bytes.index(after: slash)...]))
            }
            start = bytes.index(after: slash)
        }
        return nil
    }

    /// The package `path` is in, or is (a folder a package type claims); nil outside packages.
    func packageRoot(at path: String) -> String? {
        packageMember(of: path)?.root ?? (claim(forPath: path, isDirectory: true) != nil ? path : nil)
    }

    /// The content type of the item at `path` of `kind`: the claiming type's, else what its name's
    /// extension says, else plain data, a folder or a link.
    func contentType(forPath path: String, kind: FileStatus.Kind) -> UTType {
        if kind == .symbolicLink { return .symbolicLink }
        return declaredContentType(forPath: path, isDirectory: kind == .directory) ?? (kind == .directory ? .folder : .data)
    }

    /// The claiming type's content type, else what the name's extension says; nil for a name
    /// without one.
    func declaredContentType(forPath path: String, isDirectory: Bool) -> UTType? {
        if let claim = claim(forPath: path, isDirectory: isDirectory) { return claim.contentType }
        return Self.fileExtension(of: StorePath.lastComponent(path)).flatMap { UTType(filenameExtension: $0, conformingTo: isDirectory ? .directory : .data) }
    }

    /// The text after a name's last dot; nil for none, or for a dot file like `.profile`.
    static func fileExtension(of name: String) -> String? {
        let bytes = name.utf8
        guard let dot = bytes.lastIndex(of: UInt8(ascii: ".")), dot != bytes.startIndex else { return nil }
        let fileExtension = String(name[bytes.index(after: dot)...])
        return fileExtension.isEmpty ? nil : fileExtension
    }
}
