import DocumentModel
import DocumentStore
import Foundation
import Glibc
import SystemSupport

/// The mirror as a size-bounded content cache. The mirror always holds the whole tree — every
/// name, attribute and extended attribute — but a regular file's content only once it was used:
/// until then (and again after eviction) a placeholder stands in its place, a sparse file of the
/// right size, permissions and times. Opening or reading a file fills its placeholder first: copied
/// from a file in the mirror with the same content key when there is one, else downloaded. When the
/// content held passes the limit, the least recently used files are put back to placeholders.
///
/// Whole versions only: a placeholder is filled in a staging file that replaces it in one rename,
/// and eviction renames a new placeholder over the file, so a descriptor opened before keeps the
/// content it opened. Eviction takes `applying` exclusively and every open of content happens
/// under it shared, after checking the content is there, so nothing ever opens a placeholder.
extension PostgresStore {
    /// How often content is fetched again when it was evicted again before it could be opened.
    static let fetchAttempts = 5

    public func fetchContent(of path: String) throws {
        guard !Self.isPrivate(path) else { return }
        for file in state.withLock({ $0.use(under: path) }) { try fetchFile(file) }
    }

    /// Runs `body`, which opens or reads `path` (a file, or a folder and everything in it), once
    /// the content of every file there is in the mirror; eviction cannot run meanwhile.
    func withContent<T>(_ path: String, _ body: () throws -> T) throws -> T {
        guard !Self.isPrivate(path) else { return try body() }
        for _ in 0..<Self.fetchAttempts {
            for file in state.withLock({ $0.use(under: path) }) { try fetchFile(file) }
            let result: T? = try applying.reading { () throws -> T? in
                state.withLock { $0.isFetched(under: path) } ? try body() : nil
            }
            if let result {
                evictIfNeeded()
                return result
            }
        }
        throw PostgresStoreError.unavailable("the content of \(path) left the local cache as fast as it was fetched: the cache is smaller than what is in use (--cache-size)")
    }

    /// Fills the placeholder at `path` with its content. When the stored version moved on during
    /// the fetch (another mount saved it), the mirror is brought up to date and the new version is
    /// fetched, for as long as it keeps moving (up to `primaryWait`): an open that races another
    /// mount's commits gets one whole version, never an error.
    private func fetchFile(_ path: String) throws {
        let deadline = ContinuousClock.now + primaryWait
        var versionsSeen = 0
        while ContinuousClock.now < deadline {
            guard let item = state.withLock({ $0[path] }), !item.isFetched else { return }
            let staging: StagingFile
            do {
                let copy = try copyFromMirror(item, for: path)
                if copy == nil { TestHook.fetchBeforeDownload.pause() }
                staging = try copy ?? mirror.makeStagingFile(seededFrom: nil, for: path)
                var downloaded = copy != nil
                defer { if !downloaded { mirror.discard(staging) } }
                guard try copy != nil || download(item, into: staging, for: path) else {
                    versionsSeen += 1
                    if try !catchUp(), state.withLock({ $0.isPublishing(within: StorePath.split(path)?.parent ?? "") }) {
                        // A local rename or removal in its folder is committed and waits to show,
                        // maybe for the lock of names this open holds: fail rather than wait
                        // for it (the program may open again).
                        throw PostgresStoreError.unavailable("\(path) changed elsewhere while a change of this mount to its folder was being made; open it again")
                    }
                    continue
                }
                downloaded = true
            } catch let error as SystemCallError where error.errno == ENOSPC {
                // The mirror's disk is full: versions' content leaves it, else content used least
                // recently, as past --cache-size, and the fetch is tried again.
                guard evictVersionContent(item.size) > 0 || evictForSpace(item.size, sparing: path) else {
                    logger.error("\(path): cannot be fetched: the mirror's disk is full, and it holds no other content to give back")
                    throw error
                }
                logger.warning("\(path): the mirror's disk was full; content used least recently left it to make room")
                continue
            }
            var placed = false
            defer { if !placed { mirror.discard(staging) } }
            // Placed when the mirror is free (a local change may hold it for its whole upload),
            // waiting for it in short turns so that no reader queues behind this writer for long.
            var stillWanted = true
            while stillWanted && !placed && ContinuousClock.now < deadline {
                guard let outcome = try applying.writing(within: Self.applyingPatience, { () throws -> Bool in
                    guard let now = state.withLock({ $0[path] }), now.id == item.id, now.contentVersion == item.contentVersion, !now.isFetched else {
                        return false
                    }
                    try replaceKeepingTimes(path, with: staging)
                    state.withLock { $0.setFetched(path, true) }
                    return true
                }) else {
                    Thread.sleep(forTimeInterval: 0.01)
                    continue
                }
                placed = outcome
                stillWanted = false
            }
            if placed { return }
        }
        logger.error("\(path): not fetched: its stored version changed \(versionsSeen) times during \(primaryWait) of fetching")
        throw PostgresStoreError.unavailable("\(path) was saved elsewhere faster than it could be fetched")
    }

    /// A staging file holding a copy of content the mirror already has under another name.
    private func copyFromMirror(_ item: KnownItem, for path: String) throws -> StagingFile? {
        let source = applying.reading { () -> OwnedDescriptor? in
            guard let donor = state.withLock({ $0.fetchedPath(withKey: item.contentKey) }) else { return nil }
            return try? mirror.openForReading(donor)
        }
        guard let source, (try? source.status(path: path).size) == item.size else { return nil }
        return try mirror.makeStagingFile(seededFrom: source, for: path)
    }

    /// Downloads the stored content of `item` into `staging`. False when the database holds another
    /// version than the mirror knows (or the row is gone). The row and its chunks are read in one
    /// snapshot, so chunks collected meanwhile are still there to read: a chunk missing in it is
    /// content the database lost.
    private func download(_ item: KnownItem, into staging: StagingFile, for path: String) throws -> Bool {
        try database(path) { db in
            try db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            defer { db.rollback() }
            let rows = try db.execute("SELECT content_version, chunks FROM docfs_items WHERE id = $1", [.integer(item.id)])
            guard rows.count == 1, rows.integer(0, 0) == item.contentVersion else { return false }
            try queries.download(db, chunks: rows.bytes(0, 1), to: staging.descriptor.rawValue, path: path)
            let fetched = try staging.status().size
            guard fetched == item.size else {
                logger.error("\(path): the stored content is \(fetched) bytes where its row says \(item.size); not served")
                throw PostgresStoreError.missingContent(path: path)
            }
            return true
        }
    }

    /// Puts placeholders back in the place of the least recently used files until the content held
    /// is under 90% of the limit (room for the next fetches). The file used last stays, even alone
    /// over the limit: it is being read.
    func evictIfNeeded() {
        guard state.withLock({ $0.fetchedBytes }) > contentCacheLimit else { return }
        let target = contentCacheLimit / 10 * 9
        // Not worth holding readers up for: the next call evicts if this one cannot now.
        evict(sparing: state.withLock { $0.lastUsedFetchedPath() }) { state.withLock { $0.fetchedBytes } <= target }
    }

    /// A write to the mirror's disk (a save's staging file) found it full: content used least
    /// recently leaves the mirror, as past --cache-size.
    public func makeRoom(bytes: Int64) -> Bool {
        // Versions' content first, as a disk full of snapshots gives them back first.
        let wanted = max(Self.roomForWrites, bytes)
        let freed = evictVersionContent(wanted)
        if freed >= wanted { return true }
        let made = evictForSpace(wanted - freed, sparing: nil) || freed > 0
        logger.warning(made
            ? "the mirror's disk was full; content used least recently left it to make room for a write"
            : "the mirror's disk is full, and it holds no content to give back for a write")
        return made
    }

    /// How much content a full disk makes leave the mirror for writes.
    static let roomForWrites: Int64 = 64 << 20

    /// Puts placeholders back in the place of the least recently used files (but `path`) until
    /// `bytes` of content left the mirror, or none is left; whether any did.
    private func evictForSpace(_ bytes: Int64, sparing path: String?) -> Bool {
        let held = state.withLock { $0.fetchedBytes }
        evict(sparing: path) { held - state.withLock { $0.fetchedBytes } >= bytes }
        return state.withLock { $0.fetchedBytes } < held
    }

    private func evict(sparing spared: String?, until done: () -> Bool) {
        applying.writing(within: Self.applyingPatience) {
            for row in state.withLock({ $0.evictionOrder() }) {
                guard !done() else { break }
                // A path is made only for the rows evicted.
                guard let path = state.withLock({ $0.path(of: row) }), !(spared.map { FileSystemPath.same(path, $0) } ?? false) else { continue }
                do {
                    try placePlaceholder(at: path, keepingTimes: true)
                    state.withLock { $0.setFetched(path, false) }
                } catch {
                    logger.warning("\(path): could not leave the local cache: \(error)")
                }
            }
        }
    }

    /// Puts a placeholder at `path`: a sparse file of the size `path` has (or `size`), taking the
    /// attributes of what it replaces, and with `keepingTimes` its times too.
    func placePlaceholder(at path: String, size: Int64? = nil, keepingTimes: Bool = false) throws {
        guard let length = size ?? (try? mirror.status(of: path))?.size else { return }
        let staging = try mirror.makeStagingFile(seededFrom: nil, for: path)
        do {
            try retryingOnInterrupt("ftruncate", path: staging.path) { ftruncate(staging.descriptor.rawValue, off_t(length)) }
            if keepingTimes {
                try replaceKeepingTimes(path, with: staging)
            } else {
                _ = try mirror.install(staging, at: path, durable: false)
            }
        } catch {
            mirror.discard(staging)
            throw error
        }
    }

    /// Installs `staging` over the file at `path`, which keeps its attributes (`install` carries
    /// them over) and its times: the same version, its content fetched or evicted.
    private func replaceKeepingTimes(_ path: String, with staging: StagingFile) throws {
        let current = try mirror.status(of: path)
        _ = try mirror.install(staging, at: path, durable: false)
        try mirror.setTimes(path, access: current.accessTime, modification: current.modificationTime)
    }

    /// A placeholder takes no blocks; the kernel is told what the content takes once fetched, so
    /// `du` and programs that look for holes by comparing blocks with the size see a whole file.
    static func blocksAsFetched(_ status: FileStatus) -> FileStatus {
        guard status.kind == .regular, status.blocks == 0, status.size > 0 else { return status }
        var whole = status
        whole.blocks = (status.size + 511) / 512
        return whole
    }
}
