import DocumentStore
import SystemSupport

/// The rows below a folder that a change replacing it whole keeps (a package changed through its
/// clone, or re-encoded by its type): the files the new folder only carried over (linked: the same
/// file, the same content) and the folders it made in place of the old ones, wherever the change
/// moved them. Each keeps its id, so its number in every mount, and a file's content is neither
/// uploaded nor fetched again.
struct KeptRows {
    /// The files and folders kept, by the path each has once the change is made.
    var items: [PathKey: LinkedItem] = [:]

    /// Makes room for the new folder's rows below `root`: every item kept goes to a name no file
    /// can have, under `root`, a file checked to be still the version this mount knows (each then
    /// goes to its place, `PostgresStore.publishChildren`: the names it goes to are free, as when
    /// an exchange swaps two, and no folder removed takes it along); then every other row below
    /// goes.
    func clearWay(_ db: PostgresConnection, _ queries: StoreQueries, root: Int64) throws {
        for kept in items.values {
            queries.moveKeptItemLater(db, item: kept.item, to: (root, StoreQueries.parkedName(kept.item.id)))
        }
        let folders = items.values.filter(\.item.isFolder).map(\.item.id)
        try queries.removeRows(db, below: [root] + folders, keeping: items.values.map(\.item.id))
    }
}

/// An item of the mirror that a folder made from another (a package's clone, or what a type's
/// encoding built) took over, as it was when the folder was made: a file it links, or a folder it
/// made in the place of one.
struct LinkedItem: Sendable {
    /// Its path in the store then.
    let path: String
    /// What the mirror knew of it then.
    let item: KnownItem
}

extension PostgresStore {
    /// What the folder `made` took over from the folder `path`, by the inode each has in `made`:
    /// the regular files it links (hard links, as a clone makes them) and the folders it has at
    /// the same place. Asked as `made` is made, under `applying`: another mount's change applied
    /// later is then a change the kept row's check finds, not one this change takes for its own.
    func linkedItems(from path: String, into made: String) -> [UInt64: LinkedItem] {
        let inPath = filesByInode(under: path)
        let madeItems = itemsByInode(under: made)
        return state.withLock { state in
            var linked: [UInt64: LinkedItem] = [:]
            for (inode, item) in madeItems {
                let original = item.isFolder ? StorePath.replacingFolder(made, with: path, in: item.path) : inPath[inode]
                guard let original, let known = state[original], known.isFolder == item.isFolder else { continue }
                linked[inode] = LinkedItem(path: original, item: known)
            }
            return linked
        }
    }

    /// The regular files at or below `folder` in the mirror, by inode (one path for each).
    private func filesByInode(under folder: String) -> [UInt64: String] {
        itemsByInode(under: folder).compactMapValues { $0.isFolder ? nil : $0.path }
    }

    /// The regular files and folders below `folder` in the mirror, by inode (one path for each).
    private func itemsByInode(under folder: String) -> [UInt64: (path: String, isFolder: Bool)] {
        var found: [UInt64: (path: String, isFolder: Bool)] = [:]
        for entry in (try? mirror.list(folder)) ?? [] {
            let child = StorePath.join(folder, entry.name)
            guard let status = try? mirror.status(of: child) else { continue }
            switch status.kind {
            case .directory:
                found[status.inode] = (child, true)
                found.merge(itemsByInode(under: child)) { first, _ in first }
            case .regular: found[status.inode] = (child, false)
            default: break
            }
        }
        return found
    }

    /// The rows below `path` that `prepared`, about to take its place, keeps: what it took over
    /// (`linkedItems`, asked when it was made), wherever it is in it now. A kept file's version is
    /// the one the mirror knows now, where its content is still the one linked: an attribute change
    /// made here since is this mount's own.
    func rowsToKeep(below path: String, preparedAt prepared: String) -> KeptRows {
        guard let linked = state.withLock({ $0.linkedItems[PathKey(prepared)] }), !linked.isEmpty else { return KeptRows() }
        let items = itemsByInode(under: prepared)
        let now = state.withLock { state in linked.mapValues { state.path(of: $0.item.id).flatMap { state[$0] } } }
        var kept = KeptRows()
        for (inode, item) in items {
            guard let link = linked[inode] else { continue }
            var known = link.item
            if !known.isFolder, let current = now[inode] ?? nil, current.id == known.id, current.contentVersion == known.contentVersion {
                known.version = current.version
            }
            kept.items[PathKey(StorePath.replacingFolder(prepared, with: path, in: item.path))] = LinkedItem(path: link.path, item: known)
        }
        return kept
    }
}
