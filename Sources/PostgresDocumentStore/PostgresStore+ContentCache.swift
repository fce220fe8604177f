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
    /// How often a fetch is tried again when the stored version moved on during it (it is then
    /// brought into the mirror first), or the content was evicted again before it could be opened.
    static let fetchAttempts = 5

    /// Runs `body`, which opens or reads `path` (a file, or a folder and everything in it), once
    /// the content of every file there is in the mirror; eviction cannot run meanwhile.
    func withContent<T>(_ path: String, _ body: () throws -> T) throws -> T {
        guard !Self.isPrivate(path) else { return try body() }
        for _ in 0..<Self.fetchAttempts {
            for file in state.withLock({ $0.use(under: path) }) { try fetchFile(file) }
            let result: T? = try applying.reading { () throws -> T? in
                state.withLock { $0.unfetched(under: path).isEmpty } ? try body() : nil
            }
            if let result {
                evictIfNeeded()
                return result
            }
        }
        throw PostgresStoreError.unavailable("the content of \(path) left the local cache as fast as it was fetched: the cache is smaller than what is in use (--cache-size)")
    }

    /// Fills the placeholder at `path` with its content, unless the mirror moved on meanwhile.
    private func fetchFile(_ path: String) throws {
        for _ in 0..<Self.fetchAttempts {
            guard let item = state.withLock({ $0[path] }), !item.isFetched else { return }
            let copy = try copyFromMirror(item, for: path)
            let staging = try copy ?? mirror.makeStagingFile(seededFrom: nil, for: path)
            var placed = false
            defer { if !placed { mirror.discard(staging) } }
            if copy == nil {
                guard try download(item, into: staging, for: path) else {
                    // The stored version moved on (saved, removed): bring it into the mirror first.
                    try catchUp()
                    continue
                }
            }
            placed = try applying.writing { () throws -> Bool in
                guard let now = state.withLock({ $0[path] }), now.id == item.id, now.contentVersion == item.contentVersion, !now.isFetched else {
                    return false
                }
                try replaceKeepingTimes(path, with: staging)
                state.withLock { $0.setFetched(path, true) }
                return true
            }
            if placed { return }
        }
        // The same version, over and over, without its chunks: the database lost content.
        if state.withLock({ $0[path] })?.isFetched == false { throw PostgresStoreError.missingContent(path: path) }
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
    /// version than the mirror knows (or the row is gone, or its chunks were collected since).
    private func download(_ item: KnownItem, into staging: StagingFile, for path: String) throws -> Bool {
        try database(path) { db in
            let rows = try db.execute("SELECT content_version, chunks FROM docfs_items WHERE id = $1", [.integer(item.id)])
            guard rows.count == 1, rows.integer(0, 0) == item.contentVersion else { return false }
            do {
                try queries.download(db, chunks: rows.bytes(0, 1), to: staging.descriptor.rawValue, path: path)
            } catch PostgresStoreError.missingContent {
                return false
            }
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
        applying.writing {
            let target = contentCacheLimit / 10 * 9
            for path in state.withLock({ $0.evictionOrder() }).dropLast() {
                guard state.withLock({ $0.fetchedBytes }) > target else { break }
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
