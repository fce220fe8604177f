import DocumentStore
import FUSE
import Glibc
import SystemSupport

/// `MNT/.versions`: every document's earlier versions, read-only, as ZFS shows its snapshots in
/// `.zfs`. It is never listed in the mount's root, so `tar`, `rsync`, `restic`, `find` and `du`
/// of the mount pass it by; it is entered by name. `.versions/notes/a.md/` lists the versions of
/// `notes/a.md`, each named by its save time with the document's extension; a package's version is
/// a folder. A removed document's versions stay under its old path.
///
/// Who may read what is the kernel's to judge (`default_permissions`) from the attributes shown:
/// a version keeps the mode, owner and ACL its document had when it was saved. A document's folder
/// of versions admits whom the document lets read it now and, when it was removed through the
/// mount, who could read it then (`documentGate`); a document removed beside DocFS, whom the store
/// folder that held it admits now. Any other folder shows the same folder of the store; one
/// removed through the mount, as it was then (`VersionArchive.removedFolder`); any other the store
/// no longer has, root's alone.
/// Version files are numbered apart from documents (`numberBase`), so `cp` of a version over its
/// document is a copy between two files, and hard links inside a package's versions share a number.
final class VersionsView: Sendable {
    static let firstInode: Inode = (1 << 62) | (1 << 61)
    static let name = FileName(validating: ".versions")
    /// `st_ino` of a stored version: this bit pattern with the archive file's own number (below
    /// 2^61 on every local file system); the view's folders add bit 61 to a hash of their path.
    private static let numberBase: UInt64 = (1 << 63) | (1 << 62)

    static func owns(_ inode: Inode) -> Bool { inode >= firstInode }

    private let store: any DocumentStore
    private let archive: VersionArchive
    private let notifier: KernelNotifier
    private let inodes = ViewInodes(first: VersionsView.firstInode)
    private let files = HandleTable<OwnedDescriptor>()
    private let listings = HandleTable<[ViewEntry]>()

    /// What is in a view path: a folder on the way to documents with versions (and a document's
    /// own folder, which lists its versions), or something stored in the archive.
    private enum Item {
        case folder(document: String)
        /// `version`: where the version it is in (or is) is stored, whose record says what it never gives.
        case stored(location: String, version: String)
    }

    init(store: any DocumentStore, archive: VersionArchive, notifier: KernelNotifier) {
        self.store = store
        self.archive = archive
        self.notifier = notifier
    }

    /// How long the kernel may keep the view's names and attributes, in seconds. A change through
    /// the mount that moves who may enter a document's versions tells the kernel at once
    /// (`documentChanged`); one made beside the mount shows within this. With none, every path
    /// walk through the view looked up each of its folders again: `ls -l` of a folder of 10,000
    /// documents' versions made about 12 requests an entry, and took 5 s against 0.3 s for the
    /// folder itself.
    static let cacheTimeout = 1.0

    /// The document (or folder) at store path `path` changed in a way that may move who may enter
    /// its versions (its mode, owner or ACL; removed, renamed, made anew): the kernel asks for the
    /// attributes of its folder in the view again.
    /// Whether the kernel holds anything of the view: until someone browses it, a change has
    /// nothing to tell it, and needs no path worked out for it.
    var isBrowsed: Bool { !inodes.isEmpty }

    func documentChanged(at path: String) {
        if let inode = inodes.heldInode(for: path) { notifier.invalidateAttributes(of: inode) }
    }

    // MARK: Names and attributes

    /// The entry for `.versions` at the mount's root.
    func lookupRoot() throws(FUSEError) -> Entry { try entry(at: "") }

    func lookup(parent: Inode, name: FileName) throws(FUSEError) -> Entry {
        try entry(at: StorePath.join(try inodes.path(of: parent), name))
    }

    /// `.` or `..` of a folder in the view; nil when that is the mount's root.
    func lookup(_ relative: RelativeEntry, in directory: Inode) throws(FUSEError) -> Entry? {
        let path = try inodes.path(of: directory)
        switch relative {
        case .current: return try entry(at: path)
        case .parent:
            if path.isEmpty { return nil }
            return try entry(at: StorePath.split(path)?.parent ?? "")
        }
    }

    func forget(_ inode: Inode, count: UInt64) { inodes.forget(inode, count: count) }

    func attributes(of inode: Inode) throws(FUSEError) -> AttributesReply {
        let path = try inodes.path(of: inode)
        return AttributesReply(attributes: try attributes(of: try resolve(path), inode: inode), timeout: Self.cacheTimeout)
    }

    func readLink(_ inode: Inode) throws(FUSEError) -> String {
        guard case .stored(let location, _) = try resolve(try inodes.path(of: inode)) else { throw .invalid }
        return try storeCall { try Paths.symbolicLinkTarget(location) }
    }

    // MARK: Reading

    func open(_ inode: Inode, flags: Int32) throws(FUSEError) -> OpenReply {
        guard flags & O_ACCMODE == O_RDONLY, flags & O_TRUNC == 0 else { throw .readOnlyFileSystem }
        guard case .stored(let location, _) = try resolve(try inodes.path(of: inode)) else { throw .isDirectory }
        let descriptor = try storeCall { try store.openVersionContent(at: location) }
        guard (try? FileStatus.of(descriptor: descriptor.rawValue))?.kind == .regular else { throw .invalid }
        // A version never changes: the kernel may keep its pages.
        return OpenReply(handle: files.insert(descriptor), keepCache: true)
    }

    func read(handle: UInt64, offset: Int64, size: Int) throws(FUSEError) -> ReadReply {
        guard let descriptor = files.get(handle) else { throw .badHandle }
        return .fileRegion(descriptor: descriptor.rawValue, offset: offset, size: size, owner: descriptor)
    }

    func release(handle: UInt64) { _ = files.remove(handle) }

    func openDirectory(_ inode: Inode) throws(FUSEError) -> OpenReply {
        let path = try inodes.path(of: inode)
        let item = try resolve(path)
        let own = try attributes(of: item, inode: inode)
        var entries = [ViewEntry(name: ".", number: UInt64(own.st_ino), mode: S_IFDIR), ViewEntry(name: "..", number: 1, mode: S_IFDIR)]
        func add(_ name: String, _ status: FileStatus?, folder: String?) {
            let number = folder.map(Self.folderNumber) ?? status.map { Self.numberBase | $0.inode } ?? Self.numberBase
            entries.append(ViewEntry(name: name, number: number, mode: folder != nil ? S_IFDIR : (status?.mode ?? 0) & S_IFMT))
        }
        switch item {
        case .folder(let document):
            let known = archive.index
            if known.documents.contains(Array(document.utf8)) {
                for version in archive.versions(of: document, measuring: false) { add(version.name, version.status, folder: nil) }
            }
            for child in (known.children[Array(document.utf8)] ?? []).sorted() { add(child.path, nil, folder: document.isEmpty ? child.path : document + "/" + child.path) }
        case .stored(let location, _):
            for entry in (try? FileIO.directoryEntries(location))?.sorted(by: { PathKey($0) < PathKey($1) }) ?? [] {
                add(entry, try? FileStatus.of(path: location + "/" + entry), folder: nil)
            }
        }
        return OpenReply(handle: listings.insert(entries))
    }

    /// With `plus` (readdirplus: `ls -l`), each name carries its entry, as the mount's folders do,
    /// so the kernel need not look each up: that doubled what listing a folder of versions cost.
    /// The kernel still checks search permission on the folder before anything reaches an entry.
    func readDirectory(inode: Inode, handle: UInt64, offset: Int64, plus: Bool, add: (DirectoryEntry) -> Bool) throws(FUSEError) {
        guard plus else { return try listings.readDirectory(handle: handle, offset: offset, add: add) }
        guard let entries = listings.get(handle) else { throw .badHandle }
        let folder = try inodes.path(of: inode)
        var position = Int(max(0, offset))
        while position < entries.count {
            let listed = entries[position]
            position += 1
            var item = DirectoryEntry(name: listed.name, nextOffset: Int64(position), number: listed.number, mode: listed.mode)
            // The kernel takes no reference on "." and ".."; a name gone since the listing has none.
            if listed.name != "." && listed.name != ".." {
                item.entry = try? entry(at: folder.isEmpty ? listed.name : folder + "/" + listed.name)
            }
            guard add(item) else {
                if let counted = item.entry { inodes.forget(counted.inode, count: 1) }
                return
            }
        }
    }

    func releaseDirectory(handle: UInt64) { _ = listings.remove(handle) }

    // MARK: Who saved it

    /// `user.docfs.saved-by` of a version (`VersionName.savedByAttribute`): the uid that saved it,
    /// in decimal, where DocFS saw the save (`docfs versions` shows it). And POSIX ACLs, which the
    /// kernel judges with the modes: a version's, the one its document had when it was saved (the
    /// version is the document's replaced file) less what its folders kept out then; a document's
    /// folder's, from the document's now; any other folder's, its store folder's.
    func extendedAttribute(of inode: Inode, name: String) throws(FUSEError) -> [UInt8] {
        if name == PosixACL.accessAttribute {
            switch try resolve(try inodes.path(of: inode)) {
            case .stored(let location, let version):
                let acl = try storeCall { try Paths.extendedAttribute(location, name: name) }
                return Self.acl(acl, without: archive.unreachableBits(at: version))
            case .folder(let document):
                return archive.index.documents.contains(Array(document.utf8)) ? try documentACLAsFolder(document) : try storeFolderACL(document)
            }
        }
        guard name == VersionName.savedByAttribute, let user = try savedBy(inode) else { throw .noAttribute }
        return Array(String(user).utf8)
    }

    /// Any other folder of the view shows the same folder of the store (`attributes`), with its ACL
    /// too: whom that keeps out now (the owning group's entry may give less than the mode's group
    /// bits, which are then its mask) is kept out of its documents' versions as well. None where the
    /// view shows a folder as it was removed, or as root's (its record decides).
    private func storeFolderACL(_ folder: String) throws(FUSEError) -> [UInt8] {
        let beforeRemoval = VersionArchive.pathBeforeRemoval(folder)
        let shown = beforeRemoval ?? folder
        guard (try? store.status(of: shown))?.kind == .directory, beforeRemoval == nil || archive.removedFolder(folder) == nil,
              let acl = try? store.extendedAttribute(shown, name: PosixACL.accessAttribute), PosixACL(acl) != nil
        else { throw .noAttribute }
        return acl
    }

    /// A document's folder of versions admits whom the document's ACL lets read it now, as its
    /// mode does (`documentGate`): the ACL with each entry that may read given rwx (enter, list,
    /// and remove one's own versions under the sticky bit), every other ---. None for a folder, a
    /// document without an ACL, or one removed through the mount (then its record decides).
    private func documentACLAsFolder(_ document: String) throws(FUSEError) -> [UInt8] {
        guard archive.index.documents.contains(Array(document.utf8)), archive.readersOfRemovedDocument(document) == nil,
              let acl = (try? store.extendedAttribute(document, name: PosixACL.accessAttribute)).flatMap(PosixACL.init)
        else { throw .noAttribute }
        var folder = acl.bytes
        for entry in acl.entries {
            folder[entry.offset + 2] = entry.permissions & 0o4 != 0 ? 0o7 : 0
            folder[entry.offset + 3] = 0
        }
        return folder
    }

    /// A version's ACL with what its folders kept from others and from its group when it was
    /// saved taken away, as its mode's bits are. Kept from others: the other entry, and the users
    /// and groups the ACL names (whether they could search the folders is not known). Kept from
    /// the group: the mask, which bounds the whole group class, or the owning group's entry where
    /// there is no mask.
    private static func acl(_ bytes: [UInt8], without unreachable: mode_t) -> [UInt8] {
        guard unreachable != 0, let acl = PosixACL(bytes) else { return bytes }
        let hasMask = acl.entries.contains { $0.tag == PosixACL.mask }
        return acl.closing { entry in
            switch entry.tag {
            case PosixACL.other: unreachable & 0o007 != 0
            case PosixACL.user, PosixACL.group: unreachable != 0
            case hasMask ? PosixACL.mask : PosixACL.groupObject: unreachable & 0o070 != 0
            default: false
            }
        }
    }

    /// None listed: DocFS's attributes are answered by name only, so `cp --preserve=xattr` and
    /// `rsync -X` of a version back into the mount do not try to set one.
    func extendedAttributeNames(of inode: Inode) throws(FUSEError) -> [UInt8] { [] }

    private func savedBy(_ inode: Inode) throws(FUSEError) -> uid_t? {
        let path = try inodes.path(of: inode)
        guard case .stored(let location, _) = try resolve(path), let (document, _) = StorePath.split(path),
              case .folder = try resolve(document)
        else { return nil }
        return archive.savedBy(at: location)
    }

    // MARK: Removing a version

    /// Removes a version (a file, or with `rmdir` a package's version whole): by root, or by the
    /// version's owner, for `NSFileVersion.removeOtherVersionsOfItem(at:)` and for space. Nothing
    /// inside a version can be changed.
    func remove(parent: Inode, name: FileName, directory: Bool, context: RequestContext) throws(FUSEError) {
        guard case .folder(let document) = try resolve(try inodes.path(of: parent)),
              let version = archive.version(of: document, named: name.string)
        else { throw .readOnlyFileSystem }
        guard version.isPackage == directory else { throw directory ? .notDirectory : .isDirectory }
        guard context.userID == 0 || context.userID == version.status.userID else { throw .notPermitted }
        try storeCall { try store.removeVersion(version) }
        // A document goes with its last version, and each folder on its way with its last
        // document: the kernel forgets their names at once.
        var gone = document
        while let (parent, name) = StorePath.split(gone), (try? resolve(gone)) == nil {
            if let folder = inodes.heldInode(for: parent) { notifier.invalidateEntry(parent: folder, name: name) }
            gone = parent
        }
    }

    // MARK: Resolving

    private func resolve(_ path: String) throws(FUSEError) -> Item {
        var item = Item.folder(document: "")
        guard !path.isEmpty else { return item }
        let known = archive.index
        for component in StorePath.names(path) {
            switch item {
            case .folder(let document):
                let child = document.isEmpty ? component : document + "/" + component
                if known.documents.contains(Array(document.utf8)), VersionName.savedTime(of: component) != nil {
                    let location = archive.folder(for: document) + "/" + component
                    if (try? FileStatus.of(path: location)) != nil {
                        item = .stored(location: location, version: location)
                        continue
                    }
                }
                guard known.children[Array(document.utf8)]?.contains(PathKey(component)) == true else { throw .noEntry }
                item = .folder(document: child)
            case .stored(let location, let version):
                item = .stored(location: location + "/" + component, version: version)
            }
        }
        if case .stored(let location, _) = item, (try? FileStatus.of(path: location)) == nil { throw .noEntry }
        return item
    }

    private func attributes(of item: Item, inode: Inode) throws(FUSEError) -> stat {
        var result = stat()
        result.st_blksize = 4096
        switch item {
        case .folder(let document):
            let isDocument = archive.index.documents.contains(Array(document.utf8))
            // A document's folder is shown with its gate (`documentGate`) and the document's times
            // where it has one: nothing else is read (every entry of `ls -l .versions/FOLDER` comes
            // here, twice). Otherwise a document's versions are listed as its folder lists it; a
            // folder's, as it lists itself. A folder that is gone (removed, renamed) shows as
            // root's alone: whoever could not enter it must not see its documents' names now.
            let gated = isDocument ? documentGate(document) : nil
            let folder = isDocument ? StorePath.split(document)?.parent ?? "" : document
            // Removed documents' folders (`.docfs/removed-1000/notes`) show as the folder they were in.
            let beforeRemoval = VersionArchive.pathBeforeRemoval(folder)
            var stored = gated?.status ?? (try? store.status(of: beforeRemoval ?? folder)).flatMap { $0.kind == .directory ? $0 : nil }
            let status: FileStatus
            if let stored { status = stored } else { status = try storeCall { try store.status(of: "") } }
            var permissions = stored.map { $0.permissions & 0o555 } ?? 0o500
            // A folder removed through the mount shows as it was then: its owner keeps their undo,
            // and whoever has its path now gets nothing of it.
            if stored == nil || beforeRemoval != nil, let removed = archive.removedFolder(folder) {
                stored = status
                stored?.userID = removed.userID
                stored?.groupID = removed.groupID
                permissions = removed.permissions & 0o555
            }
            if let gate = gated?.readers {
                stored = stored ?? status
                stored?.userID = gate.userID
                stored?.groupID = gate.groupID
                permissions = gate.permissions
            }
            if isDocument {
                // Writable and sticky, as /tmp: the kernel then lets a version's owner remove it
                // (and nobody else but the folder's owner); nothing can be made in it.
                permissions |= S_ISVTX | (permissions & 0o111) << 1
            }
            result.st_ino = ino_t(Self.folderNumber(document))
            result.st_mode = S_IFDIR | permissions
            result.st_nlink = 2
            result.st_uid = stored?.userID ?? 0
            result.st_gid = stored?.groupID ?? 0
            result.st_atim = status.accessTime
            result.st_mtim = status.modificationTime
            result.st_ctim = status.changeTime
        case .stored(let location, let version):
            let status = try storeCall { try FileStatus.of(path: location) }
            result.st_ino = ino_t(Self.numberBase | status.inode)
            // The saved mode, write bits included, as a read-only mount shows its files: writes fail
            // with EROFS all the same, and `cp` of a version makes a copy with the document's mode.
            // Less what its folders kept from others and its group when it was saved.
            let unreachable = location == version ? archive.unreachableBits(at: version, status: status) : archive.unreachableBits(at: version)
            result.st_mode = status.mode & ~(S_ISUID | S_ISGID) & ~unreachable
            result.st_nlink = nlink_t(status.linkCount)
            result.st_uid = status.userID
            result.st_gid = status.groupID
            result.st_size = off_t(status.size)
            result.st_blocks = blkcnt_t(status.blocks)
            result.st_atim = status.accessTime
            result.st_mtim = status.modificationTime
            result.st_ctim = status.changeTime
        }
        return result
    }

    /// Who may enter a document's versions: those who may read the document now (a `chmod 600`
    /// or a `chown` closes its history to others at once, as on ext4 it closes the document) and,
    /// where it was removed through the mount, who could read it then (a folder opened later, or
    /// made anew by another user, opens nothing). A document both removed and made anew under
    /// its name by someone else is root's alone. Nil where neither is known: the store folder
    /// holding it decides, as it is now.
    /// `status`: the document's, where it is there now.
    private func documentGate(_ document: String) -> (readers: VersionArchive.Readers, status: FileStatus?)? {
        let current = (try? store.status(of: document)).flatMap { $0.kind == .regular || $0.kind == .directory ? $0 : nil }
        let now = current.map { status -> VersionArchive.Readers in
            var gate = VersionArchive.Readers(status)
            gate.permissions = Self.readableAsSearchable(status.permissions)
            return gate
        }
        guard let then = archive.readersOfRemovedDocument(document) else {
            // A removed document's history without its record (a failure between the move and the
            // record): root's alone, not its folder's.
            if VersionArchive.pathBeforeRemoval(document) != nil { return (.rootAlone, nil) }
            return now.map { ($0, current) }
        }
        return (now.map { $0.narrowed(by: then) } ?? then, current)
    }

    /// r-x for each class (owner, group, others) that `permissions` lets read, --- for the others.
    private static func readableAsSearchable(_ permissions: mode_t) -> mode_t {
        [6, 3, 0].reduce(0) { result, shift in permissions & (0o4 << shift) != 0 ? result | (0o5 << shift) : result }
    }

    /// The number a folder of the view shows, the same in `stat` and `readdir`: from its path.
    private static func folderNumber(_ document: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in document.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return numberBase | (1 << 61) | (hash & ((1 << 61) - 1))
    }

    private func entry(at path: String) throws(FUSEError) -> Entry {
        let item = try resolve(path)
        let inode = inodes.lookedUp(path)
        do {
            return Entry(inode: inode, attributes: try attributes(of: item, inode: inode), entryTimeout: Self.cacheTimeout, attributeTimeout: Self.cacheTimeout)
        } catch {
            inodes.forget(inode, count: 1)
            throw error
        }
    }
}
