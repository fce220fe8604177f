import DocumentStore

/// Whether a package has ever decoded, kept with it as the `user.docfs.package` attribute of its
/// stored folder: a marked package that stops decoding is corrupt, an unmarked one a draft.
/// The attribute travels with the folder through renames and clones; the mount hides it.
enum PackageMarker {
    static let attribute = "user.docfs.package"

    static func isMarked(_ root: String, in store: any DocumentStore) -> Bool {
        (try? store.extendedAttribute(root, name: attribute)) != nil
    }

    static func mark(_ root: String, in store: any DocumentStore) throws {
        try Array("valid".utf8).withUnsafeBytes { try store.setExtendedAttribute(root, name: attribute, value: $0, flags: 0) }
    }

    static func unmark(_ root: String, in store: any DocumentStore) {
        try? store.removeExtendedAttribute(root, name: attribute)
    }
}
