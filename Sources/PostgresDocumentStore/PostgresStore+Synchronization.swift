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

    /// Compares the whole mirror with the database and applies the differences. The database is
    /// read with no lock held; the differences are applied under `applying`, taken at once with
    /// `patiently` (at mount), else only when it comes within moments: reads of the mirror are never
    /// held behind a local change that waits on the database. False when it did not get the lock
    /// (`needsFullSynchronization` stays set, and the next `catchUp` tries again).
    @discardableResult
    func synchronizeEverything(patiently: Bool = true) throws -> Bool {
        for _ in 0..<3 {
            let generation = state.withLock { $0.localChanges }
            let (cursor, tree) = try pool.withConnection { connection in
                // A large store takes long to read: no time limit but a generous one.
                try connection.withAnswerTimeout(.seconds(600)) { () throws -> (ChangeCursor, ItemTree) in
                    // One snapshot: the log is read on from where the tree was (see `ChangeCursor`).
                    try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                    defer { connection.rollback() }
                    try connection.execute("SET LOCAL statement_timeout = 0")
                    let snapshot = try connection.execute("SELECT pg_current_snapshot()::text")
                    // An answer not understood reads the whole log next time: slow, never wrong.
                    return (snapshot.text(0, 0).flatMap(ChangeCursor.init(snapshot:)) ?? ChangeCursor(), try queries.tree(connection, storeRoot: rootID))
                }
            }
            func applyTree() throws -> [StoreChange]? {
                // A local change committed since the snapshot would be undone by it, and one not yet
                // in the mirror would be made by it out of turn: read again.
                guard state.withLock({ $0.localChanges == generation && $0.foldersPublishing.isEmpty }) else { return nil }
                var changes: [StoreChange] = []
                try apply(tree, folder: rootID, path: "", complete: true, subtree: { _ in tree }, &changes)
                state.withLock { state in
                    state.changeCursor = cursor
                    state.historyMovesRead += 1
                    state.needsFullSynchronization = false
                    state.currentAt = .now
                }
                return changes
            }
            let applied = patiently ? try applying.writing(applyTree) : try applying.writing(within: Self.applyingPatience, applyTree) ?? nil
            if let applied {
                deliver(applied)
                return true
            }
        }
        return false
    }

    /// How long applying other mounts' changes waits for local changes to let go of the mirror
    /// before it gives up until the next poll, in milliseconds: readers wait behind it no longer.
    static let applyingPatience = 50

    /// Applies the changes other mounts logged since the last call. Returns whether there were any.
    /// The log and the folders it names are read with no lock held (see `synchronizeEverything`).
    @discardableResult
    func catchUp() throws -> Bool {
        if state.withLock({ $0.needsFullSynchronization }) {
            guard try synchronizeEverything(patiently: false) else { return false }
            logger.notice("the mirror was compared whole with the database again")
            return true
        }
        for _ in 0..<3 {
            let (since, generation) = state.withLock { ($0.changeCursor, $0.localChanges) }
            guard let read = try readChanges(since: since) else {
                logger.notice("the change log was pruned past this mount's last read (transaction \(since.oldestNeeded)): comparing the whole mirror with the database")
                state.withLock { $0.needsFullSynchronization = true }
                return try synchronizeEverything(patiently: false)
            }
            if read.folders.isEmpty {
                state.withLock { state in
                    if state.changeCursor == since {
                        state.changeCursor = read.cursor
                        state.historyMovesRead += read.historyMoves
                    }
                    state.currentAt = .now
                }
                return false
            }
            func subtree(_ id: Int64) throws -> ItemTree {
                try read.subtrees[id] ?? pool.withConnection { try queries.tree($0, root: id, storeRoot: rootID) }
            }
            let applied = try applying.writing(within: Self.applyingPatience) { () throws -> [StoreChange]? in
                // Another catch-up, or a local change, moved the mirror since the read, or is about
                // to: read again.
                guard state.withLock({ $0.changeCursor == since && $0.localChanges == generation }) else { return nil }
                let paths = read.folders.map { folder, _ in state.withLock { $0.path(of: folder) } ?? (folder == rootID ? "" : nil) }
                // A local change committed to one of these folders whose mirror part is not made
                // yet would be made here out of turn: the next poll applies them.
                guard !state.withLock({ state in paths.contains { $0.map(state.isPublishing(within:)) ?? false } }) else { return nil }
                var changes: [StoreChange] = []
                // Rows moved between folders move in the mirror first, the content it holds with them:
                // a folder's changes remove what left it, and the log lists a move's two folders in
                // no set order (two folders may also swap rows).
                for (folder, tree) in read.folders {
                    guard let path = state.withLock({ $0.path(of: folder) }) ?? (folder == rootID ? "" : nil) else { continue }
                    let movedIn = state.withLock { state in tree.childItems(of: folder).filter { state.isKnown($0.id, outsideFolder: folder) } }
                    for child in movedIn {
                        guard let name = acceptedName(of: child, at: path) else { continue }
                        _ = movedHere(child, to: StorePath.join(path, name), &changes)
                    }
                }
                for (folder, tree) in read.folders {
                    // Where the folder is now: an earlier folder's changes may have moved it (a
                    // rename applied as a move) or put another in its place. A folder this mount does
                    // not mirror (removed, or new under a folder that changed too) is reached through
                    // its parent's change.
                    guard let path = state.withLock({ $0.path(of: folder) }) ?? (folder == rootID ? "" : nil) else { continue }
                    try apply(tree, folder: folder, path: path, complete: false, subtree: subtree, &changes)
                }
                state.withLock { state in
                    state.changeCursor = read.cursor
                    state.historyMovesRead += read.historyMoves
                    state.currentAt = .now
                }
                return changes
            }
            if case let changes?? = applied {
                deliver(changes)
                return !changes.isEmpty
            }
        }
        // Busy: the next poll (within a second) tries again.
        return false
    }

    /// What the change log holds past `since`: the folders other mounts changed, each read with its
    /// children, and the subtrees of the folders among them that are new here or were replaced
    /// whole. Nil when the log was pruned past `since`.
    private func readChanges(since: ChangeCursor) throws -> ChangesRead? {
        try pool.withConnection { db in
            // One snapshot (a prune between reading its mark and the log would hide a gap), and no
            // time limit but a generous one: a large new folder takes long to read.
            try db.withAnswerTimeout(.seconds(120)) { try readChanges(since: since, db) }
        }
    }

    private func readChanges(since: ChangeCursor, _ db: PostgresConnection) throws -> ChangesRead? {
        try db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        defer { db.rollback() }
        try db.execute("SET LOCAL statement_timeout = 0")
        let marks = try db.execute(
            "SELECT pruned_below_xid::text::bigint, pg_current_snapshot()::text FROM docfs_stores WHERE id = $1", [.integer(queries.storeID)])
        // Rows of transactions below `pruned_below_xid` are gone: none this mount needs may be.
        if since.oldestNeeded < marks.integer(0, 0) ?? 0 { return nil }
        // The rows this snapshot holds and the last one did not (see `ChangeCursor`).
        let rows = try db.execute(
            """
            SELECT directory, origin FROM docfs_changes
            WHERE store = $1 AND (xid >= ($2::bigint)::text::xid8 OR xid = ANY($3::text::xid8[])) ORDER BY seq
            """,
            [.integer(queries.storeID), .integer(since.xmax), .text(since.inProgressLiteral)])
        // A snapshot not understood keeps the last: the next read asks for these rows again.
        let cursor = marks.text(0, 1).flatMap(ChangeCursor.init(snapshot:)) ?? since
        var folderIDs: [Int64] = []
        var historyMoves: Int64 = 0
        for row in 0..<rows.count {
            guard let folder = rows.integer(row, 0) else { continue }
            if folder == StoreQueries.historyMoveFolder {
                historyMoves += 1
            } else if rows.text(row, 1) != queries.origin, !folderIDs.contains(folder) {
                folderIDs.append(folder)
            }
        }
        var folders: [(Int64, ItemTree)] = []
        var subtrees: [Int64: ItemTree] = [:]
        for folder in folderIDs {
            let tree = try queries.directory(db, folder)
            folders.append((folder, tree))
            // The folders `apply` will fetch whole: new at their path (made, or moved there)
            // or replaced whole (a package commit).
            guard let folderPath = state.withLock({ $0.path(of: folder) }) ?? (folder == rootID ? "" : nil) else { continue }
            for child in tree.childItems(of: folder) where child.isDirectory {
                guard let name = acceptedName(of: child, at: folderPath) else { continue }
                let known = state.withLock { $0[StorePath.join(folderPath, name)] }
                if known?.id != child.id || known?.contentVersion != child.contentVersion {
                    subtrees[child.id] = try queries.tree(db, root: child.id, storeRoot: rootID)
                }
            }
        }
        return ChangesRead(cursor: cursor, folders: folders, subtrees: subtrees, historyMoves: historyMoves)
    }

    /// How many rows the log keeps behind the newest: a mount that falls further behind (stopped
    /// for long, or disconnected) compares its whole mirror when it catches up.
    static let changeLogLength: Int64 = 100_000

    /// Drops the log's oldest rows (those of transactions below the row `changeLogLength` from the
    /// newest, and below every transaction still running), and marks of commits older than a day
    /// (at each mount). Below every running one: a reader's next snapshot then needs none of the
    /// rows gone, however long a transaction ran, and does not compare its whole mirror again.
    func pruneChangeLog() {
        _ = try? pool.withConnection { db in
            try db.transaction { db in
                let cut = try db.execute(
                    """
                    SELECT least(xid::text::bigint, pg_snapshot_xmin(pg_current_snapshot())::text::bigint)
                    FROM docfs_changes WHERE store = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1
                    """,
                    [.integer(queries.storeID), .integer(Self.changeLogLength)])
                guard let below = cut.integer(0, 0) else { return }
                try db.execute(
                    "UPDATE docfs_stores SET pruned_below_xid = GREATEST(pruned_below_xid, ($2::bigint)::text::xid8) WHERE id = $1",
                    [.integer(queries.storeID), .integer(below)])
                try db.execute("DELETE FROM docfs_changes WHERE store = $1 AND xid < ($2::bigint)::text::xid8", [.integer(queries.storeID), .integer(below)])
            }
            try db.execute("DELETE FROM docfs_commits WHERE committed_at < now() - interval '1 day'")
        }
    }

    /// Hands the changes to the mount on a queue of their own, in order: the caller may hold a
    /// lock the mount's handling takes (an open fetching content catches up on the way).
    private func deliver(_ changes: [StoreChange]) {
        guard !changes.isEmpty, let handler = changeHandler.withLock({ $0 }) else { return }
        deliveries.async { handler(changes) }
    }

    /// Makes the mirrored folder at `path` match the database's folder `folder` in `tree`; `complete`:
    /// the tree holds every item below it (a whole-store or subtree query), so folders are compared
    /// all the way down.
    private func apply(
        _ tree: ItemTree, folder: Int64, path: String, complete: Bool, subtree: (Int64) throws -> ItemTree, _ changes: inout [StoreChange]
    ) throws {
        guard let folderItem = tree.items[folder] else { return }
        var names = Set<FileName>()
        var changed = false
        for child in tree.childItems(of: folder) {
            guard let name = acceptedName(of: child, at: path) else { continue }
            let childPath = StorePath.join(path, name)
            names.insert(name)
            var known = state.withLock { $0[childPath] }
            if known == nil, let moved = movedHere(child, to: childPath, &changes) {
                known = moved
                changed = true
            }
            var descend = complete && child.isDirectory
            if known?.id != child.id {
                if known != nil || (try? mirror.status(of: childPath)) != nil { try removeLocal(childPath) }
                try fetch(child, at: childPath, record: childPath, tree, complete: complete, subtree: subtree)
                descend = false
            } else if known?.contentVersion != child.contentVersion {
                if child.isDirectory {
                    // A package replaced whole: built beside the old one and swapped in at once.
                    let prepared = DirectoryStore.privateAreaName + "/tmp/synchronize-\(child.id)-\(child.contentVersion)"
                    mirror.removePrivateItem(prepared)
                    // The content the mirror holds of files the new version keeps (the same row,
                    // the same content, moved or not), by row: linked in, not fetched again.
                    let held = state.withLock { state in
                        let files = state.items(below: childPath).filter { !$0.item.isFolder && $0.item.isFetched }
                        state.removeSubtree(childPath)
                        return Dictionary(files.map { ($0.item.id, $0) }, uniquingKeysWith: { first, _ in first })
                    }
                    let packageTree = complete ? tree : try subtree(child.id)
                    do {
                        try fetch(child, at: prepared, record: childPath, packageTree, complete: true, subtree: subtree, linking: held)
                        try mirror.replaceDirectory(at: childPath, with: prepared)
                    } catch {
                        mirror.removePrivateItem(prepared)
                        // What `fetch` recorded is the new version's, and the mirror still holds
                        // the old one: known as nothing, it is all compared and fetched again.
                        state.withLock { state in
                            state.removeSubtree(childPath)
                            state.needsFullSynchronization = true
                        }
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
                if descend { try apply(tree, folder: child.id, path: childPath, complete: true, subtree: subtree, &changes) }
                continue
            }
            changed = true
            changes.append(.entry(folder: path, name: name))
            if descend { try apply(tree, folder: child.id, path: childPath, complete: true, subtree: subtree, &changes) }
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

    /// The row `item`, which the mirror holds at another path (another mount renamed it, or a folder
    /// holding it), moved to `path` in the mirror, as it is known there: a file's content, fetched or
    /// not, and all that is below a folder stay, and keep their numbers on this machine, so what is
    /// open on them follows them. (Before, the item was removed and made anew as placeholders: every
    /// file of a folder another mount renamed was downloaded again at its next open.) Nil, changing
    /// nothing, where the mirror does not hold the row elsewhere or something is at `path`; the item
    /// is then fetched as a new one. The change is reported at both names.
    private func movedHere(_ item: StoredItem, to path: String, _ changes: inout [StoreChange]) -> KnownItem? {
        guard let from = state.withLock({ $0.path(of: item.id) }),
              !FileSystemPath.same(from, path), !StorePath.isWithin(path, from), (try? mirror.status(of: path)) == nil,
              let (oldFolder, oldName) = StorePath.split(from), let (newFolder, newName) = StorePath.split(path),
              (try? mirror.rename(from, to: path, flags: Self.renameNoReplace)) != nil
        else { return nil }
        state.withLock { $0.moveSubtree(from: from, to: path) }
        changes.append(.entry(folder: newFolder, name: newName))
        changes.append(.entry(folder: oldFolder, name: oldName))
        return state.withLock { $0[path] }
    }

    private static let renameNoReplace: UInt32 = 1

    /// Creates the item (a folder with everything in it) in the mirror at `at`, known as `record`.
    /// A file of `linking` (the mirror's files whose content it holds, by row) at the same content
    /// version is linked from there; any other file is a placeholder until it is opened.
    private func fetch(
        _ item: StoredItem, at path: String, record: String, _ tree: ItemTree, complete: Bool, subtree: (Int64) throws -> ItemTree,
        linking held: [Int64: (path: String, item: KnownItem)] = [:]
    ) throws {
        let owner = Ownership(userID: item.userID, groupID: item.groupID)
        var known = KnownItem(item)
        if item.isDirectory {
            try mirror.makeDirectory(path, mode: mode_t(item.mode & 0o7777), owner: owner)
            state.withLock { $0.set(record, known) }
            let folderTree = complete ? tree : try subtree(item.id)
            for child in folderTree.childItems(of: item.id) {
                guard let name = acceptedName(of: child, at: record) else { continue }
                try fetch(
                    child, at: StorePath.join(path, name), record: StorePath.join(record, name), folderTree, complete: true, subtree: subtree,
                    linking: held)
            }
        } else if item.isRegular {
            if let file = held[item.id], file.item.contentVersion == item.contentVersion, (try? mirror.makeHardLink(path, to: file.path)) != nil {
                known.isFetched = true
                known.lastUse = file.item.lastUse
            } else {
                try placePlaceholder(at: path, size: item.size)
            }
        } else if item.isSymbolicLink {
            try mirror.makeSymbolicLink(path, target: item.target ?? "", owner: owner)
        } else {
            try mirror.makeSpecialFile(path, mode: mode_t(item.mode), device: dev_t(item.device), owner: owner)
        }
        try applyAttributes(item, at: path)
        state.withLock { $0.set(record, known) }
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
        // By bytes: the NFC and NFD spellings of one attribute name are two attributes.
        let wanted = Set(item.extendedAttributes.map { PathKey($0.name) })
        for name in (try? mirror.extendedAttributeNames(path)) ?? [] where !wanted.contains(PathKey(name)) {
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

/// What a read of the change log found (see `PostgresStore.catchUp`).
struct ChangesRead {
    /// Where the next read goes on from.
    var cursor: ChangeCursor
    /// The folders other mounts changed, each read with its children.
    var folders: [(Int64, ItemTree)]
    /// The subtrees of the folders among them that are new here or were replaced whole.
    var subtrees: [Int64: ItemTree]
    /// How many of the rows said histories moved (`StoreQueries.recordHistoryMove`).
    var historyMoves: Int64
}
