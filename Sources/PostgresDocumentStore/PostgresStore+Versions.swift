import DocumentStore
import Foundation
import Glibc
import SystemSupport

/// Versions on a shared store: the database holds them (`docfs_document_versions`, each with its
/// items in `docfs_version_items`, sharing the chunks of the content it was), so a version kept
/// through one mount is every mount's. Each mount shows them from its mirror's version archive,
/// which it keeps in step with the database:
///
/// - a local save, rename or removal keeps the version it replaces in the same transaction (the
///   items' rows copied, no content uploaded), and links the mirror's file into the archive once
///   committed, as a directory store does;
/// - versions kept elsewhere, or whose content the mirror did not hold, are fetched into the
///   archive by the change feed (`synchronizeVersions`), and versions dropped elsewhere leave it;
/// - each archived version carries its row's id (`rowAttribute`), which ties the two together.
extension PostgresStore {
    public var versions: VersionArchive? { keepsVersions ? mirror.versions : nil }

    /// Notes that the next change at `path` (or inside it, for a package) keeps what is there now:
    /// that change's transaction copies the rows (see `keepWishedVersions`).
    public func keepVersion(of path: String, copying: Bool) throws {
        guard keepsVersions, !path.isEmpty, !Self.isPrivate(path) else { return }
        versionWishes.withLock { $0[PathKey(path)] = copying || $0[PathKey(path)] == true }
    }

    public func keepsWholeVersion(ofPackage path: String) -> Bool { mirror.keepsWholeVersion(ofPackage: path) }

    /// The saves `change` makes are written by the `install` in it, in its transaction (see
    /// `savers(installing:)`).
    public func recordingSaves<T>(of paths: [String], by user: uid_t, _ change: () throws -> T) throws -> T {
        guard keepsVersions else { return try change() }
        savesInProgress.withLock { saves in for path in paths { saves[PathKey(path)] = user } }
        defer { savesInProgress.withLock { saves in for path in paths { saves[PathKey(path)] = nil } } }
        return try change()
    }

    /// The saves an install of `path` writes in its transaction: its own (with the content) and
    /// its package's (a member saved in place), each with the row it goes in, as the mirror knows it.
    func savers(installing path: String) -> [(path: String, row: KnownItem?, record: SaveRecord)] {
        let saves = savesInProgress.withLock { saves in saves.filter { StorePath.isWithin(path, $0.key.path) } }
        return saves.map { saved, user in
            (saved.path, state.withLock { $0[saved.path] }, SaveRecord.now(by: user, unreachable: unreachableBits(of: saved.path)))
        }
    }

    /// Records the saver in the item's row. A save whose install wrote it in its own transaction
    /// (see `recordingSaves`) has nothing left to do. Otherwise (a change that installs nothing:
    /// a package replaced whole, a rename over) it is written off the save's path: a version kept
    /// before it lands names no saver, and one that lands after a newer save changes nothing (see
    /// `recordSave` of `StoreQueries`).
    public func recordSave(of path: String, by user: uid_t) {
        guard keepsVersions, !Self.isPrivate(path) else { return }
        let along = saversRecordedAlong.withLock { $0.removeValue(forKey: PathKey(path)) }
        guard let item = state.withLock({ $0[path] }) else { return }
        if let along, along.user == user, along.contentVersion == item.contentVersion { return }
        // Who the folders keep out, read now: a `chmod` of a folder just after the save must not
        // open the version this save becomes.
        let record = SaveRecord.now(by: user, unreachable: unreachableBits(of: path))
        saveRecords.async { [self] in
            do {
                try pool.withConnection { try queries.recordSave($0, of: item.id, contentVersion: item.contentVersion, record) }
            } catch {
                logger.warning("\(path): who saved it was not recorded (\(error)); its version will name no saver")
            }
        }
    }

    /// Writes `bits` into the row of version `id` where it has no reach yet, off the change's path.
    private func recordReach(of id: Int64, _ bits: mode_t) {
        saveRecords.async { [self] in
            do {
                try pool.withConnection { try queries.recordReach($0, ofVersion: id, bits) }
            } catch {
                logger.warning("version \(id): who its folders kept out was not recorded (\(error)); each mount judges it when it fetches it")
            }
        }
    }

    /// Whether this mount's archive lists a history at `path` or below it: where a new item there
    /// asks to take a history no item holds (`adoptHistoryLater`), and where a rename's history
    /// has versions here to follow.
    func holdsHistory(at path: String) -> Bool { versions?.hasHistory(atOrBelow: path) == true }

    /// From the mirror, which holds the folders' modes and owners.
    public func unreachableBits(of path: String) -> mode_t { mirror.unreachableBits(of: path) }

    /// The attribute naming the row of an archived version.
    static let rowAttribute = geteuid() == 0 ? "trusted.docfs.version-row" : "user.docfs.version-row"

    // MARK: Keeping, in a local change

    public func dropPendingVersions(of paths: [String]) {
        guard keepsVersions else { return }
        versionWishes.withLock { wishes in for path in paths { wishes[PathKey(path)] = nil } }
    }

    /// The wishes (see `keepVersion`) that a change at `paths` fulfils: at one of them, at a
    /// folder above one (a package kept whole), or below one (a member of a large package that
    /// the change replaces with its package). Taken once, before the change's transaction (which
    /// may run again).
    func takeVersionWishes(touching paths: [String]) -> [VersionWish] {
        guard keepsVersions else { return [] }
        let taken = versionWishes.withLock { wishes in
            let taken = wishes.filter { wished, _ in
                paths.contains { StorePath.isWithin($0, wished.path) || StorePath.isWithin(wished.path, $0) }
            }
            for path in taken.keys { wishes[path] = nil }
            return taken.map { VersionWish(path: $0.key.path, copying: $0.value) }
        }
        // The saver of what is kept was recorded by an earlier save: that record lands first.
        if !taken.isEmpty { saveRecords.sync {} }
        return taken
    }

    /// Keeps, in the change's transaction, what each wish's path holds now.
    func keepWishedVersions(_ db: PostgresConnection, _ wishes: [VersionWish]) throws -> [KeptVersion] {
        guard !wishes.isEmpty else { return [] }
        let now = currentTimes()
        var kept: [KeptVersion] = []
        for wish in wishes {
            guard let item = state.withLock({ $0[wish.path] }) else { continue }
            do {
                guard let version = try queries.keepVersion(db, of: item.id, document: wish.path, now: StoredItem.nanoseconds(now)) else { continue }
                kept.append(KeptVersion(wish: wish, version: version))
            } catch let refusal as VersionNotKept {
                logger.warning("\(wish.path): \(refusal); the change goes on")
            }
        }
        return kept
    }

    /// Puts the versions a local change kept into the mirror's archive, before the mirror changes:
    /// linked or copied from the mirror where it holds all their content, and the same content
    /// the database kept (another mount's change not applied here yet would make it differ); the
    /// others are fetched by the change feed.
    func keepLocally(_ kept: [KeptVersion]) {
        guard let archive = mirror.versions else { return }
        for version in kept where state.withLock({ $0.isFetched(under: version.wish.path) && $0.content(under: version.wish.path) == version.version.content }) {
            localVersions.withLock { local in
                local.scanIfNeeded(archive)
                guard local.locations[version.version.id] == nil else { return }
                do {
                    guard let location = try mirror.keepVersion(of: version.wish.path, copying: version.wish.copying, as: version.version.saved) else { return }
                    Self.tag(location, with: version.version.id)
                    local.add(version.version.id, at: location, document: version.wish.path, item: version.version.item)
                    // A row without a reach (its save's record had not landed, or an earlier
                    // DocFS's) gets the one this mount judged, so every mount shows it alike.
                    if !version.version.saved.knowsReach { recordReach(of: version.version.id, archive.unreachableBits(at: location)) }
                } catch {
                    logger.warning("\(version.wish.path): its version was kept in the database but not in the mirror (\(error)); it is fetched instead")
                }
            }
        }
    }

    /// Keeps the wished versions in `db`'s transaction and at once in the mirror's archive, while
    /// the mirror still holds what they were. Marked uncommitted first, they are spared by the
    /// feed's comparison with the database until the caller `settle`s the ids returned, when the
    /// transaction ends.
    func keepInTransaction(_ db: PostgresConnection, _ wishes: [VersionWish]) throws -> [Int64] {
        let kept = try keepWishedVersions(db, wishes)
        let ids = kept.map(\.version.id)
        localVersions.withLock { $0.uncommitted.formUnion(ids) }
        keepLocally(kept)
        return ids
    }

    /// The transaction that kept `ids` ended, committed or not: a comparison that read the
    /// database from now on sees them if they were committed, and one that read it before spares
    /// them (they count as kept after its read). A row that was rolled back leaves at the next.
    func settle(_ ids: [Int64]) {
        guard !ids.isEmpty else { return }
        localVersions.withLock { local in
            local.uncommitted.subtract(ids)
            for id in ids { local.touch(id) }
        }
    }

    private static func tag(_ location: String, with id: Int64) {
        FileSystemPath.withCString(location) { _ = NumberAttribute.write(UInt64(bitPattern: id), at: AttributeTarget($0, in: AT_FDCWD), name: rowAttribute, exclusive: false) }
    }

    static func row(of location: String) -> Int64? {
        FileSystemPath.withCString(location) { NumberAttribute.read(at: AttributeTarget($0, in: AT_FDCWD), name: rowAttribute) }.flatMap { Int64(exactly: $0) }
    }

    // MARK: Keeping the archive in step with the database

    /// How long one synchronization fetches versions before it lets the change feed go on: a new
    /// mount of a store with many versions fetches them over many polls, never holding back other
    /// mounts' changes for longer than this.
    static let versionFetchBudget: Duration = .milliseconds(250)

    /// Brings the mirror's archive to the database's versions: fetches those it lacks (for up to
    /// `versionFetchBudget`; the next call goes on), removes those the database no longer has, and
    /// shows each history where its document is now (`followItems`). Cheap when nothing changed:
    /// one count.
    func synchronizeVersions() throws {
        guard keepsVersions, let archive = mirror.versions else { return }
        var summary = try pool.withConnection { try queries.versionSummary($0) }
        let (movesRead, placements) = state.withLock { ($0.historyMovesRead, $0.placements) }
        summary.historyMoves += movesRead
        let (localSummary, generation) = localVersions.withLock { local -> (VersionSummary, UInt64) in
            local.scanIfNeeded(archive)
            return (local.summary, local.generation)
        }
        guard summary != localSummary else {
            followItems(archive, placements: placements, readAt: generation)
            return
        }
        // Records come with history moves: applied before the versions they gate are fetched.
        if summary.historyMoves != localSummary.historyMoves { try applyRemovals(archive) }
        let stored = try pool.withConnection { try queries.versions($0) }
        let storedRows = Dictionary(stored.map { ($0.id, $0) }) { first, _ in first }
        // Dropped elsewhere (or never committed): gone here; its history handed on or moved among
        // the removed elsewhere: moved here too. Unless kept or moved since the read began.
        let gone = localVersions.withLock { local -> [Int64] in
            local.refused.formIntersection(storedRows.keys)
            local.historyMoves = summary.historyMoves
            var gone: [Int64] = []
            for (id, entry) in local.locations where entry.generation <= generation && !local.uncommitted.contains(id) {
                guard let row = storedRows[id] else {
                    gone.append(id)
                    continue
                }
                // Looked at again where the rows say another row holds its history now, or another
                // place (one no row holds); the others only where the mirror's paths moved.
                if row.item != entry.item || row.item == nil && row.document != FileSystemPath.bytes(of: entry.document) {
                    local.locations[id]?.item = row.item
                    local.locations[id]?.placements = LocalVersions.Entry.unchecked
                }
            }
            return gone
        }
        for id in gone { removeLocally(id, archive) }
        followItems(archive, placements: placements, readAt: generation, documents: storedRows.mapValues(\.document))
        logger.debug("versions compared with the database: \(stored.count) there, \(gone.count) gone from here")
        let deadline = ContinuousClock.now + Self.versionFetchBudget
        // Newest first: the versions a user looks for are the recent ones.
        for version in stored.sorted(by: { $0.id > $1.id })
        where localVersions.withLock({ $0.locations[version.id] == nil && !$0.refused.contains(version.id) }) {
            guard ContinuousClock.now < deadline else { return }
            do {
                try fetchVersion(version, into: archive)
            } catch let refusal as VersionRowRefusal {
                logger.error("version \(version.id) of \(FileSystemPath.string(fromBytes: version.document)) is not shown: \(refusal)")
                localVersions.withLock { _ = $0.refused.insert(version.id) }
            } catch let error as PostgresError {
                throw error
            } catch {
                // A full disk, or content missing for now: tried again at the next poll, logged once.
                if localVersions.withLock({ $0.reported.insert(version.id).inserted }) {
                    logger.warning("version \(version.id) of \(FileSystemPath.string(fromBytes: version.document)) could not be fetched yet: \(error)")
                }
                return
            }
        }
    }

    /// Shows each version of this mount's archive where its history is now: a history keyed by an
    /// item where the mirror has the item (a rename through another mount moved no version row:
    /// the mirror's paths say where it went), and one no item holds at its row's path
    /// (`documents`, when the rows were read). Looks only where the mirror's paths moved since the
    /// last look (`placements`), and all of them once the rows were read again.
    private func followItems(_ archive: VersionArchive, placements: UInt64, readAt generation: UInt64, documents: [Int64: [UInt8]] = [:]) {
        let candidates = localVersions.withLock { local -> [(id: Int64, item: Int64?, document: String)] in
            guard local.movesUnderWay == 0 else { return [] }
            return local.locations.compactMap { id, entry in
                guard entry.placements != placements, entry.generation <= generation, !local.uncommitted.contains(id) else { return nil }
                return (id, entry.item, entry.document)
            }
        }
        guard !candidates.isEmpty else { return }
        let itemPaths = state.withLock { state in candidates.map { candidate in candidate.item.flatMap { state.path(of: $0) } } }
        var moves: [(id: Int64, place: [UInt8])] = []
        for (candidate, itemPath) in zip(candidates, itemPaths) {
            // An item this mirror does not know (yet) leaves its history where it is shown.
            let place = candidate.item == nil ? documents[candidate.id] : itemPath.map { FileSystemPath.bytes(of: $0) }
            if let place, place != FileSystemPath.bytes(of: candidate.document) { moves.append((candidate.id, place)) }
        }
        for move in moves { moveLocally(move.id, to: move.place, archive, readAt: generation) }
        localVersions.withLock { local in
            for candidate in candidates where local.locations[candidate.id]?.generation ?? .max <= generation {
                local.locations[candidate.id]?.placements = placements
            }
        }
        if !moves.isEmpty { logger.debug("versions: \(moves.count) moved where their documents went") }
    }

    private func removeLocally(_ id: Int64, _ archive: VersionArchive) {
        localVersions.withLock { local in
            guard let entry = local.locations[id] else { return }
            let version = archive.version(of: entry.document, named: StorePath.lastComponent(entry.location))
            if let version { try? archive.remove(version) }
            local.locations[id] = nil
        }
    }

    /// Moves a version to the path the database has it at now, unless a change of this mount since
    /// the read (`generation`) kept or moved it; where it cannot (a name taken there), it leaves
    /// and is fetched again there.
    private func moveLocally(_ id: Int64, to path: [UInt8], _ archive: VersionArchive, readAt generation: UInt64) {
        let moved = localVersions.withLock { local -> Bool in
            guard let entry = local.locations[id], entry.generation <= generation, local.movesUnderWay == 0, !local.uncommitted.contains(id)
            else { return true }
            guard let document = try? Self.documentPath(path),
                  let version = archive.version(of: entry.document, named: StorePath.lastComponent(entry.location)),
                  let location = archive.moveVersion(version, to: document)
            else { return false }
            local.add(id, at: location, document: document, item: entry.item)
            return true
        }
        if !moved { removeLocally(id, archive) }
    }

    /// Fetches a version into a private folder, then moves it into the archive.
    private func fetchVersion(_ version: StoredVersion, into archive: VersionArchive) throws {
        // Where its document is now, if the mirror knows the item; else where the row says.
        let itemPath = version.item.flatMap { item in state.withLock { $0.path(of: item) } }
        let document = try Self.documentPath(itemPath.map { FileSystemPath.bytes(of: $0) } ?? version.document)
        // A row of a DocFS before the reach was recorded: judged by the document's folders as they are.
        var saved = version.saved
        if !saved.knowsReach { saved = SaveRecord(time: saved.time, userID: saved.userID, unreachable: unreachableBits(of: document)) }
        let items = try pool.withConnection { try queries.versionItems($0, of: version.id) }
        guard let privateArea = mirror.localPath(of: DirectoryStore.privateAreaName) else { return }
        let built = privateArea + "/tmp/version-\(version.id)-\(UInt64.random(in: 0...UInt64.max))"
        do {
            try build(items, at: built, version: version.id)
            Self.tag(built, with: version.id)
            try localVersions.withLock { local in
                guard local.locations[version.id] == nil else {
                    try? FileIO.removeItem(built)
                    return
                }
                let location = try archive.adopt(built, as: document, record: saved)
                local.add(version.id, at: location, document: document, item: version.item)
            }
        } catch {
            try? FileIO.removeItem(built)
            throw error
        }
    }

    /// A version's document path, checked: every name in it a file name, no longer than a path,
    /// and none in the private area but the removal areas' (`VersionArchive.removedPath(of:owner:)`).
    private static func documentPath(_ bytes: [UInt8]) throws -> String {
        guard bytes.count < Int(PATH_MAX) else { throw VersionRowRefusal("its document path is \(bytes.count) bytes long") }
        let components = bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        for component in components {
            do { _ = try FileName(bytes: component) } catch { throw VersionRowRefusal("its document path has \(error)") }
        }
        let path = FileSystemPath.string(fromBytes: bytes)
        guard !components.isEmpty, !isPrivate(path) || VersionArchive.pathBeforeRemoval(path).map({ !$0.isEmpty }) == true else { throw VersionRowRefusal("its document path is DocFS's private area") }
        return path
    }

    /// Makes the version's items under `built`: folders first (made writable, given their modes
    /// last), each item inside a folder made here, so no row can lead a write through a link.
    private func build(_ items: [StoredVersionItem], at built: String, version: Int64) throws {
        guard let top = items.first, top.path.isEmpty, [UInt32(S_IFREG), UInt32(S_IFDIR)].contains(top.mode & UInt32(S_IFMT)) else {
            throw VersionRowRefusal("it has no file or folder for the document itself")
        }
        var folders: [[UInt8]: String] = [:]
        var folderAttributes: [(String, StoredVersionItem)] = []
        for item in items {
            let location: String
            if item.path.isEmpty {
                location = built
            } else {
                let slash = item.path.lastIndex(of: UInt8(ascii: "/"))
                let parent = slash.map { Array(item.path[..<$0]) } ?? []
                let name = slash.map { Array(item.path[item.path.index(after: $0)...]) } ?? item.path
                guard let folder = folders[parent] else { throw VersionRowRefusal("a member (\(item.path.count) bytes of path) is not inside a folder of it") }
                do { location = folder + "/" + (try FileName(bytes: name)).string } catch { throw VersionRowRefusal("a member's name is \(error)") }
            }
            switch item.mode & UInt32(S_IFMT) {
            case UInt32(S_IFDIR):
                try Paths.makeDirectory(location, mode: 0o700)
                folders[item.path] = location
                folderAttributes.append((location, item))
            case UInt32(S_IFREG):
                // A placeholder: its content is fetched when first opened (see `VersionContent`).
                let file = OwnedDescriptor(try FileIO.open(location, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode: 0o600))
                if item.size > 0 {
                    try retryingOnInterrupt("ftruncate", path: location) { ftruncate(file.rawValue, off_t(item.size)) }
                    try Self.markPlaceholder(location)
                }
                try Self.giveAttributes(of: item, to: file.rawValue)
            case UInt32(S_IFLNK):
                guard let target = item.target, !target.isEmpty, !target.contains(0) else { throw VersionRowRefusal("a symbolic link has no target") }
                try Paths.makeSymbolicLink(location, target: FileSystemPath.string(fromBytes: target))
            default:
                // Devices and pipes are not a document's: left out of its version.
                break
            }
        }
        for (location, item) in folderAttributes.reversed() {
            let folder = OwnedDescriptor(try FileIO.open(location, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
            try Self.giveAttributes(of: item, to: folder.rawValue)
        }
    }

    /// The saved owner, mode (less set-user-ID and set-group-ID) and times, on an item just made.
    private static func giveAttributes(of item: StoredVersionItem, to descriptor: Int32) throws {
        if geteuid() == 0 { fchown(descriptor, item.userID, item.groupID) }
        fchmod(descriptor, mode_t(item.mode & 0o1777))
        var times = [item.modificationTime, item.modificationTime]
        futimens(descriptor, &times)
    }

    // MARK: Following history moves

    /// A change that moves histories in its transaction begins: from its commit until the archive
    /// has followed (`followHistoryMove`), a comparison must not take the versions for ones moved
    /// elsewhere. Paired with `endHistoryMove`, after which the next comparison compares every path.
    func beginHistoryMove() {
        localVersions.withLock { $0.movesUnderWay += 1 }
    }

    func endHistoryMove() {
        localVersions.withLock { local in
            local.movesUnderWay -= 1
            local.historyMoves = -1
        }
    }

    /// This mirror's archive follows a history move the database committed (see `beginHistoryMove`);
    /// `then` runs with the archive under the same lock.
    func followHistoryMove(from source: String, to destination: String, exchanging: Bool, then: (VersionArchive) -> Void = { _ in }) {
        guard keepsVersions, let archive = mirror.versions else { return }
        localVersions.withLock { local in
            local.scanIfNeeded(archive)
            archive.moveHistory(from: source, to: destination, exchanging: exchanging)
            local.moveHistory(from: source, to: destination, exchanging: exchanging, in: archive)
            then(archive)
        }
    }

    // MARK: Removal records

    /// A removed folder that removed documents were in is recorded for every mount, in each
    /// removal area that holds any below it.
    public func recordRemovedFolder(_ path: String, status: FileStatus) {
        // A mount that keeps versions knows from its archive (in step within a second) which
        // areas have any below: an rmdir with none costs no transaction. Else the database says.
        let areas: [String]
        // `versions`, not the mirror's archive, which a mount that keeps no versions has too (empty).
        if let archive = versions {
            areas = archive.removedPaths(of: path, preferring: nil)
            if areas.isEmpty { return }
        } else {
            // Only the areas with versions below it: an rmdir elsewhere costs one query, no transaction.
            do {
                areas = try pool.withConnection { db in
                    try queries.removalAreas(db).map { $0 + "/" + path }.filter { try queries.hasVersions(db, below: FileSystemPath.bytes(of: $0)) }
                }
            } catch {
                logger.warning("\(path): the record of the removed folder was not kept (its documents' versions there show as root's): \(error)")
                return
            }
        }
        for removed in areas {
            do {
                // Decided by the database's versions, not by what this mirror holds of them.
                let gate = try change(path, { db -> VersionArchive.Readers? in
                    guard try queries.hasVersions(db, below: FileSystemPath.bytes(of: removed)) else { return nil }
                    let gate = try queries.recordRemoval(db, folder: true, path: FileSystemPath.bytes(of: removed), readers: VersionArchive.Readers(status))
                    queries.notifyVersionsChanged(db)
                    return gate
                })
                if let gate { versions?.setRemovedFolder(removed, gate) }
            } catch {
                logger.warning("\(removed): the record of the removed folder was not kept (its documents' versions there show as root's): \(error)")
            }
        }
    }

    /// Brings the archive's removal records to the database's (`StoreQueries.recordRemoval`).
    func applyRemovals(_ archive: VersionArchive) throws {
        let records = try pool.withConnection { try queries.removals($0) }
        for record in records {
            let path = FileSystemPath.string(fromBytes: record.path)
            // Only paths among the removed, each name a file name: a row is not trusted.
            guard VersionArchive.pathBeforeRemoval(path).map({ !$0.isEmpty }) == true, (try? Self.documentPath(record.path)) != nil else { continue }
            if record.folder {
                if archive.removedFolder(path) != record.readers { archive.setRemovedFolder(path, record.readers) }
            } else if archive.readersOfRemovedDocument(path) != record.readers {
                archive.setReadersOfRemovedDocument(path, record.readers, makingFolder: true)
            }
        }
    }

    // MARK: Dropping

    public func removeVersion(_ version: DocumentVersion) throws {
        guard let archive = mirror.versions else { return }
        if let id = Self.row(of: version.location) {
            try dropVersions([id])
            removeLocally(id, archive)
        } else {
            try archive.remove(version)
        }
        StoreMetrics.dropped(1, .removed)
    }

    /// The store's policy, the same for every mount: the schedule and the cap kept in the database
    /// (`StoreRetention`), measured on this mirror's archive, which holds every version. A mount's
    /// own `--versions-cap` decides nothing here (`ignored`): the smallest mount's would decide
    /// everyone's history. What it drops leaves the database and so every mount.
    public func pruneVersions(_ ignored: VersionRetention, now: Date) -> (count: Int, bytes: Int64) {
        guard keepsVersions, let archive = mirror.versions else { return (0, 0) }
        let storeCap: Int64?, sizes: [Int64: Int64]
        do {
            (storeCap, sizes) = try pool.withConnection { db in (try queries.versionsCap(db), try queries.versionSizes(db)) }
        } catch {
            logger.warning("versions: the store's retention policy could not be read (\(error)); nothing is dropped this time")
            return (0, 0)
        }
        // Measured by the database, not by what this mirror holds of them (placeholders hold
        // nothing): every mount drops the same.
        let documents = archive.allDocuments(measuring: false).map { entry in
            entry.versions.map { version in
                var measured = version
                measured.exclusiveBytes = Self.row(of: version.location).flatMap { sizes[$0] } ?? 0
                return measured
            }
        }
        let dropped = VersionRetention(capBytes: storeCap).versionsToDrop(documents, now: now) { (try? self.status(of: $0)) != nil }
        let rows = dropped.compactMap { version in Self.row(of: version.location).map { ($0, version) } }
        do {
            try dropVersions(rows.map(\.0))
        } catch {
            logger.warning("versions: could not drop \(rows.count) that retention no longer keeps: \(error)")
            return (0, 0)
        }
        for (id, _) in rows { removeLocally(id, archive) }
        let bytes = rows.reduce(0) { $0 + $1.1.exclusiveBytes }
        StoreMetrics.retained(documents, droppedCount: rows.count, droppedBytes: bytes)
        logger.debug("versions: the store's retention (cap \(storeCap.map { "\($0) bytes" } ?? "none")) dropped \(rows.count)")
        return (rows.count, bytes)
    }

    /// Drops versions from the database, and wakes the other mounts to drop them too.
    private func dropVersions(_ ids: [Int64]) throws {
        guard !ids.isEmpty else { return }
        try change("(versions)", { db in
            try queries.dropVersions(db, ids)
            queries.notifyVersionsChanged(db)
        })
    }
}

/// A version a change should keep (see `PostgresStore.keepVersion`).
struct VersionWish: Sendable {
    var path: String
    /// The item stays in use under another name: its version in the mirror is a copy.
    var copying: Bool
}

/// A version a change kept in the database.
struct KeptVersion: Sendable {
    var wish: VersionWish
    var version: StoredVersion
}

/// Why a version row is not shown (rows are anyone's to write).
struct VersionRowRefusal: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The versions in the mirror's archive, by row id; read from the archive once, then kept as
/// versions are added and removed.
struct LocalVersions {
    /// One version in the archive: where it is, whose history it shows it in, the row of the
    /// document whose history it is (nil where none holds it, or not read yet), when it was added
    /// (`generation`), and the mirror's count of moved paths when its place was last checked.
    struct Entry {
        var location: String
        var document: String
        var item: Int64?
        var generation: UInt64
        var placements: UInt64 = 0

        /// A `placements` no mirror reaches: the entry's place is checked at the next look.
        static let unchecked = UInt64.max
    }

    var locations: [Int64: Entry] = [:]
    /// Rows refused (see `VersionRowRefusal`): counted as present, so they are not fetched again.
    var refused: Set<Int64> = []
    /// Rows that could not be fetched yet, already logged.
    var reported: Set<Int64> = []
    /// Counts additions, so that a synchronization spares what was kept after its read.
    var generation: UInt64 = 1
    /// Rows kept by a transaction of this mount that has not ended: the database shows them to no
    /// one else yet, so a comparison must not take them for rows dropped elsewhere.
    var uncommitted: Set<Int64> = []
    /// The store's count of history moves when this archive's paths were last compared with the
    /// database's.
    var historyMoves: Int64 = -1
    /// History moves of this mount between their database's commit and the archive's move.
    var movesUnderWay = 0
    private var scanned = false

    mutating func scanIfNeeded(_ archive: VersionArchive) {
        guard !scanned else { return }
        scanned = true
        for (document, versions) in archive.allDocuments(measuring: false) {
            for version in versions {
                // An untagged version was left by a crash between keeping and tagging: it is fetched again.
                guard let id = PostgresStore.row(of: version.location), locations[id] == nil else {
                    try? archive.remove(version)
                    continue
                }
                locations[id] = Entry(location: version.location, document: document, generation: 0)
            }
        }
    }

    mutating func add(_ id: Int64, at location: String, document: String, item: Int64?) {
        generation += 1
        locations[id] = Entry(location: location, document: document, item: item, generation: generation)
    }

    /// Follows `VersionArchive.moveHistory`: each version of a document at or below `source` (and
    /// `destination`, when `exchanging`) is where its document's history went, counted as kept now.
    /// One the archive left behind (a name taken in the new folder) is fetched again.
    mutating func moveHistory(from source: String, to destination: String, exchanging: Bool, in archive: VersionArchive) {
        func moved(_ document: String) -> String? {
            if StorePath.isWithin(document, source) { return StorePath.replacingFolder(source, with: destination, in: document) }
            if exchanging && StorePath.isWithin(document, destination) { return StorePath.replacingFolder(destination, with: source, in: document) }
            return nil
        }
        for (id, entry) in locations {
            guard let document = moved(entry.document) else { continue }
            let location = archive.folder(for: document) + "/" + StorePath.lastComponent(entry.location)
            guard PostgresStore.row(of: location) == id else {
                // Left where it was (a name taken there): not shown under the old name any more,
                // and fetched again under the new one.
                if let stray = archive.version(of: entry.document, named: StorePath.lastComponent(entry.location)),
                   PostgresStore.row(of: stray.location) == id
                {
                    try? archive.remove(stray)
                }
                locations[id] = nil
                continue
            }
            generation += 1
            locations[id] = Entry(location: location, document: document, item: entry.item, generation: generation)
        }
    }

    /// `id` counts as kept now (see `PostgresStore.settle`).
    mutating func touch(_ id: Int64) {
        guard var entry = locations[id] else { return }
        generation += 1
        entry.generation = generation
        locations[id] = entry
    }

    var summary: VersionSummary {
        let ids = Set(locations.keys).union(refused)
        return VersionSummary(
            count: Int64(ids.count), newest: ids.max() ?? 0, idSum: String(ids.reduce(Int128(0)) { $0 + Int128($1) }), historyMoves: historyMoves)
    }
}
