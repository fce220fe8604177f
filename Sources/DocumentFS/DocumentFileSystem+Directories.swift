import DocumentStore
import FUSE
import Glibc
import SystemSupport

/// Directory listings. A listing is taken at each read from offset 0 (the first read of a stream,
/// or a rewind) and kept for the reads that continue it, so the offsets handed to the kernel keep
/// their meaning while the directory changes.
extension DocumentFileSystem {
    func openDirectory(inode: Inode, flags: Int32, context: RequestContext) throws(FUSEError) -> OpenReply {
        let path = try path(of: inode)
        // With the store watched, the kernel may keep a directory's listing: its own changes update
        // it, and a change beside DocFS drops it (see `storeChanged`). Most opens are then answered
        // from that cache, so the stored directory is opened only when a listing is taken.
        let cached = watcher != nil
        if !cached { _ = try storeCall { try store.status(of: path) } }
        return OpenReply(handle: directories.insert(DirectoryListing(path: path, entries: [], descriptor: nil)), keepCache: cached, cacheDirectory: cached)
    }

    func readDirectory(inode: Inode, handle: UInt64, offset: Int64, plus: Bool, add: (DirectoryEntry) -> Bool) throws(FUSEError) {
        guard var listing = directories.get(handle) else { throw .badHandle }
        if offset == 0 {
            // The first read, or a rewinddir(3): the directory as it is now, not as it was at opendir,
            // wherever it is now (entries are looked up as its children: never another folder's).
            listing.path = try path(of: inode)
            listing.entries = try storeCall { try store.list(listing.path) }
            listing.descriptor = plus ? try? store.openDirectory(listing.path) : nil
            listing.ownIdentity = (try? store.status(of: listing.path))?.identity ?? 0
            let parentPath = inode == .root ? listing.path : nodes.parent(of: inode).flatMap { nodes.path(of: $0) }
            listing.parentIdentity = parentPath.flatMap { try? store.status(of: $0) }?.identity ?? 0
            directories.replace(handle, with: listing)
        }
        // Offsets: 0 is ".", 1 is "..", 2 + i is entries[i]; each entry's cookie is its offset + 1.
        var index = Int(max(0, offset))
        while index < listing.entries.count + 2 {
            defer { index += 1 }
            if index < 2 {
                // The kernel takes no reference on "." and "..", even in readdirplus.
                let number = index == 0 ? listing.ownIdentity : listing.parentIdentity
                let item = DirectoryEntry(name: index == 0 ? "." : "..", nextOffset: Int64(index + 1), number: number, mode: S_IFDIR)
                guard add(item) else { return }
                continue
            }
            let stored = listing.entries[index - 2]
            let path = StorePath.join(listing.path, stored.name)
            if plus {
                // Vanished since the listing was taken: skip it.
                let found = namespace.reading { () -> (Inode, FileStatus)? in
                    let status = listing.descriptor.flatMap { try? store.status(of: stored.name, in: $0, folder: listing.path) } ?? (try? store.status(of: path))
                    guard let status else { return nil }
                    return (nodes.child(parent: inode, name: stored.name, counting: true, status: status, kinship: { kinship(of: status, toRecord: $0, at: $1) }), status)
                }
                guard let (child, status) = found else { continue }
                if status.kind == .directory { watchDirectory(child, path: path, status: status) }
                let item = DirectoryEntry(
                    name: stored.name.string, nextOffset: Int64(index + 1), number: status.identity, mode: status.mode,
                    entry: entry(for: child, path: path, status: status, caller: nil))
                guard add(item) else {
                    nodes.forget(child, count: 1)
                    return
                }
            } else {
                // Plain readdir needs no stat: the type and number come from the listing.
                guard add(DirectoryEntry(name: stored.name.string, nextOffset: Int64(index + 1), number: stored.identity, mode: Self.mode(of: stored.kind))) else { return }
            }
        }
    }

    private static func mode(of kind: StoreDirectoryEntry.Kind) -> mode_t {
        switch kind {
        case .regular: S_IFREG
        case .directory: S_IFDIR
        case .symbolicLink: S_IFLNK
        case .fifo: S_IFIFO
        case .socket: S_IFSOCK
        case .characterDevice: S_IFCHR
        case .blockDevice: S_IFBLK
        case .unknown: 0
        }
    }

    /// fsync(2) of a folder: its entries (a create, a rename, an unlink in it) are on disk when
    /// this returns.
    func fsyncDirectory(inode: Inode, handle: UInt64, dataOnly: Bool) throws(FUSEError) {
        let path = try path(of: inode)
        try storeCall { try store.synchronizeDirectory(path) }
    }

    func releaseDirectory(inode: Inode, handle: UInt64) {
        directories.remove(handle)
    }
}
