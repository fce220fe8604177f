import DocumentStore
import Foundation
import Glibc
import SystemSupport

/// Applying the database's state to the mirror: at mount (the whole tree), and for the folders
/// other mounts' commits changed (read from the change log). A new or changed file arrives as a
/// placeholder, renamed into place, whose content is fetched whole when it is opened (see
/// `withContent`); a package folder replaced whole elsewhere is built beside its old version and
/// swapped in, so readers here see whole versions only.
extension PostgresStore {
    public func startChangeFeed(_ handler: @escaping @Sendable ([StoreChange]) -> Void) {
        changeHandler.withLock { $0 = handler }
        ChangeFeed(store: self).start()
    }

    /// Compares the whole mirror with the database and applies the differences.
    func synchronizeEverything() throws {
        let changes = try applying.writing { () throws -> [StoreChange] in
            try pool.withConnection { connection in
                // One snapshot: the change counter and the tree agree.
                try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                defer { _ = try? connection.execute("ROLLBACK") }
                let counter = try connection.execute("SELECT last_change FROM docfs_stores WHERE id = $1", [.integer(queries.storeID)])
                let tree = try queries.tree(connection, storeRoot: rootID)
                var changes: [StoreChange] = []
                try apply(tree, folder: rootID, path: "", complete: true, connection, &changes)
                state.withLock { state in
                    state.lastChange = counter.integer(0, 0) ?? 0
                    state.needsFullSynchronization = false
                }
                return changes
            }
        }
        deliver(changes)
    }

    /// Applies the changes other mounts logged since the last call. Returns whether there were any.
    @discardableResult
    func catchUp() throws -> Bool {
        if state.withLock({ $0.needsFullSynchronization }) {
            try synchronizeEverything()
            logger.notice("the mirror was compared whole with the database again")
            return true
        }
        let since = state.withLock { $0.lastChange }
        let changes = try applying.writing { () throws -> [StoreChange] in
            try pool.withConnection { db in
                let rows = try db.execute(
                    "SELECT seq, directory, origin FROM docfs_changes WHERE store = $1 AND seq > $2 ORDER BY seq",
                    [.integer(queries.storeID), .integer(since)])
                guard rows.count > 0 else { return [] }
                // Numbers are consecutive (each transaction takes the next and logs at least one
                // folder): a gap means the log was pruned past this mount, which then compares its
                // whole mirror instead.
                if let first = rows.integer(0, 0), first > since + 1 {
                    state.withLock { $0.needsFullSynchronization = true }
                    return []
                }
                var folders: [Int64] = []
                var last = since
                for row in 0..<rows.count {
                    last = max(last, rows.integer(row, 0) ?? last)
                    if rows.text(row, 2) != queries.origin, let folder = rows.integer(row, 1), !folders.contains(folder) { folders.append(folder) }
                }
                var changes: [StoreChange] = []
                for folder in folders {
                    // A folder this mount does not mirror (removed, or new under a folder that
                    // changed too) is reached through its parent's change.
                    guard let path = state.withLock({ $0.path(of: folder) }) ?? (folder == rootID ? "" : nil) else { continue }
                    try apply(queries.directory(db, folder), folder: folder, path: path, complete: false, db, &changes)
                }
                state.withLock { $0.lastChange = last }
                return changes
            }
        }
        deliver(changes)
        if state.withLock({ $0.needsFullSynchronization }) {
            logger.notice("the change log was pruned past this mount's last read: comparing the whole mirror with the database")
            try synchronizeEverything()
            return true
        }
        return !changes.isEmpty
    }

    /// How many change numbers the log keeps behind the newest: a mount that falls further behind
    /// (stopped for long, or disconnected) compares its whole mirror when it catches up.
    static let changeLogLength: Int64 = 100_000

    /// Drops the log's oldest entries (at each mount).
    func pruneChangeLog() {
        _ = try? pool.withConnection { db in
            try db.execute(
                "DELETE FROM docfs_changes WHERE store = $1 AND seq < (SELECT last_change FROM docfs_stores WHERE id = $1) - $2",
                [.integer(queries.storeID), .integer(Self.changeLogLength)])
        }
    }

    private func deliver(_ changes: [StoreChange]) {
        guard !changes.isEmpty, let handler = changeHandler.withLock({ $0 }) else { return }
        handler(changes)
    }

    /// Makes the mirrored folder at `path` match the database's folder `folder` in `tree`; `complete`:
    /// the tree holds every item below it (a whole-store or subtree query), so folders are compared
    /// all the way down.
    private func apply(_ tree: ItemTree, folder: Int64, path: String, complete: Bool, _ db: PostgresConnection, _ changes: inout [StoreChange]) throws {
        guard let folderItem = tree.items[folder] else { return }
        var names = Set<FileName>()
        var changed = false
        for child in tree.childItems(of: folder) {
            guard let name = acceptedName(of: child, at: path) else { continue }
            let childPath = StorePath.join(path, name)
            names.insert(name)
            let known = state.withLock { $0[childPath] }
            var descend = complete && child.isDirectory
            if known?.id != child.id {
                if known != nil || (try? mirror.status(of: childPath)) != nil { try removeLocal(childPath) }
                try fetch(child, at: childPath, record: childPath, tree, complete: complete, db)
                descend = false
            } else if known?.contentVersion != child.contentVersion {
                if child.isDirectory {
                    // A package replaced whole: built beside the old one and swapped in at once.
                    let prepared = DirectoryStore.privateAreaName + "/tmp/synchronize-\(child.id)-\(child.contentVersion)"
                    mirror.removePrivateItem(prepared)
                    state.withLock { $0.removeSubtree(childPath) }
                    let subtree = complete ? tree : try queries.tree(db, root: child.id, storeRoot: rootID)
                    do {
                        try fetch(child, at: prepared, record: childPath, subtree, complete: true, db)
                        try mirror.replaceDirectory(at: childPath, with: prepared)
                    } catch {
                        mirror.removePrivateItem(prepared)
                        state.withLock { $0.needsFullSynchronization = true }
                        throw error
                    }
                    descend = false
                } else {
                    try placePlaceholder(at: childPath, size: child.size)
                    try applyAttributes(child, at: childPath)
                    state.withLock { $0.set(childPath, KnownItem(child)) }
                }
            } else if known?.version != child.version {
                try applyAttributes(child, at: childPath)
                state.withLock { $0.set(childPath, KnownItem(child)) }
            } else {
                if descend { try apply(tree, folder: child.id, path: childPath, complete: true, db, &changes) }
                continue
            }
            changed = true
            changes.append(.entry(folder: path, name: name))
            if descend { try apply(tree, folder: child.id, path: childPath, complete: true, db, &changes) }
        }
        for entry in try mirror.list(path) where !names.contains(entry.name) {
            try removeLocal(StorePath.join(path, entry.name))
            changed = true
            changes.append(.entry(folder: path, name: entry.name))
        }
        // The folder's own attributes; its times also moved with the entries changed here.
        if changed || state.withLock({ $0[path] })?.isSameVersion(as: KnownItem(folderItem)) != true {
            try applyAttributes(folderItem, at: path)
            state.withLock { $0.set(path, KnownItem(folderItem)) }
            if path.isEmpty { changes.append(.entry(folder: "", name: nil)) }
        }
    }

    /// Creates the item (a folder with everything in it) in the mirror at `at`, known as `record`.
    private func fetch(_ item: StoredItem, at path: String, record: String, _ tree: ItemTree, complete: Bool, _ db: PostgresConnection) throws {
        let owner = Ownership(userID: item.userID, groupID: item.groupID)
        if item.isDirectory {
            try mirror.makeDirectory(path, mode: mode_t(item.mode & 0o7777), owner: owner)
            state.withLock { $0.set(record, KnownItem(item)) }
            let subtree = complete ? tree : try queries.tree(db, root: item.id, storeRoot: rootID)
            for child in subtree.childItems(of: item.id) {
                guard let name = acceptedName(of: child, at: record) else { continue }
                try fetch(child, at: StorePath.join(path, name), record: StorePath.join(record, name), subtree, complete: true, db)
            }
        } else if item.isRegular {
            try placePlaceholder(at: path, size: item.size)
        } else if item.isSymbolicLink {
            try mirror.makeSymbolicLink(path, target: item.target ?? "", owner: owner)
        } else {
            try mirror.makeSpecialFile(path, mode: mode_t(item.mode), device: dev_t(item.device), owner: owner)
        }
        try applyAttributes(item, at: path)
        state.withLock { $0.set(record, KnownItem(item)) }
    }

    /// The name a row may be mirrored under in the folder at `path` (see `StoredItem.mirroredName`);
    /// a row refused is logged once and kept for `docfs check` to report.
    func acceptedName(of item: StoredItem, at path: String) -> FileName? {
        switch StoredItem.mirroredName(of: item, inFolder: path) {
        case .success(let name):
            return name
        case .failure(let refusal):
            let row = InvalidRow(id: item.id, parent: item.parent, name: item.rawName, folder: path, problem: refusal.problem)
            if state.withLock({ $0.invalidRows.updateValue(row, forKey: item.id) == nil }) {
                logger.error("row \(item.id) of docfs_items (in \(path.isEmpty ? "the root folder" : path)) is not mirrored: \(refusal.problem); its name's bytes are \(row.nameDescription)")
            }
            return nil
        }
    }

    private func applyAttributes(_ item: StoredItem, at path: String) throws {
        guard !item.isSymbolicLink else { return }
        // The owner first: a chown clears set-user-ID and set-group-ID.
        if canChangeOwner { try? mirror.setOwner(path, Ownership(userID: item.userID, groupID: item.groupID)) }
        try mirror.setPermissions(path, mode_t(item.mode & 0o7777))
        let wanted = Set(item.extendedAttributes.map(\.name))
        for name in (try? mirror.extendedAttributeNames(path)) ?? [] where !wanted.contains(name) {
            try? mirror.removeExtendedAttribute(path, name: name)
        }
        for (name, value) in item.extendedAttributes {
            try value.withUnsafeBytes { try mirror.setExtendedAttribute(path, name: name, value: $0, flags: 0) }
        }
        try mirror.setTimes(path, access: StoredItem.timespec(item.accessNanoseconds), modification: StoredItem.timespec(item.modificationNanoseconds))
    }

    private func removeLocal(_ path: String) throws {
        if let full = mirror.localPath(of: path) { try FileIO.removeItem(full) }
        state.withLock { $0.removeSubtree(path) }
    }
}

extension KnownItem {
    /// A row as the mirror first holds it: a regular file with content is a placeholder.
    init(_ item: StoredItem) {
        self.init(
            id: item.id, version: item.version, contentVersion: item.contentVersion, isFolder: item.isDirectory,
            size: item.isRegular ? item.size : 0, contentKey: item.isRegular ? item.contentKey : nil, isFetched: !item.isRegular || item.size == 0)
    }
}
