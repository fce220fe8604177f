import DocumentStore
import SystemSupport

/// The rows below a folder that a change replacing it whole keeps (a package changed through its
/// clone, or re-encoded by its type): the files the new folder only carried over (linked: the same
/// file, the same content) and the folders still at their place. Each keeps its id, so its number
/// in every mount, and a file's content is neither uploaded nor fetched again.
struct KeptRows {
    /// The files, by the path each has once the change is made: where it was, and what it is.
    var files: [PathKey: (from: String, item: KnownItem)] = [:]
    /// The folders, by their path.
    var folders: [PathKey: KnownItem] = [:]

    /// Makes room for the new folder's rows below `root`: every file kept goes to a name no file
    /// can have, under `root`, checked to be still the version this mount knows (each then goes
    /// to its place, `PostgresStore.publishChildren`: the names it goes to are free, as when an
    /// exchange swaps two, and no folder removed takes it along); then every other row below goes.
    func clearWay(_ db: PostgresConnection, _ queries: StoreQueries, root: Int64) throws {
        for file in files.values {
            queries.moveKeptFileLater(db, item: file.item, to: (root, StoreQueries.parkedName(file.item.id)))
        }
        try queries.removeRows(db, below: [root] + folders.values.map(\.id), keeping: files.values.map(\.item.id) + folders.values.map(\.id))
    }
}

/// A regular file of the mirror that a folder made from another (a package's clone, or what a
/// type's encoding built) links, as it was when the folder was made.
struct LinkedFile: Sendable {
    /// Its path in the store.
    let path: String
    /// What the mirror knew it held then.
    let item: KnownItem
}

extension PostgresStore {
    /// The regular files below the folder `path` that the folder `made` links (hard links, as a
    /// clone makes them), by inode. Asked as `made` is made, under `applying`: another mount's
    /// change applied later is then a change the kept row's check finds, not one this change
    /// would take for its own.
    func linkedFiles(from path: String, into made: String) -> [UInt64: LinkedFile] {
        let inPath = filesByInode(under: path)
        return state.withLock { state in
            var linked: [UInt64: LinkedFile] = [:]
            for inode in filesByInode(under: made).keys {
                guard let file = inPath[inode], let item = state[file], !item.isFolder else { continue }
                linked[inode] = LinkedFile(path: file, item: item)
            }
            return linked
        }
    }

    /// The regular files at or below `folder` in the mirror, by inode (one path for each).
    func filesByInode(under folder: String) -> [UInt64: String] {
        var found: [UInt64: String] = [:]
        for entry in (try? mirror.list(folder)) ?? [] {
            let child = StorePath.join(folder, entry.name)
            guard let status = try? mirror.status(of: child) else { continue }
            switch status.kind {
            case .directory: found.merge(filesByInode(under: child)) { first, _ in first }
            case .regular: found[status.inode] = child
            default: break
            }
        }
        return found
    }

    /// The rows below `path` that `prepared`, about to take its place, keeps: the files it links
    /// (`linkedFiles`, asked when it was made) wherever they are in it now, and the folders it has
    /// at the same place. A kept file's version is the one the mirror knows now, where its content
    /// is still the one linked: an attribute change made here since is this mount's own.
    func rowsToKeep(below path: String, preparedAt prepared: String) -> KeptRows {
        guard let linked = state.withLock({ $0.linkedFiles[PathKey(prepared)] }), !linked.isEmpty else { return KeptRows() }
        var kept = KeptRows()
        let files = filesByInode(under: prepared)
        let known = state.withLock { state in
            (state.items(below: path), linked.mapValues { file in state.path(of: file.item.id).flatMap { state[$0] } })
        }
        for (inode, file) in files {
            guard let link = linked[inode] else { continue }
            var item = link.item
            if let now = known.1[inode] ?? nil, now.id == item.id, now.contentVersion == item.contentVersion { item.version = now.version }
            kept.files[PathKey(StorePath.replacingFolder(prepared, with: path, in: file))] = (link.path, item)
        }
        for (folder, item) in known.0 where item.isFolder {
            if (try? mirror.status(of: StorePath.replacingFolder(path, with: prepared, in: folder)))?.kind == .directory { kept.folders[PathKey(folder)] = item }
        }
        return kept
    }
}
