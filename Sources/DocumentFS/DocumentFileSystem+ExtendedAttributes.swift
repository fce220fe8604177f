import DocumentModel
import DocumentStore
import FUSE
import Glibc
import SystemSupport

/// Extended attributes: the store's own (kept with the document across saves), plus those DocFS
/// answers itself: the document's content type, its `isEditable`, and what a full store gave up
/// of its versions.
///
/// DocFS's attributes are readable by name but never listed, so tools that copy attributes
/// (`rsync -X`, `tar --xattrs`, `cp -a`) neither copy them out nor try to restore them, and a
/// symbolic link lists nothing it cannot return. Setting one to the value it already has succeeds
/// (an archive made by an older DocFS that listed them restores cleanly); changing or removing one
/// is EPERM.
extension DocumentFileSystem {
    static let contentTypeAttribute = "user.docfs.content-type"
    static let editableAttribute = "user.docfs.editable"
    /// On the mount's root only: how many inodes the daemon holds records for (diagnostics; lets a
    /// test see lookup counts return to zero after the kernel forgets).
    static let inodeCountAttribute = "user.docfs.inodes"
    /// The versions of this document a full store dropped or could not keep (`VersionsGivenUp`, a
    /// JSON object a line), for `docfs versions` run by a user: the store's record is root's. The
    /// kernel lets only those who may read the document ask; each is told of what was their own
    /// (root of all), so the next owner of a name learns nothing of the last one's.
    static let versionsGivenUpAttribute = VersionsGivenUp.attributeName

    func extendedAttribute(inode: Inode, name: String, context: RequestContext) throws(FUSEError) -> [UInt8] {
        guard let path = nodes.path(of: inode) else {
            // Unlinked while open: the file it named answers, as on ext4 (ENODATA for a name it lacks).
            if Self.isVirtual(name) { throw .noAttribute }
            let file = try detachedFile(inode)
            return try storeCall { try file.extendedAttribute(name) }
        }
        switch name {
        case Self.contentTypeAttribute:
            return Array(try contentType(of: path).identifier.utf8)
        case Self.inodeCountAttribute where inode == .root:
            return Array(String(nodes.count).utf8)
        case Self.editableAttribute:
            let status = try storeCall { try store.status(of: path) }
            let editable = isEditable(path: path, status: status)
            return Array((editable ? "true" : "false").utf8)
        case Self.versionsGivenUpAttribute:
            var told = store.givenUpVersions(of: path).filter { context.userID == 0 || $0.owner == context.userID }
            guard !told.isEmpty else { throw .noAttribute }
            // The newest that fit in an attribute's 64 KiB.
            var lines = VersionsGivenUp.lines(told)
            while lines.count > 65_536, told.count > 1 {
                told.removeFirst(told.count / 2)
                lines = VersionsGivenUp.lines(told)
            }
            guard lines.count <= 65_536 else { throw .noAttribute }
            return Array(lines)
        default:
            // DocFS's own bookkeeping in the store (the package marker, the item's number) is not the user's.
            if Self.isVirtual(name) { throw .noAttribute }
            return try storeCall { try store.extendedAttribute(path, name: name) }
        }
    }

    /// The claiming type's content type, or what the name says for raw data.
    private func contentType(of path: String) throws(FUSEError) -> UTType {
        classifier.contentType(forPath: path, kind: try storeCall { try store.status(of: path) }.kind)
    }

    /// DocFS's names: its own attributes, and its bookkeeping in the store (`trusted.` for a root
    /// daemon's, which root on the mount could otherwise read and set).
    static let reservedPrefixes = ["user.docfs.", "trusted.docfs."]

    /// By bytes: `hasPrefix` compares characters, and a name whose next byte after the prefix is a
    /// combining mark would not count as in DocFS's namespace.
    static func isVirtual(_ name: String) -> Bool { reservedPrefixes.contains { name.utf8.starts(with: $0.utf8) } }

    func extendedAttributeNames(inode: Inode, context: RequestContext) throws(FUSEError) -> [UInt8] {
        let stored: [String]
        if let path = nodes.path(of: inode) {
            stored = try storeCall { try store.extendedAttributeNames(path) }
        } else {
            let file = try detachedFile(inode)
            stored = try storeCall { try file.extendedAttributeNames() }
        }
        let names = stored.filter { !Self.isVirtual($0) }
        return names.flatMap { FileSystemPath.bytes(of: $0) + [0] }
    }

    func setExtendedAttribute(inode: Inode, name: String, value: UnsafeRawBufferPointer, flags: Int32, context: RequestContext) throws(FUSEError) {
        try requireWritable()
        // The kernel caches a POSIX ACL (and the mode it sets) per inode: a file's other names too.
        defer { otherNamesChanged(of: inode, content: false) }
        if name == Self.restoreAttribute {
            return try restoreVersion(named: String(decoding: value, as: UTF8.self), ofPackage: inode, context: context)
        }
        if Self.isVirtual(name) {
            let current = try? extendedAttribute(inode: inode, name: name, context: context)
            // XATTR_CREATE (1) fails on an attribute that exists, as these always do.
            guard let current, current.elementsEqual(value), flags & 1 == 0 else { throw .notPermitted }
            return
        }
        guard nodes.path(of: inode) != nil else {
            let file = try detachedFile(inode)
            return try storeCall { try file.setExtendedAttribute(name, value: value, flags: flags) }
        }
        try withPackageHeldStill(inode) { (path: String) throws(FUSEError) in
            try storeCall { try store.setExtendedAttribute(path, name: name, value: value, flags: flags) }
        }
    }

    func removeExtendedAttribute(inode: Inode, name: String, context: RequestContext) throws(FUSEError) {
        try requireWritable()
        defer { otherNamesChanged(of: inode, content: false) }
        guard !Self.isVirtual(name) else { throw .notPermitted }
        guard nodes.path(of: inode) != nil else {
            let file = try detachedFile(inode)
            return try storeCall { try file.removeExtendedAttribute(name) }
        }
        try withPackageHeldStill(inode) { (path: String) throws(FUSEError) in
            try storeCall { try store.removeExtendedAttribute(path, name: name) }
        }
    }
}
