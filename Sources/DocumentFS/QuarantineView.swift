import DocumentStore
import FUSE
import Glibc
import SystemSupport

/// `MNT/.docfs/quarantine`: the store's quarantine, read-only, each requester seeing only the items
/// they wrote (root sees all). So a user of a shared `allow_other` mount gets back their own refused
/// saves without root and without any right on the store's directory, and sees nobody else's.
///
/// Its inodes are numbered from `firstInode` up, apart from the file system's own. Nothing in it
/// is cached by the kernel (entry and attribute timeouts are 0): the kernel's name cache is shared
/// by all users, so every lookup must come here to be judged with its requester's rights.
final class QuarantineView: Sendable {
    static let firstInode: Inode = 1 << 62
    static let privateArea = DirectoryStore.privateName
    static let folderName = Quarantine.folderName
    private static let folderPath = Quarantine.relativePath

    static func owns(_ inode: Inode) -> Bool { inode >= firstInode && inode < VersionsView.firstInode }

    private let store: any DocumentStore
    private let inodes = ViewInodes(first: QuarantineView.firstInode)
    private let files = HandleTable<OwnedDescriptor>()
    private let listings = HandleTable<[ViewEntry]>()

    init(store: any DocumentStore) { self.store = store }

    // MARK: Names and attributes

    /// The entry for `.docfs` at the mount's root.
    func lookupPrivateArea(context: RequestContext) throws(FUSEError) -> Entry {
        try entry(at: Self.privateArea.string, context: context)
    }

    func lookup(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) -> Entry {
        let folder = try path(of: parent)
        if folder == Self.privateArea.string, name != Self.folderName { throw .noEntry }
        return try entry(at: folder + "/" + name.string, context: context)
    }

    /// `.` or `..` of a folder in the view; nil when that is the mount's root.
    func lookup(_ relative: RelativeEntry, in directory: Inode, context: RequestContext) throws(FUSEError) -> Entry? {
        let path = try path(of: directory)
        switch relative {
        case .current: return try entry(at: path, context: context)
        case .parent:
            guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return nil }
            return try entry(at: String(path[..<slash]), context: context)
        }
    }

    func forget(_ inode: Inode, count: UInt64) { inodes.forget(inode, count: count) }

    func attributes(of inode: Inode, context: RequestContext) throws(FUSEError) -> AttributesReply {
        let path = try path(of: inode)
        return AttributesReply(attributes: try visibleAttributes(at: path, context: context), timeout: 0)
    }

    /// The link was found by a lookup judged with its requester's rights, and no lookup here is
    /// cached, so the kernel judges every path walk again.
    func readLink(_ inode: Inode) throws(FUSEError) -> String {
        let path = try path(of: inode)
        return try storeCall { try store.symbolicLinkTarget(path) }
    }

    // MARK: Reading

    func open(_ inode: Inode, flags: Int32, context: RequestContext) throws(FUSEError) -> OpenReply {
        guard flags & O_ACCMODE == O_RDONLY, flags & O_TRUNC == 0 else { throw .readOnlyFileSystem }
        let path = try path(of: inode)
        _ = try visibleAttributes(at: path, context: context)
        let descriptor = try storeCall { try store.openForReading(path) }
        return OpenReply(handle: files.insert(descriptor), directIO: true)
    }

    func read(handle: UInt64, offset: Int64, size: Int) throws(FUSEError) -> ReadReply {
        guard let descriptor = files.get(handle) else { throw .badHandle }
        return .fileRegion(descriptor: descriptor.rawValue, offset: offset, size: size, owner: descriptor)
    }

    func release(handle: UInt64) { _ = files.remove(handle) }

    /// The folder's entries the requester may see, taken when it is opened (readdir does not say
    /// who asks).
    func openDirectory(_ inode: Inode, context: RequestContext) throws(FUSEError) -> OpenReply {
        let path = try path(of: inode)
        let own = try visibleAttributes(at: path, context: context)
        let parent = String(path[..<(path.utf8.lastIndex(of: UInt8(ascii: "/")) ?? path.startIndex)])
        var entries = [
            ViewEntry(name: ".", number: UInt64(own.st_ino), mode: S_IFDIR),
            ViewEntry(name: "..", number: (try? store.status(of: parent))?.identity ?? 1, mode: S_IFDIR),
        ]
        let names: [FileName]
        if FileSystemPath.same(path, Self.privateArea.string) {
            names = [Self.folderName]
        } else {
            names = try storeCall { try store.list(path) }.map(\.name)
        }
        for name in names {
            guard let attributes = try? visibleAttributes(at: path + "/" + name.string, context: context) else { continue }
            entries.append(ViewEntry(name: name.string, number: UInt64(attributes.st_ino), mode: attributes.st_mode))
        }
        return OpenReply(handle: listings.insert(entries))
    }

    func readDirectory(handle: UInt64, offset: Int64, add: (DirectoryEntry) -> Bool) throws(FUSEError) {
        try listings.readDirectory(handle: handle, offset: offset, add: add)
    }

    func releaseDirectory(handle: UInt64) { _ = listings.remove(handle) }

    // MARK: Who sees what

    /// The attributes of `path` as the requester may see them, or ENOENT when it is not theirs:
    /// `.docfs` and its `quarantine` folder are root's and open to all to look in; an item, and
    /// everything in it, is seen only by its writer (the owner of the quarantined file or folder),
    /// and written by nobody.
    private func visibleAttributes(at path: String, context: RequestContext) throws(FUSEError) -> stat {
        let status = try storeCall { try store.status(of: path) }
        var result = stat()
        result.st_ino = ino_t(status.identity)
        result.st_nlink = nlink_t(status.linkCount)
        result.st_size = off_t(status.size)
        result.st_blocks = blkcnt_t(status.blocks)
        result.st_blksize = 4096
        result.st_atim = status.accessTime
        result.st_mtim = status.modificationTime
        result.st_ctim = status.changeTime
        guard let item = Self.item(containing: path) else {
            // `.docfs` or `.docfs/quarantine`: their own size, links and times would tell everyone
            // how many refused saves others have, and when. They show the store root's times.
            let root = try storeCall { try store.status(of: "") }
            result.st_mode = S_IFDIR | 0o555
            result.st_nlink = 2
            result.st_size = 0
            result.st_blocks = 0
            result.st_atim = root.accessTime
            result.st_mtim = root.modificationTime
            result.st_ctim = root.changeTime
            return result
        }
        let isItem = item.utf8.elementsEqual(path.utf8)
        let owner = isItem ? status : try storeCall { try store.status(of: item) }
        guard context.userID == 0 || owner.userID == context.userID else { throw .noEntry }
        result.st_uid = status.userID
        result.st_gid = status.groupID
        // The item is its writer's alone. What is inside a quarantined package keeps its owners
        // and modes (less writing): the package's clone links its members, and a member the
        // writer could not read in the package stays unreadable here.
        result.st_mode = (status.mode & S_IFMT) | (status.mode & (isItem ? 0o500 : 0o555))
        return result
    }

    /// `.docfs/quarantine/ITEM` for a path at or under it.
    private static func item(containing path: String) -> String? {
        guard StorePath.isWithin(path, folderPath), !FileSystemPath.same(path, folderPath) else { return nil }
        let rest = path.utf8.dropFirst(folderPath.utf8.count + 1)
        guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[..<slash])
    }

    // MARK: Inodes

    private func path(of inode: Inode) throws(FUSEError) -> String { try inodes.path(of: inode) }

    /// The entry for `path`, counting the kernel's new reference to its inode.
    private func entry(at path: String, context: RequestContext) throws(FUSEError) -> Entry {
        let attributes = try visibleAttributes(at: path, context: context)
        return Entry(inode: inodes.lookedUp(path), attributes: attributes, entryTimeout: 0, attributeTimeout: 0)
    }
}
