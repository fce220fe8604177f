import SystemSupport

/// Folders read whole through a descriptor (`withFolderWrapper`, how a package is judged) are never
/// emptied under the read: a change that replaces a folder (a package's commit swapping its next
/// version in) removes the one it replaced once no such read is under way, so one read is one
/// version of the folder and its reader never has to read the name again. The last read to end
/// does the removals.
struct FolderReads {
    var active = 0
    /// Replaced items whose removal waits for the reads, with the file they were (a path in the
    /// private area is used again only for another item, which is then left alone).
    var replaced: [(path: String, device: UInt64, inode: UInt64)] = []
}

extension DirectoryStore {
    /// Runs `body` as a folder read: replaced items are removed after it (and after every other
    /// read under way).
    func readingFolder<T>(_ body: () throws -> T) rethrows -> T {
        folderReads.withLock { $0.active += 1 }
        defer {
            let due = folderReads.withLock { reads -> [(path: String, device: UInt64, inode: UInt64)] in
                reads.active -= 1
                guard reads.active == 0 else { return [] }
                defer { reads.replaced = [] }
                return reads.replaced
            }
            for item in due {
                guard let status = try? FileStatus.of(path: item.path), status.device == item.device, status.inode == item.inode else { continue }
                try? FileIO.removeItem(item.path)
            }
        }
        return try body()
    }

    /// Removes the private item a change replaced (at `absolutePath`): now, or after the folder
    /// reads under way, one of which may be reading it.
    func removeReplaced(atAbsolutePath absolutePath: String) {
        let status = try? FileStatus.of(path: absolutePath)
        let deferred = folderReads.withLock { reads -> Bool in
            guard reads.active > 0 else { return false }
            if let status { reads.replaced.append((absolutePath, status.device, status.inode)) }
            return true
        }
        if !deferred { try? FileIO.removeItem(absolutePath) }
    }

    /// `removeReplaced(atAbsolutePath:)` for a path in the private area (a shared store's mirror
    /// swaps its changes in itself: `swapIn`).
    public func removeReplacedItem(_ item: String) {
        removeReplaced(atAbsolutePath: absolute(item))
    }
}
