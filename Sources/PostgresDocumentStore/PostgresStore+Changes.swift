import DocumentModel
import DocumentStore
import Foundation
import Glibc
import SystemSupport

/// Local changes: each one transaction, recorded in the change log for the other mounts.
extension PostgresStore {
    // MARK: Commits of content

    public func install(_ staging: StagingFile, at path: String, durable: Bool) throws -> FileStatus {
        if Self.isPrivate(path) { return try mirror.install(staging, at: path, durable: false) }
        let (parentPath, name) = try split(path)
        let status = try staging.status()
        let base = state.withLock { state in state.bases[PathKey(staging.path)].map { $0.base } ?? state[path] }
        var installed: FileStatus?
        let wishes = takeVersionWishes(touching: [path])
        // An empty file has no version to keep (a new document's first save): not asked for,
        // three round trips less. A base that is no longer empty fails the change's check below.
        let replacesEmptyFile = base.map { !$0.isFolder && $0.size == 0 } ?? false
        let wished = replacesEmptyFile ? wishes.filter { !FileSystemPath.same($0.path, path) } : wishes
        // The file's own version, when that is all there is to keep, goes with the COMMIT too. Its
        // failure fails the whole change (a savepoint would cost two round trips of its own): the
        // change is then made again the longer way, which goes on without the version.
        let ownVersion = wished.count == 1 && FileSystemPath.same(wished[0].path, path) ? wished[0] : nil
        var versionAlong = ownVersion != nil
        // Who saves, written in this transaction: the file's saver with its content, its package's
        // in its row. The saves' records (`recordSave`, after the commit) then find them written,
        // where each took a transaction of its own.
        let savers = savers(installing: path)
        let saver = savers.first { FileSystemPath.same($0.path, path) }?.record
        let packageSavers = savers.filter { !FileSystemPath.same($0.path, path) }.compactMap { save in save.row.map { (save.path, $0, save.record) } }
        let attempt = { () throws -> Void in
            let along = AnsweredVersion()
            _ = try self.change(path, { db -> (AnsweredItem, [KeptVersion], chunks: [UInt8]) in
                let parent = try self.knownItem(parentPath, operation: "install")
                let answered = AnsweredItem()
                if let base, !base.isFolder, wished.isEmpty || versionAlong {
                    // One round trip: the version copies the row as it is then, and the change,
                    // which locks the row, finds it still `base`'s or fails the whole transaction.
                    // The version goes first after BEGIN: unanswered, the failure is its own.
                    if let ownVersion {
                        self.queries.keepVersionLater(db, of: base.id, document: ownVersion.path, now: StoredItem.nanoseconds(self.currentTimes()), into: along)
                    }
                    let chunks = try self.queries.upload(db, descriptor: staging.descriptor, size: status.size, path: staging.path)
                    self.queries.updateContentLater(db, base: base, parent: parent.id, name: name, status: status, chunks: chunks, saver: saver, into: answered)
                    for (_, row, record) in packageSavers { self.queries.recordSaveLater(db, of: row.id, contentVersion: row.contentVersion, record) }
                    self.queries.recordChange(db, folders: [parent.id])
                    return (answered, [], chunks)
                }
                let locked = try self.queries.lockedItem(db, parent: parent.id, name: name, reservingVersion: true)
                let stored = locked?.item
                try self.checkConflict(path, stored: stored, base: base)
                let kept = try self.keepWishedVersions(db, stored.map { !$0.isFolder && $0.size == 0 } == true ? wishes.filter { !FileSystemPath.same($0.path, path) } : wishes)
                let chunks = try self.queries.upload(db, descriptor: staging.descriptor, size: status.size, path: staging.path)
                if let stored, let updated = try self.queries.updateContent(db, id: stored.id, status: status, chunks: chunks, saver: saver, version: locked?.nextVersion) {
                    answered.known = updated
                } else {
                    var new = status
                    new.mode = UInt32(S_IFREG) | status.permissions
                    answered.known = try self.queries.insert(db, parent: parent.id, name: name, status: new, chunks: chunks)
                    if self.holdsHistory(at: path) { self.queries.adoptHistoryLater(db, parent: parent.id, name: name, at: FileSystemPath.bytes(of: path)) }
                }
                for (_, row, record) in packageSavers { self.queries.recordSaveLater(db, of: row.id, contentVersion: row.contentVersion, record) }
                self.queries.recordChange(db, folders: [parent.id])
                return (answered, kept, chunks)
            }, refused: { cause in
                if StoreQueries.isStaleBase(cause) { return self.conflict(path, "was changed by another mount since this write began") }
                return versionAlong && !along.answered ? VersionAlongRefused(cause: cause) : nil
            }, then: { answered, kept, chunks in
                // Only the fast path's answer can be lost (a COMMIT found committed afterwards);
                // a version whose answer was lost with it is fetched by the change feed.
                let item = try answered.known ?? base.map { try self.savedItemReadAgain(path, base: $0, chunks: chunks, size: status.size) }
                let keptAlong = ownVersion.flatMap { wish in along.version.map { KeptVersion(wish: wish, version: $0) } }
                self.keepLocally(kept + (keptAlong.map { [$0] } ?? []))
                installed = try self.mirror.install(staging, at: path, durable: false)
                self.forgetBase(staging.path)
                if let item { self.state.withLock { $0.set(path, item) } }
                self.saversRecordedAlong.withLock { along in
                    if let user = saver?.userID, let item { along[PathKey(path)] = (user, item.contentVersion) }
                    for (package, row, record) in packageSavers {
                        if let user = record.userID { along[PathKey(package)] = (user, row.contentVersion) }
                    }
                }
            })
        }
        do {
            try attempt()
        } catch let refusal as VersionAlongRefused {
            logger.notice("\(path): the version sent with the save was refused (\(refusal.cause)); the save is made again with the version apart")
            versionAlong = false
            try attempt()
        }
        evictIfNeeded()
        return try installed ?? mirror.status(of: path)
    }

    /// A save whose version went with its COMMIT was refused for another reason than a conflict
    /// (see `install`): it is made again with the version kept apart, which the change survives.
    private struct VersionAlongRefused: Error {
        let cause: PostgresError
    }

    /// The row a save committed when the answer to its COMMIT was lost, read again: while the
    /// server was resolved, another mount may have saved the file in turn. Trusted only while it
    /// holds the content this save uploaded; otherwise the mount knows no version of it (its next
    /// save there is a conflict, never an overwrite) and compares the mirror whole with the database.
    private func savedItemReadAgain(_ path: String, base: KnownItem, chunks: [UInt8], size: Int64) throws -> KnownItem {
        let row = try database(path) { db in try queries.contentRow(db, id: base.id) }
        if let row, row.chunks == chunks {
            return KnownItem(id: base.id, version: row.version, contentVersion: row.contentVersion, size: size, contentKey: ContentKey(chunks: chunks))
        }
        state.withLock { $0.needsFullSynchronization = true }
        return KnownItem(id: base.id, version: 0, contentVersion: 0, size: size, contentKey: ContentKey(chunks: chunks))
    }

    public func persist(_ wrapper: FileWrapper, at path: String, durable: Bool, publishing publish: Publication) throws -> FileStatus {
        if Self.isPrivate(path) { return try mirror.persist(wrapper, at: path, durable: false, publishing: publish) }
        let base = state.withLock { state in state.base(forDocument: path) ?? state[path] }
        let prepared = DirectoryStore.privateAreaName + "/tmp/persist-\(UInt64.random(in: 0...UInt64.max))"
        // The wrapper's unchanged files are linked or copied from the mirror: no eviction meanwhile.
        try applying.reading {
            _ = try mirror.persist(wrapper, at: prepared, durable: false)
            // A folder's rows can be kept (see `rowsToKeep`); a file has none below it.
            if wrapper.isDirectory {
                let linked = linkedItems(from: path, into: prepared)
                state.withLock { $0.linkedItems[PathKey(prepared)] = linked }
            }
        }
        do {
            // A file keeps the permissions, owner and extended attributes of the one it replaces.
            if let current = try? mirror.status(of: path), current.kind == .regular, wrapper.isRegularFile {
                // The owner first: a chown clears set-user-ID and set-group-ID.
                if canChangeOwner { try? mirror.setOwner(prepared, Ownership(userID: current.userID, groupID: current.groupID)) }
                try mirror.setPermissions(prepared, mode_t(current.permissions))
                for name in (try? mirror.extendedAttributeNames(path)) ?? [] {
                    guard let value = try? mirror.extendedAttribute(path, name: name) else { continue }
                    try value.withUnsafeBytes { try mirror.setExtendedAttribute(prepared, name: name, value: $0, flags: 0) }
                }
            }
            try replace(path, with: prepared, base: base, publishing: publish)
        } catch {
            forgetBase(prepared)
            mirror.removePrivateItem(prepared)
            throw error
        }
        evictIfNeeded()
        return try mirror.status(of: path)
    }

    public func replaceDirectory(at path: String, with prepared: String, publishing publish: Publication) throws {
        if Self.isPrivate(path) { return try mirror.replaceDirectory(at: path, with: prepared, publishing: publish) }
        let base = state.withLock { state in state.bases[PathKey(prepared)].map { $0.base } ?? state[path] }
        try replace(path, with: prepared, base: base, publishing: publish)
        evictIfNeeded()
    }

    /// Puts the prepared private item (a file or a folder tree) in the place of `path`: in the
    /// database in one transaction, then in the mirror in one rename or exchange, published
    /// (`publish`) as one step. What the step leaves at `prepared` (the item replaced, or the new
    /// one when the mirror could not follow) is removed after it, outside what lookups wait for.
    private func replace(_ path: String, with prepared: String, base: KnownItem?, publishing publish: Publication) throws {
        let (parentPath, name) = try split(path)
        let wishes = takeVersionWishes(touching: [path])
        // The rows `prepared` keeps: the files and folders it took over keep theirs, and a write
        // open on a file stays based on it wherever it goes.
        let keptRows = rowsToKeep(below: path, preparedAt: prepared)
        var committed: (published: [(String, KnownItem)], kept: [KeptVersion]) = ([], [])
        try publishingAfterCommit(path, folders: [parentPath], publish, {
            committed = try change(path, { db -> ([(String, KnownItem)], [KeptVersion]) in
                let parent = try knownItem(parentPath, operation: "replace")
                let stored = try queries.lockedItem(db, parent: parent.id, name: name)
                try checkConflict(path, stored: stored, base: base)
                let kept = try keepWishedVersions(db, wishes)
                let status = try mirror.status(of: prepared)
                var published: [(String, KnownItem)]
                if status.kind == .directory {
                    let root: KnownItem
                    var keeping = KeptRows()
                    if let stored, stored.isFolder, let replaced = try queries.replaceFolder(db, id: stored.id, status: status) {
                        root = replaced
                        keeping = keptRows
                        try keeping.clearWay(db, queries, root: root.id)
                    } else {
                        if let stored { try removeRowKeepingHistory(db, stored.id, at: path) }
                        root = try queries.insert(db, parent: parent.id, name: name, status: status)
                        queries.adoptHistoryLater(db, parent: parent.id, name: name, at: FileSystemPath.bytes(of: path))
                    }
                    publishExtendedAttributes(db, of: prepared, id: root.id)
                    published = [(path, root)]
                    published += try publishChildren(db, of: prepared, parentID: root.id, as: path, keeping: keeping)
                } else {
                    let chunks = try queries.upload(db, descriptor: try mirror.openForReading(prepared), size: status.size, path: prepared)
                    let item: KnownItem
                    if let stored, !stored.isFolder, let updated = try queries.updateContent(db, id: stored.id, status: status, chunks: chunks) {
                        // The same row, so the document keeps its number in every mount.
                        item = updated
                    } else {
                        if let stored { try removeRowKeepingHistory(db, stored.id, at: path) }
                        item = try queries.insert(db, parent: parent.id, name: name, status: status, chunks: chunks)
                        queries.adoptHistoryLater(db, parent: parent.id, name: name, at: FileSystemPath.bytes(of: path))
                    }
                    publishExtendedAttributes(db, of: prepared, id: item.id)
                    published = [(path, item)]
                }
                queries.recordChange(db, folders: [parent.id])
                return (published, kept)
            }, refused: { cause in
                StoreQueries.isStaleBase(cause) ? self.conflict(path, "holds a file another mount changed, moved or removed since this change began") : nil
            })
            // From the mirror as it still is; other mounts' changes there wait (`foldersPublishing`).
            keepLocally(committed.kept)
        }, apply: {
            _ = try mirror.swapIn(prepared, at: path)
            state.withLock { state in
                let carriedRows = Dictionary(keptRows.items.map { ($0.value.item.id, $0.key.path) }, uniquingKeysWith: { first, _ in first })
                state.removeSubtree(path)
                for (itemPath, item) in committed.published { state.set(itemPath, item) }
                // A write begun on a file the change only carried is a write to the same document:
                // its base is the file's row where it now is, not a change by another mount.
                for (key, entry) in state.bases {
                    guard let id = entry.base?.id, let moved = carriedRows[id], let item = state[moved] else { continue }
                    state.bases[key] = (moved, item)
                }
            }
        })
        forgetBase(prepared)
        mirror.removeReplacedItem(prepared)
    }

    /// Deletes the row `id` at `path` for another to take its place there (a file replaced by a
    /// folder, or the other way round): the history stays at the path for the new row to adopt.
    private func removeRowKeepingHistory(_ db: PostgresConnection, _ id: Int64, at path: String) throws {
        queries.leaveHistoryLater(db, of: id, at: FileSystemPath.bytes(of: path))
        try db.execute("DELETE FROM docfs_items WHERE id = $1", [.integer(id)])
    }

    /// Inserts the items under the private folder `source` as children of `parentID`, but for the
    /// rows `keeping` keeps, each moved where it now is: a file the change carried keeps its
    /// content and attributes, a folder gets the new attributes.
    private func publishChildren(
        _ db: PostgresConnection, of source: String, parentID: Int64, as path: String, keeping kept: KeptRows
    ) throws -> [(String, KnownItem)] {
        var published: [(String, KnownItem)] = []
        for entry in try mirror.list(source) {
            let child = source + "/" + entry.name.string
            let itemPath = StorePath.join(path, entry.name)
            let status = try mirror.status(of: child)
            let keeping = kept.items[PathKey(itemPath)].flatMap { $0.item.isFolder == (status.kind == .directory) ? $0.item : nil }
            if status.kind == .regular, let file = keeping {
                queries.moveKeptItemLater(db, item: file, to: (parentID, entry.name.bytes))
                published.append((itemPath, file))
                continue
            }
            var item: KnownItem
            switch status.kind {
            case .regular:
                let chunks = try queries.upload(db, descriptor: try mirror.openForReading(child), size: status.size, path: child)
                item = try queries.insert(db, parent: parentID, name: entry.name, status: status, chunks: chunks)
            case .symbolicLink:
                item = try queries.insert(db, parent: parentID, name: entry.name, status: status, target: try mirror.symbolicLinkTarget(child))
            case .directory:
                if let folder = keeping {
                    guard let version = try queries.moveFolder(db, id: folder.id, to: (parentID, entry.name.bytes), status: status) else {
                        throw conflict(itemPath, "was removed by another mount since this change began")
                    }
                    item = folder
                    item.version = version
                    db.executeLater("DELETE FROM docfs_xattrs WHERE item = $1", [.integer(folder.id)], prepared: true)
                } else {
                    item = try queries.insert(db, parent: parentID, name: entry.name, status: status)
                }
            case .other:
                item = try queries.insert(db, parent: parentID, name: entry.name, status: status)
            }
            publishExtendedAttributes(db, of: child, id: item.id)
            published.append((itemPath, item))
            if status.kind == .directory { published += try publishChildren(db, of: child, parentID: item.id, as: itemPath, keeping: kept) }
        }
        return published
    }

    private func publishExtendedAttributes(_ db: PostgresConnection, of path: String, id: Int64) {
        for name in (try? mirror.extendedAttributeNames(path)) ?? [] {
            guard let value = try? mirror.extendedAttribute(path, name: name) else { continue }
            queries.setExtendedAttribute(db, id: id, name: name, value: value)
        }
    }

    /// The conflict rule: a save replaces the stored content only if that content is the version
    /// the write began from (same row, same content version), or, for a new document, if the name
    /// is still free. Attribute changes (chmod, times, xattrs) are not content: they never conflict.
    func checkConflict(_ path: String, stored: KnownItem?, base: KnownItem?) throws {
        switch (stored, base) {
        case (nil, nil):
            return
        case (nil, .some):
            throw conflict(path, "was removed or renamed by another mount since this write began")
        case (.some(let stored), nil):
            throw conflict(path, "was created by another mount (content version \(stored.contentVersion)) since this write began")
        case (.some(let stored), .some(let base)):
            if stored.id != base.id {
                throw conflict(path, "was replaced by another mount since this write began")
            }
            if stored.contentVersion != base.contentVersion {
                throw conflict(path, "was saved by another mount since this write began (stored content version \(stored.contentVersion), this save is based on \(base.contentVersion))")
            }
        }
    }

    private func conflict(_ path: String, _ detail: String) -> StoreRefusal {
        let refusal = StoreRefusal(reason: PostgresStoreError.conflict(path: path, detail: detail).description)
        logger.error("\(refusal.reason)")
        return refusal
    }

    public func truncate(_ path: String, size: Int64) throws {
        // Truncated to nothing (a shell's `> file`): the content it discards is not fetched.
        let current = size == 0 ? nil : try openForReading(path)
        let staging = try makeStagingFile(seededFrom: current, for: path)
        do {
            try retryingOnInterrupt("ftruncate", path: path) { ftruncate(staging.descriptor.rawValue, off_t(size)) }
            _ = try install(staging, at: path, durable: false)
        } catch {
            discard(staging)
            throw error
        }
    }

    // MARK: New items

    @discardableResult
    public func createEmptyFile(_ path: String, mode: mode_t, owner: Ownership?) throws -> OwnedDescriptor {
        if Self.isPrivate(path) { return try mirror.createEmptyFile(path, mode: mode, owner: owner) }
        return try createItem(path, operation: "create") { try mirror.createEmptyFile(path, mode: mode, owner: owner) }
    }

    public func inheritsDefaultACL(_ path: String) -> Bool { mirror.inheritsDefaultACL(path) }

    public func makeSpecialFile(_ path: String, mode: mode_t, device: dev_t, owner: Ownership?) throws {
        if Self.isPrivate(path) { return try mirror.makeSpecialFile(path, mode: mode, device: device, owner: owner) }
        try createItem(path, operation: "mknod") { try mirror.makeSpecialFile(path, mode: mode, device: device, owner: owner) }
    }

    public func makeDirectory(_ path: String, mode: mode_t, owner: Ownership?) throws {
        if Self.isPrivate(path) { return try mirror.makeDirectory(path, mode: mode, owner: owner) }
        try createItem(path, operation: "mkdir") { try mirror.makeDirectory(path, mode: mode, owner: owner) }
    }

    public func makeSymbolicLink(_ path: String, target: String, owner: Ownership?) throws {
        if Self.isPrivate(path) { return try mirror.makeSymbolicLink(path, target: target, owner: owner) }
        try createItem(path, operation: "symlink", target: target) { try mirror.makeSymbolicLink(path, target: target, owner: owner) }
    }

    /// Items are rows named by parent and name; a second name for one row is not modelled.
    public func makeHardLink(_ path: String, to existing: String) throws {
        if Self.isPrivate(path) && Self.isPrivate(existing) { return try mirror.makeHardLink(path, to: existing) }
        throw SystemCallError(errno: EPERM, operation: "link (a PostgreSQL store has no hard links)", path: path)
    }

    /// Makes the item in the mirror (which decides EEXIST and the rest) and inserts its row with the
    /// attributes the mirror gave it; a row the mirror did not know of (made by another mount a
    /// moment ago) turns the create into EEXIST.
    @discardableResult
    private func createItem<T>(_ path: String, operation: String, target: String? = nil, _ make: () throws -> T) throws -> T {
        do {
            return try insertItem(path, operation: operation, target: target, make)
        } catch let error as SystemCallError where error.errno == EEXIST {
            // Made by another mount a moment ago: the mirror learns of it now, so that a create
            // without O_EXCL opens what is there (as on one disk) instead of finding nothing.
            _ = try? catchUp()
            throw error
        }
    }

    /// The create's statements go with its COMMIT, in one round trip: a name another mount took
    /// meanwhile is a unique violation there, answered EEXIST.
    private func insertItem<T>(_ path: String, operation: String, target: String?, _ make: () throws -> T) throws -> T {
        let (parentPath, name) = try split(path)
        return try change(path, { db -> (T, AnsweredItem, parent: Int64) in
            let parent = try knownItem(parentPath, operation: operation)
            let made = try make()
            let inserted = AnsweredItem()
            do {
                queries.insertLater(db, parent: parent.id, name: name, status: try mirror.status(of: path), target: target, into: inserted)
                if holdsHistory(at: path) { queries.adoptHistoryLater(db, parent: parent.id, name: name, at: FileSystemPath.bytes(of: path)) }
            } catch {
                if let full = mirror.localPath(of: path) { try? FileIO.removeItem(full) }
                throw error
            }
            queries.recordChange(db, folders: [parent.id])
            return (made, inserted, parent.id)
        }, undo: { _ in
            if let full = mirror.localPath(of: path) { try? FileIO.removeItem(full) }
        }, refused: { cause in
            cause.isUniqueViolation ? SystemCallError(errno: EEXIST, operation: operation, path: path) : nil
        }, then: { made in
            if let item = made.1.known {
                state.withLock { $0.set(path, item) }
                return
            }
            // A COMMIT found committed after its answer was lost brought no row back. The row at
            // the name now may be another mount's (ours removed and the name taken meanwhile):
            // taken as it is, and the mirror compared whole with the database.
            state.withLock { $0.needsFullSynchronization = true }
            if let item = try database(path, { db in try queries.lockedItem(db, parent: made.parent, name: name) }) {
                state.withLock { $0.set(path, item) }
            }
        }).0
    }

    // MARK: Removing and renaming

    public func removeFile(_ path: String, publishing publish: Publication) throws {
        try remove(path, directory: false, retiring: nil, publishing: publish)
    }

    public func removeDirectory(_ path: String, publishing publish: Publication) throws {
        try remove(path, directory: true, retiring: nil, publishing: publish)
    }

    /// With `retiring`, the versions move among the removed documents' and who could read them is
    /// recorded (`StoreQueries.recordRemoval`) in the removal's transaction, for every mount; then
    /// this mirror's archive follows.
    public func remove(_ path: String, directory: Bool, retiring: RemovedDocument?, publishing publish: Publication) throws {
        if Self.isPrivate(path) {
            return try directory ? mirror.removeDirectory(path, publishing: publish) : mirror.removeFile(path, publishing: publish)
        }
        let (parentPath, name) = try split(path)
        let wishes = takeVersionWishes(touching: [path])
        var kept: [Int64] = []
        defer { settle(kept) }
        let removedPath = VersionArchive.removedPath(of: path, owner: retiring?.status.userID ?? 0)
        var historyMoved = false
        let record = AnsweredReaders()
        if retiring != nil { beginHistoryMove() }
        defer { if retiring != nil { endHistoryMove() } }
        try publishingAfterCommit(path, folders: [parentPath], publish, {
            let parent = try knownItem(parentPath, operation: "remove")
            // The mirror's answers (rename(2)'s and rmdir(2)'s), given before the database changes:
            // the mirror follows only once the change is committed.
            let local = try mirror.status(of: path)
            if directory && local.kind != .directory { throw SystemCallError(errno: ENOTDIR, operation: "rmdir", path: path) }
            if !directory && local.kind == .directory { throw SystemCallError(errno: EISDIR, operation: "unlink", path: path) }
            try change(path, { db in
                // Each attempt starts afresh: one refused after its answers arrived left them.
                historyMoved = false
                record.readers = nil
                guard let item = state.withLock({ $0[path] }) else { return }
                // Kept in the mirror now, before the store-wide change counter is locked.
                kept += try keepInTransaction(db, wishes)
                queries.lockItemLater(db, id: item.id, at: (parent.id, name.bytes))
                // Before the row goes: deleting it would leave its history where it was kept. Who
                // could read it is recorded only for a history that goes among the removed: an
                // empty package made and removed again at the path narrows nobody's record.
                if retiring == nil {
                    queries.leaveHistoryLater(db, of: item.id, at: FileSystemPath.bytes(of: path))
                } else if let retiring,
                          try queries.retireHistory(db, of: item.id, at: FileSystemPath.bytes(of: path), to: FileSystemPath.bytes(of: removedPath)) > 0 {
                    historyMoved = true
                    let readers = VersionArchive.readers(of: retiring)
                    queries.recordRemovalLater(db, folder: false, path: FileSystemPath.bytes(of: removedPath), readers: readers, into: record)
                    queries.notifyVersionsChanged(db)
                }
                if directory {
                    let removed = try db.execute(
                        """
                        DELETE FROM docfs_items WHERE id = $1 AND parent = $2 AND name = $3
                        AND NOT EXISTS (SELECT 1 FROM docfs_items c WHERE c.parent = $1) RETURNING id
                        """,
                        [.integer(item.id), .integer(parent.id), .bytes(name.bytes)], prepared: true)
                    if removed.count == 0 {
                        // A folder that is not empty in the database (another mount's file in it)
                        // stays; one that is not there any more was moved or removed by another mount.
                        if try queries.hasChildren(db, item.id) { throw SystemCallError(errno: ENOTEMPTY, operation: "rmdir", path: path) }
                        throw SystemCallError(errno: ENOENT, operation: "rmdir (moved or removed by another mount)", path: path)
                    }
                } else {
                    queries.removeFileLater(db, id: item.id, from: (parent.id, name.bytes))
                }
                queries.recordChange(db, folders: [parent.id])
            }, refused: { cause in
                // The file is not where this mount knows it: another mount moved or removed it.
                // Its history, and a new document's at the name, stay where they are.
                StoreQueries.isStaleBase(cause) ? SystemCallError(errno: ENOENT, operation: "unlink (moved or removed by another mount)", path: path) : nil
            })
        }, apply: {
            if directory { try mirror.removeDirectory(path) } else { try mirror.removeFile(path) }
            state.withLock { $0.removeSubtree(path) }
        })
        guard historyMoved else { return }
        followHistoryMove(from: path, to: removedPath, exchanging: false) { archive in
            archive.setReadersOfRemovedDocument(removedPath, record.readers ?? .rootAlone, makingFolder: true)
        }
    }

    public func rename(_ source: String, to destination: String, flags: UInt32, publishing publish: Publication) throws {
        try rename(source, to: destination, flags: flags, carryingVersions: false, publishing: publish)
    }

    /// With `carryingVersions`, the versions move in the rename's transaction (in the database also
    /// through a mount that keeps no versions: they are every mount's), then in this mirror's
    /// archive; other mounts move theirs at their next comparison.
    public func rename(_ source: String, to destination: String, flags: UInt32, carryingVersions: Bool, publishing publish: Publication) throws {
        switch (Self.isPrivate(source), Self.isPrivate(destination)) {
        case (true, true): return try mirror.rename(source, to: destination, flags: flags, publishing: publish)
        case (false, false): break
        default: throw SystemCallError(errno: EXDEV, operation: "rename", path: source)
        }
        let exchange = flags & 2 != 0
        let (sourceParentPath, sourceName) = try split(source)
        let (destinationParentPath, destinationName) = try split(destination)
        let wishes = takeVersionWishes(touching: [source, destination])
        var kept: [Int64] = []
        defer { settle(kept) }
        // The database moves no history a rename carries (each names its document's row); this
        // mirror's archive, which shows them by path, follows where it holds any. Where the rename
        // may hand a history to another row (one at either name), the archive's idea of which row
        // holds it is stale from the commit until it reads the rows again: nothing follows rows
        // meanwhile (`beginHistoryMove`), and the end asks for that reading.
        let historyAtSource = holdsHistory(at: source), historyAtDestination = holdsHistory(at: destination)
        let followsLocally = carryingVersions && (historyAtSource || exchange && historyAtDestination)
        let handsOn = historyAtSource || historyAtDestination
        if handsOn { beginHistoryMove() }
        defer { if handsOn { endHistoryMove() } }
        try publishingAfterCommit(source, folders: [sourceParentPath, destinationParentPath], publish, {
            try checkRename(source, to: destination, exchange: exchange)
            try change(source, { db in
                let item = try knownItem(source, operation: "rename")
                let sourceParent = try knownItem(sourceParentPath, operation: "rename")
                let destinationParent = try knownItem(destinationParentPath, operation: "rename")
                let replaced = try queries.lockedItem(db, parent: destinationParent.id, name: destinationName)
                // Kept in the mirror now, before the store-wide change counter is locked.
                kept += try keepInTransaction(db, wishes)
                let atSource = (sourceParent.id, sourceName.bytes), atDestination = (destinationParent.id, destinationName.bytes)
                func move(_ id: Int64, from: (Int64, [UInt8]), to: (Int64, [UInt8])) {
                    queries.moveLater(db, id: id, from: from, to: to)
                }
                // Before the replaced row goes: deleting it would leave its history where it was kept.
                if !FileSystemPath.same(source, destination) {
                    queries.lockItemLater(db, id: item.id, at: atSource)
                    queries.followRename(
                        db, moved: item.id, replaced: replaced?.id, from: FileSystemPath.bytes(of: source), to: FileSystemPath.bytes(of: destination),
                        exchanging: exchange, carrying: carryingVersions)
                }
                if let replaced, replaced.id != item.id {
                    if exchange {
                        // The unique (parent, name) index allows no moment with two rows at one name.
                        // A name no row can hold otherwise (a NUL byte), for the instant of the swap.
                        let parked = (destinationParent.id, Array("\u{0}docfs-exchange-\(replaced.id)".utf8))
                        move(replaced.id, from: atDestination, to: parked)
                        move(item.id, from: atSource, to: atDestination)
                        move(replaced.id, from: parked, to: atSource)
                    } else {
                        if flags & 1 != 0 { throw SystemCallError(errno: EEXIST, operation: "rename", path: destination) }
                        // Only a folder is asked (a round trip): what a file row holds goes with it.
                        if replaced.isFolder, try queries.hasChildren(db, replaced.id) {
                            throw SystemCallError(errno: ENOTEMPTY, operation: "rename", path: destination)
                        }
                        db.executeLater("DELETE FROM docfs_items WHERE id = $1", [.integer(replaced.id)], prepared: true)
                        move(item.id, from: atSource, to: atDestination)
                    }
                } else if replaced == nil {
                    if exchange { throw SystemCallError(errno: ENOENT, operation: "rename", path: destination) }
                    move(item.id, from: atSource, to: atDestination)
                }
                queries.recordChange(db, folders: [sourceParent.id, destinationParent.id])
            }, refused: { cause in
                // Another mount's rename or removal of the source (or, in an exchange, of the
                // other name) committed before this mount heard of it: as on one disk, ENOENT.
                StoreQueries.isStaleBase(cause) ? SystemCallError(errno: ENOENT, operation: "rename (moved or removed by another mount)", path: source) : nil
            })
        }, apply: {
            try mirror.rename(source, to: destination, flags: flags)
            state.withLock { state in
                if exchange {
                    state.exchange(source, destination)
                } else if !FileSystemPath.same(source, destination) {
                    state.removeSubtree(destination)
                    state.moveSubtree(from: source, to: destination)
                }
            }
        })
        if followsLocally { followHistoryMove(from: source, to: destination, exchanging: exchange) }
    }

    /// rename(2)'s answers that the mirror gives and the database does not check (the kinds of the
    /// two items, a folder into itself), given before the database changes.
    private func checkRename(_ source: String, to destination: String, exchange: Bool) throws {
        let moving = try mirror.status(of: source)
        if moving.kind == .directory, StorePath.isWithin(destination, source), !FileSystemPath.same(source, destination) {
            throw SystemCallError(errno: EINVAL, operation: "rename (a folder into itself)", path: source)
        }
        guard !exchange, let replaced = try? mirror.status(of: destination) else { return }
        if moving.kind == .directory && replaced.kind != .directory { throw SystemCallError(errno: ENOTDIR, operation: "rename", path: destination) }
        if moving.kind != .directory && replaced.kind == .directory { throw SystemCallError(errno: EISDIR, operation: "rename", path: destination) }
    }

    /// Runs `commit` (a change's checks and its transaction), then hands `apply` (what the mirror
    /// and this mount's knowledge of it do to follow) to `publish`: the database is waited for, and
    /// then the mirror changes in one step that holds what lookups need, never across a wait. Until
    /// it has, other mounts' changes to `folders` are not applied (they would apply this one too,
    /// out of turn). A mirror that cannot follow (it differs from the database) is compared whole
    /// with it again: the change is committed, and the program told so.
    private func publishingAfterCommit(
        _ path: String, folders: [String], _ publish: Publication, _ commit: () throws -> Void, apply: () throws -> Void
    ) throws {
        let keys = folders.map(PathKey.init)
        state.withLock { state in for key in keys { state.foldersPublishing[key, default: 0] += 1 } }
        defer {
            state.withLock { state in
                for key in keys {
                    let left = (state.foldersPublishing[key] ?? 1) - 1
                    state.foldersPublishing[key] = left > 0 ? left : nil
                }
            }
        }
        try commit()
        try withoutActuallyEscaping(apply) { apply in
            try publish {
                // Counted either way: a comparison read before the commit must not apply.
                defer { state.withLock { $0.localChanges += 1 } }
                do {
                    try applying.reading(apply)
                } catch {
                    state.withLock { $0.needsFullSynchronization = true }
                    logger.error("\(path): committed to the database, but the local mirror could not follow (\(error)); it is compared with the database again")
                }
            }
        }
    }

    // MARK: Attributes

    public func setPermissions(_ path: String, _ mode: mode_t) throws {
        if Self.isPrivate(path) { return try mirror.setPermissions(path, mode) }
        try changeAttributes(path) { try mirror.setPermissions(path, mode) }
    }

    public func setOwner(_ path: String, _ owner: Ownership) throws {
        if Self.isPrivate(path) { return try mirror.setOwner(path, owner) }
        try changeAttributes(path) { try mirror.setOwner(path, owner) }
    }

    public func setTimes(_ path: String, access: timespec, modification: timespec) throws {
        if Self.isPrivate(path) { return try mirror.setTimes(path, access: access, modification: modification) }
        try changeAttributes(path) { try mirror.setTimes(path, access: access, modification: modification) }
    }

    public func setExtendedAttribute(_ path: String, name: String, value: UnsafeRawBufferPointer, flags: Int32) throws {
        if Self.isPrivate(path) { return try mirror.setExtendedAttribute(path, name: name, value: value, flags: flags) }
        let bytes = Array(value)
        try changeAttributes(path) { db, item in
            try bytes.withUnsafeBytes { try mirror.setExtendedAttribute(path, name: name, value: $0, flags: flags) }
            queries.setExtendedAttribute(db, id: item.id, name: name, value: bytes)
        }
    }

    public func removeExtendedAttribute(_ path: String, name: String) throws {
        if Self.isPrivate(path) { return try mirror.removeExtendedAttribute(path, name: name) }
        try changeAttributes(path) { db, item in
            try mirror.removeExtendedAttribute(path, name: name)
            queries.removeExtendedAttribute(db, id: item.id, name: name)
        }
    }

    private func changeAttributes(_ path: String, _ apply: () throws -> Void) throws {
        try changeAttributes(path) { _, _ in try apply() }
    }

    /// Changes an item's attributes in the mirror, then records what the mirror has in its row: the
    /// row's update, its attribute statements and the change record go with the COMMIT.
    private func changeAttributes(_ path: String, _ apply: (PostgresConnection, KnownItem) throws -> Void) throws {
        let parentPath = path.isEmpty ? "" : try split(path).parent
        var mirrorChanged = false
        let version = AnsweredVersionNumber()
        try change(path, retryable: !mirrorChanged, { db -> KnownItem in
            let item = try knownItem(path, operation: "setattr")
            let folder = path.isEmpty ? item.id : try knownItem(parentPath, operation: "setattr").id
            // Begun before the mirror changes: a database that cannot begin it (a standby after
            // a failover) is waited for, as the change can still run again.
            try db.sendHeld()
            mirrorChanged = true
            try apply(db, item)
            queries.updateAttributesLater(db, id: item.id, status: try mirror.status(of: path), into: version)
            queries.recordChange(db, folders: [folder])
            return item
        }, refused: { cause in
            // The row is gone: another mount removed the item, and this mount has not heard yet.
            StoreQueries.isStaleBase(cause) ? SystemCallError(errno: ENOENT, operation: "setattr", path: path) : nil
        }, then: { item in
            // The row's new version; where its answer was lost with the COMMIT's, the one known
            // before. Harmless: versions only grow, so a later comparison finds this one unequal and
            // sets the same attributes again, and conflicts are judged on content versions, which
            // an attribute change leaves alone.
            var changed = item
            changed.version = version.number ?? item.version
            state.withLock { $0.set(path, changed) }
        })
    }
}
