import DocumentModel
import DocumentStore
import Foundation
import Glibc
import Logging
import Synchronization
import SystemSupport

/// A document store kept in PostgreSQL, which several mounts (on several machines) share.
///
/// The database holds the truth: items by parent and name, their attributes and extended
/// attributes, and content as content-addressed chunks. Each mount keeps a local mirror of the
/// store (a `DirectoryStore` in its cache directory) that serves the kernel — descriptors, pages,
/// staging and the quarantine stay local — and changes it only in step with the database:
///
/// - a commit (a document saved, a package changed) is one transaction, made before the mirror
///   shows the new version; other mounts read the old or the new version, never a mix;
/// - a save based on a content version that is no longer the stored one (another mount saved the
///   document since this write began) is refused as a conflict, never written over it;
/// - names, attributes and extended attributes change in the mirror inside the transaction that
///   records them, so the mirror's refusal (EEXIST, ENOTEMPTY…) rolls the database back;
/// - commits of other mounts arrive by the change log and LISTEN/NOTIFY (`ChangeFeed`) and are
///   applied to the mirror, which tells the kernel what to forget.
public final class PostgresStore: DocumentStore {
    public let rootURL: URL
    public let location: PostgresLocation
    /// The local mirror: what the kernel is served from.
    public let mirror: DirectoryStore
    /// The mirror's folder, locked (flock) for as long as the store is open: a second mount of the
    /// same folder would take this one's writes in progress for a crash's leftovers.
    private let mirrorLock: OwnedDescriptor
    let pool: ConnectionPool
    let queries: StoreQueries
    let rootID: Int64
    let logger: Logger
    let state = OrderedMutex(.mirrorState, MirrorState())
    /// Local changes take it shared; applying another mount's changes to the mirror takes it
    /// exclusively, so the two never interleave on one path.
    let applying = ReadWriteLock(.mirrorApplying)
    let changeHandler = OrderedMutex<(@Sendable ([StoreChange]) -> Void)?>(.leaf, nil)
    /// Where other mounts' changes are handed to the mount (see `deliver`).
    let deliveries = DispatchQueue(label: "docfs-store-changes")
    /// Whether new items may be given to their requester (only root may chown).
    let canChangeOwner = geteuid() == 0
    /// The most file content the mirror keeps (see `withContent`).
    let contentCacheLimit: Int64
    public static let defaultContentCacheLimit: Int64 = 1 << 30
    /// How long a change waits for a database that takes it (a failover, a restart, a stall)
    /// before it fails; see `change`.
    let primaryWait: Duration
    public static let defaultPrimaryWait: Duration = .seconds(30)
    /// When the current outage began, while changes wait for a primary.
    let outageStart = OrderedMutex<ContinuousClock.Instant?>(.leaf, nil)
    /// Whether saves keep the versions they replace (`PostgresStore+Versions`).
    let keepsVersions: Bool
    /// The paths whose next change keeps a version, and whether as a copy (see `keepVersion`).
    let versionWishes = OrderedMutex<[PathKey: Bool]>(.leaf, [:])
    /// The versions the mirror's archive holds (see `synchronizeVersions`).
    let localVersions = OrderedMutex(.mirrorVersions, LocalVersions())
    /// How long a mount waits for another mount of its mirror to let go of it.
    static let mirrorLockPatience: Duration = .seconds(10)
    /// Versions (or files of them) being fetched or read whole now, each with how many are at it:
    /// eviction passes them by. Keyed by the location's bytes, as every path is.
    let versionsInUse = OrderedMutex<[PathKey: Int]>(.leaf, [:])
    /// Where savers are recorded, off the save's path (see `recordSave`).
    let saveRecords = DispatchQueue(label: "docfs-save-records")
    /// The saves the commits in progress make, and by whom (see `recordingSaves`).
    let savesInProgress = OrderedMutex<[PathKey: uid_t]>(.leaf, [:])
    /// The saver each path's last install wrote into its row, in its own transaction, and the
    /// content version it wrote it for (see `recordSave`): taken by the record of that save, which
    /// then has nothing left to write.
    let saversRecordedAlong = OrderedMutex<[PathKey: (user: uid_t, contentVersion: Int64)]>(.leaf, [:])

    /// Connects, migrates the schema, creates the store `location.storeName` if it is new, and
    /// brings the mirror in `cacheDirectory` up to date with the database: every name and
    /// attribute, and of file content what a clean unmount left (at most `contentCacheLimit` bytes;
    /// the rest is fetched as it is used). `readOnly` (for `docfs check` and `status`) writes nothing
    /// to the database: a missing store or schema is an error.
    public init(
        location: PostgresLocation, cacheDirectory: String, contentCacheLimit: Int64 = defaultContentCacheLimit,
        primaryWait: Duration = defaultPrimaryWait, quarantineLimits: QuarantineLimits = QuarantineLimits(), keepsVersions: Bool = true,
        readOnly: Bool = false, logger: Logger
    ) throws {
        self.location = location
        self.keepsVersions = keepsVersions && !readOnly
        self.contentCacheLimit = contentCacheLimit
        self.primaryWait = primaryWait
        self.logger = logger
        rootURL = URL(string: location.description) ?? URL(fileURLWithPath: "/")
        pool = ConnectionPool(parameters: location.connectionParameters, logger: logger)
        if (try? Paths.makeDirectory(cacheDirectory, mode: 0o700)) == nil && errno != EEXIST {
            throw SystemCallError.last("mkdir", path: cacheDirectory)
        }
        mirrorLock = OwnedDescriptor(try FileIO.open(cacheDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC))
        // A mount unmounted just now may still be letting go of the mirror (its daemon writes the
        // manifest after the kernel has let it go): a remount (umount; mount) waits for it a while.
        let deadline = ContinuousClock.now + Self.mirrorLockPatience
        var waiting = false
        while flock(mirrorLock.rawValue, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw SystemCallError.last("flock", path: cacheDirectory) }
            guard ContinuousClock.now < deadline else { throw PostgresStoreError.mirrorInUse(cacheDirectory) }
            if !waiting { logger.notice("\(cacheDirectory): another mount holds this mirror; waiting up to \(Self.mirrorLockPatience) for it to let go") }
            waiting = true
            usleep(20_000)
        }
        // Items are known by their rows' ids (see `identified`), not by the mirror's files.
        // The mirror's version archive shows the database's versions (see `synchronizeVersions`).
        mirror = try DirectoryStore(
            path: cacheDirectory, quarantineLimits: quarantineLimits, keepsIdentities: false, keepsVersions: self.keepsVersions)
        let origin = "\(ProcessInfo.processInfo.hostName)-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let pool = pool
        // A mount made while the cluster fails over (or comes up) waits for a primary, as a change does.
        let (storeID, rootID) = try Self.retryingWhileTransient(for: primaryWait) {
            try pool.withConnection { db in
                if readOnly { return try Self.existingStore(named: location.storeName, db) }
                try StoreSchema.migrate(db)
                if let failure = StoreSchema.describeFolders(db) {
                    logger.notice("could not tell the database's planner that folders are small (\(failure)): on a large store, a package's save may read the whole table until `ANALYZE docfs_items` runs as the table's owner")
                }
                return try Self.openStore(named: location.storeName, db)
            }
        }
        self.rootID = rootID
        queries = StoreQueries(storeID: storeID, origin: origin)
        _ = mirror.recoverInterruptedWrites()
        if let archive = mirror.versions, self.keepsVersions { localVersions.withLock { $0.scanIfNeeded(archive) } }
        if let manifest = readOnly ? nil : takeManifest() {
            // A clean unmount said what the mirror holds: only what changed since is fetched.
            state.withLock { state in
                for (path, item) in manifest { state.set(path.path, item) }
            }
        } else {
            try clearMirror()
        }
        try synchronizeEverything()
        evictIfNeeded()
        if !readOnly { pruneChangeLog() }
    }

    /// Runs `body` again after failures that pass (see `PostgresError.isTransient`), pausing a
    /// little longer each time, until `limit` has passed.
    private static func retryingWhileTransient<T>(for limit: Duration, _ body: () throws -> T) throws -> T {
        let deadline = ContinuousClock.now + limit
        var pause = 0.05
        while true {
            do {
                return try body()
            } catch let error as PostgresError where error.isTransient && ContinuousClock.now + .milliseconds(Int64(pause * 1000)) < deadline {
                Thread.sleep(forTimeInterval: pause)
                pause = min(pause * 2, 0.5)
            }
        }
    }

    private static func existingStore(named name: String, _ db: PostgresConnection) throws -> (Int64, Int64) {
        let found = try? db.execute("SELECT id, root FROM docfs_stores WHERE name = $1", [.text(name)])
        guard let found, found.count == 1, let id = found.integer(0, 0), let root = found.integer(0, 1) else {
            throw PostgresStoreError.noSuchStore(name)
        }
        return (id, root)
    }

    /// The store's id and root folder, both created when the store is new.
    private static func openStore(named name: String, _ db: PostgresConnection) throws -> (Int64, Int64) {
        try db.transaction { db in
            try db.execute("INSERT INTO docfs_stores (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", [.text(name)])
            let rows = try db.execute("SELECT id, root FROM docfs_stores WHERE name = $1 FOR UPDATE", [.text(name)])
            guard rows.count == 1, let id = rows.integer(0, 0) else { throw PostgresStoreError.unavailable("the store \(name) could not be created") }
            if let root = rows.integer(0, 1) { return (id, root) }
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let nanoseconds = StoredItem.nanoseconds(now)
            let root = try db.execute(
                """
                INSERT INTO docfs_items (store, parent, name, mode, uid, gid, atime_ns, mtime_ns, version, content_version)
                VALUES ($1, NULL, '', $2, $3, $4, $5, $5, nextval('docfs_versions'), currval('docfs_versions')) RETURNING id
                """,
                [.integer(id), .integer(Int64(S_IFDIR | 0o755)), .integer(Int64(geteuid())), .integer(Int64(getegid())), .integer(nanoseconds)])
            let rootID = root.integer(0, 0) ?? 0
            try db.execute("UPDATE docfs_stores SET root = $2 WHERE id = $1", [.integer(id), .integer(rootID)])
            return (id, rootID)
        }
    }

    private var manifestPath: String { (mirror.localPath(of: DirectoryStore.privateAreaName) ?? "") + "/postgres-manifest.json" }

    /// Records what the mirror holds (each path's row and versions), so the next mount of this
    /// mirror fetches only what changed. Call once the mount is gone and nothing changes the mirror.
    public func saveManifest() {
        applying.writing {
            let known = state.withLock { $0.allKnown }
            guard let data = try? JSONEncoder().encode(known) else { return }
            let temporary = manifestPath + ".new"
            do {
                try FileIO.writeFile(temporary, data, mode: 0o600)
                try FileIO.rename(temporary, manifestPath)
            } catch {
                logger.warning("could not record what the mirror holds (\(error)); the next mount rebuilds it from the database")
            }
        }
    }

    /// The manifest a clean unmount left, removed as it is read: a mount that ends without saving
    /// one (a crash) leaves none, and the next mount rebuilds the mirror whole.
    private func takeManifest() -> [PathKey: KnownItem]? {
        guard let data = try? FileIO.readFile(manifestPath) else { return nil }
        Paths.remove(manifestPath)
        // One keyed by `String` (before 0.x: NFC and NFD spellings merged) does not decode: the
        // mirror is then rebuilt.
        return try? JSONDecoder().decode([PathKey: KnownItem].self, from: data)
    }

    /// Without a manifest the mirror is rebuilt from the database: whatever it held is not known
    /// to match. Its private area (the quarantine) stays.
    private func clearMirror() throws {
        for entry in try mirror.list("") {
            guard let full = mirror.localPath(of: entry.name.string) else { continue }
            try FileIO.removeItem(full)
        }
    }

    /// How far behind the database this mount's view may be, in seconds: the time since it last
    /// read the change log to its end (a poll a second; longer while the database is out of reach).
    public var changeFeedLag: Double {
        let elapsed = (ContinuousClock.now - state.withLock { $0.currentAt }).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }

    // MARK: What DocumentFS asks of a store that is not a local directory

    /// Not a local directory that other programs write in: changes come from the change feed.
    public func localPath(of path: String) -> String? { nil }

    public var writesInPlace: Bool { false }
    /// A file's content is one row's list of 32-byte chunk hashes (a bytea: at most 1 GB), and a
    /// chunk may be as small as 16 KiB: 512 GiB always fits. Past it a write fails with EFBIG, where
    /// it was taken, and its commit hashed the whole file (16 TiB of a sparse file's zeros for
    /// xfstests generic/308).
    public var maximumFileSize: Int64? { Int64(ContentChunks.minimum) * ((1 << 30) / Int64(ContentChunks.hashLength)) }

    public var hasChangeFeed: Bool { true }

    /// The rows of the store that are not mirrored because their names are no file names (or take
    /// the private area's), by id: `docfs check` reports them.
    public var invalidRows: [InvalidRow] { state.withLock { $0.invalidRows.values.sorted { $0.id < $1.id } } }

    // MARK: Reading: served by the mirror, content fetched first when only its placeholder is there

    public func status(of path: String) throws -> FileStatus {
        let status = Self.blocksAsFetched(try mirror.status(of: path))
        return identified(status, as: path.isEmpty ? rootID : state.withLock { $0[path]?.id })
    }
    public func status(of name: FileName, in directory: OwnedDescriptor, folder: String) throws -> FileStatus {
        let status = Self.blocksAsFetched(try mirror.status(of: name, in: directory, folder: folder))
        return identified(status, as: state.withLock { $0[name, inFolder: folder]?.id })
    }
    public func openDirectory(_ path: String) throws -> OwnedDescriptor { try mirror.openDirectory(path) }
    /// The mirror's count of an open file's names: the names its version archive holds are not the store's.
    public func status(ofOpen file: OwnedDescriptor) throws -> FileStatus { try mirror.status(ofOpen: file) }
    public func list(_ path: String) throws -> [StoreDirectoryEntry] {
        let entries = try mirror.list(path)
        let ids = state.withLock { $0.items(named: entries.map(\.name), inFolder: path) }.map { $0?.id }
        return zip(entries, ids).map { entry, id in
            var entry = entry
            entry.identity = Self.identity(row: id, mirrored: entry.identity)
            return entry
        }
    }

    /// An item is known by its row's id in every mount, across remounts and saves. An item the
    /// database does not hold (the private area) is known by its mirror's number, kept apart.
    private func identified(_ status: FileStatus, as id: Int64?) -> FileStatus {
        var status = status
        status.identity = Self.identity(row: id, mirrored: status.inode)
        return status
    }

    /// A row's id is never given to another row; a mirror's own number (the high bit set) may be.
    public func identityIsNeverReused(_ identity: UInt64) -> Bool { identity != 0 && identity & 1 << 63 == 0 }

    private static func identity(row id: Int64?, mirrored: UInt64) -> UInt64 {
        guard let id, id > 0 else { return mirrored | 1 << 63 }
        return UInt64(id)
    }
    public func openForReading(_ path: String) throws -> OwnedDescriptor { try withContent(path) { try mirror.openForReading(path) } }

    public func openFetchedForReading(_ path: String) throws -> OwnedDescriptor? {
        guard !Self.isPrivate(path) else { return try mirror.openForReading(path) }
        // Under `applying`, as `withContent` opens: eviction cannot put a placeholder there meanwhile.
        let opened = try applying.reading { () throws -> OwnedDescriptor? in
            state.withLock { $0.isFetched(under: path) } ? try mirror.openForReading(path) : nil
        }
        // What the open holds stays its own: only now may the cache give back room.
        if opened != nil { evictIfNeeded() }
        return opened
    }

    /// Read whole at once (not lazily, as a directory store's): a lazy wrapper would read its files
    /// later by name, when eviction may have put placeholders there.
    public func fileWrapper(at path: String) throws -> FileWrapper {
        guard !Self.isPrivate(path), let local = mirror.localPath(of: path) else { return try mirror.fileWrapper(at: path) }
        return try withContent(path) { try FileWrapper(url: URL(fileURLWithPath: local, isDirectory: false), options: .immediate) }
    }
    /// The folder read through one descriptor of the mirror's folder, once its content is fetched
    /// (and while no other mount's change is applied): one version of it, whole, as on a directory
    /// store (see `DirectoryStore.withFolderWrapper`).
    public func withFolderWrapper<T>(at path: String, _ body: (FileWrapper, FileStatus) throws -> T) throws -> T {
        guard !Self.isPrivate(path) else { return try mirror.withFolderWrapper(at: path, body) }
        return try withContent(path) {
            try mirror.withFolderWrapper(at: path) { wrapper, folder in
                try body(wrapper, identified(Self.blocksAsFetched(folder), as: state.withLock { $0[path]?.id }))
            }
        }
    }
    public func symbolicLinkTarget(_ path: String) throws -> String { try mirror.symbolicLinkTarget(path) }
    public func extendedAttribute(_ path: String, name: String) throws -> [UInt8] { try mirror.extendedAttribute(path, name: name) }
    public func extendedAttributeNames(_ path: String) throws -> [String] { try mirror.extendedAttributeNames(path) }
    public func statistics() throws -> statvfs { try mirror.statistics() }

    /// Raw files are staged and installed like documents (see `writesInPlace`); an in-place open
    /// is for reading only.
    public func openInPlace(_ path: String, flags: Int32, mode: mode_t, owner: Ownership?) throws -> OwnedDescriptor {
        guard flags & O_ACCMODE == O_RDONLY, flags & (O_CREAT | O_TRUNC) == 0 else {
            throw SystemCallError(errno: EROFS, operation: "open in place", path: path)
        }
        return try withContent(path) { try mirror.openInPlace(path, flags: flags, mode: mode, owner: owner) }
    }

    // MARK: Private items: the mirror's own

    static func isPrivate(_ path: String) -> Bool {
        StorePath.isWithin(path, DirectoryStore.privateAreaName)
    }

    public func makeStagingFile(seededFrom source: OwnedDescriptor?, for document: String) throws -> StagingFile {
        let staging = try mirror.makeStagingFile(seededFrom: source, for: document)
        noteBase(of: staging, for: document)
        return staging
    }

    public var checksBases: Bool { true }

    /// A base noted already for the same row keeps its content version: the one nearest to when
    /// the stage's content was read.
    public func noteBase(of staging: StagingFile, for document: String) {
        state.withLock { state in
            let key = PathKey(staging.path), now = state[document]
            if let noted = state.bases[key]?.base, let now, noted.id == now.id {
                state.bases[key] = (document, noted)
            } else {
                state.bases[key] = (document, now)
            }
        }
    }

    /// The clone links the mirror's files, so their content is fetched first: a placeholder linked
    /// into a clone would be committed as the package's content.
    public func cloneDirectory(_ path: String) throws -> String {
        try withContent(path) {
            let clone = try mirror.cloneDirectory(path)
            let linked = linkedItems(from: path, into: clone)
            state.withLock { state in
                state.bases[PathKey(clone)] = (path, state[path])
                state.linkedItems[PathKey(clone)] = linked
            }
            return clone
        }
    }

    public func quarantine(_ staging: StagingFile, for path: String, reason: String, owner: Ownership?) throws -> String {
        forgetBase(staging.path)
        return try mirror.quarantine(staging, for: path, reason: reason, owner: owner)
    }

    public func quarantineCopy(of staging: StagingFile, for path: String, reason: String, owner: Ownership?) throws -> String {
        try mirror.quarantineCopy(of: staging, for: path, reason: reason, owner: owner)
    }

    public func quarantineItem(_ item: String, for path: String, reason: String, owner: Ownership?) throws -> String {
        forgetBase(item)
        return try mirror.quarantineItem(item, for: path, reason: reason, owner: owner)
    }

    public func removePrivateItem(_ item: String) {
        forgetBase(item)
        mirror.removePrivateItem(item)
    }

    public func discard(_ staging: StagingFile) {
        forgetBase(staging.path)
        mirror.discard(staging)
    }

    public func releaseSpace(of staging: StagingFile) { mirror.releaseSpace(of: staging) }

    func forgetBase(_ path: String) {
        state.withLock { state in
            state.bases[PathKey(path)] = nil
            state.linkedItems[PathKey(path)] = nil
        }
    }

    /// A commit is durable once its transaction is: the database syncs it. The mirror can be
    /// rebuilt from the database, so it is not synced.
    public func synchronize(_ path: String) throws {}
    public func synchronizeDirectory(_ path: String) throws {}

    // MARK: Helpers for changes

    /// The parent path and the last name of a store path DocFS made (EINVAL for anything else).
    func split(_ path: String) throws -> (parent: String, name: FileName) {
        guard let split = StorePath.split(path) else { throw SystemCallError(errno: EINVAL, operation: "resolve", path: path) }
        return split
    }

    /// The row the mirrored `path` holds, or ENOENT.
    func knownItem(_ path: String, operation: String) throws -> KnownItem {
        if path.isEmpty { return state.withLock { $0[""] } ?? KnownItem(id: rootID, version: 0, contentVersion: 0, isFolder: true) }
        guard let item = state.withLock({ $0[path] }) else { throw SystemCallError(errno: ENOENT, operation: operation, path: path) }
        return item
    }

    func currentTimes() -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return now
    }
}
