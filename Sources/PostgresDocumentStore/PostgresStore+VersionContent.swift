import CSystemShims
import DocumentStore
import Glibc
import SystemSupport

/// The content of versions, held on demand: the database holds every version's content, so a
/// mount's archive need not. A version fetched from the database is a placeholder (its size,
/// owner, mode and times, and no content) until it is first opened through the view; and when the
/// mirror's disk is full, versions give their content back first, oldest first (their files become
/// placeholders again). So a mount keeps of the store's history what it read or saved itself, and
/// a mount with less disk keeps less, deleting nobody's versions.
///
/// Content is never taken from under a reader: the view's descriptor holds a shared `flock` on
/// its file, and eviction takes the file only when it gets an exclusive one at once; a version
/// being fetched or read whole (a restore) is counted in `versionsInUse`, which eviction passes by.
extension PostgresStore {
    /// On an archived file whose content is not here (root's namespace when the daemon is root).
    static let placeholderAttribute = geteuid() == 0 ? "trusted.docfs.version-placeholder" : "user.docfs.version-placeholder"

    static func markPlaceholder(_ location: String) throws {
        try [UInt8(1)].withUnsafeBytes { try Paths.setExtendedAttribute(location, name: placeholderAttribute, value: $0, flags: 0) }
    }

    static func isPlaceholder(_ location: String) -> Bool {
        (try? Paths.extendedAttribute(location, name: placeholderAttribute)) != nil
    }

    public func openVersionContent(at location: String) throws -> OwnedDescriptor {
        // Evicted between the fetch and the lock: fetched again (eviction waits for no one, so
        // this ends unless the disk has no room for this one version).
        for _ in 0..<3 {
            try withVersionContent(at: location) {}
            let file = OwnedDescriptor(try FileIO.open(location, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC))
            try retryingOnInterrupt("flock", path: location) { flock(file.rawValue, LOCK_SH) }
            if !Self.isPlaceholder(location) { return file }
        }
        throw SystemCallError(errno: ENOSPC, operation: "fetch a version (the mirror's disk has no room to keep it)", path: location)
    }

    public func withVersionContent<T>(at location: String, _ body: () throws -> T) throws -> T {
        let key = PathKey(location)
        versionsInUse.withLock { $0[key, default: 0] += 1 }
        defer {
            versionsInUse.withLock { inUse in
                let left = (inUse[key] ?? 1) - 1
                inUse[key] = left > 0 ? left : nil
            }
        }
        try fetchPlaceholders(at: location)
        return try body()
    }

    /// Fetches the content of each placeholder at `location` (a file, or every file of a package's
    /// version). A disk too full for one gives back other versions' content, then the live
    /// files' (`makeRoom`), and tries once more.
    private func fetchPlaceholders(at location: String) throws {
        let status = try FileStatus.of(path: location)
        if status.kind == .directory {
            for name in try FileIO.directoryEntries(location) { try fetchPlaceholders(at: location + "/" + name) }
            return
        }
        guard status.kind == .regular, Self.isPlaceholder(location) else { return }
        do {
            try downloadVersionContent(at: location, status: status)
        } catch let error as SystemCallError where error.errno == ENOSPC {
            guard makeRoom(bytes: status.size) else { throw error }
            try downloadVersionContent(at: location, status: status)
        }
    }

    private func downloadVersionContent(at location: String, status: FileStatus) throws {
        guard let archive = mirror.versions, let (version, item) = archive.version(containing: location), let id = Self.row(of: version) else {
            throw SystemCallError(errno: EIO, operation: "fetch a version (its row is not known)", path: location)
        }
        let chunks = try pool.withConnection { db -> [UInt8]? in
            let rows = try db.execute("SELECT chunks FROM docfs_version_items WHERE version = $1 AND path = $2", [.integer(id), .bytes(item)])
            return rows.count == 1 ? rows.bytes(0, 0) : nil
        }
        guard let chunks else { throw PostgresStoreError.missingContent(path: location) }
        try Self.withWritable(location, status: status) { file in
            // The same bytes over the placeholder's holes (two fetches at once write the same).
            try pool.withConnection { try queries.download($0, chunks: chunks, to: file.rawValue, path: location) }
            var times = [status.accessTime, status.modificationTime]
            futimens(file.rawValue, &times)
            do {
                try Paths.removeExtendedAttribute(location, name: Self.placeholderAttribute)
            } catch let error as SystemCallError where error.errno == ENODATA {}  // the other fetch's
        }
    }

    /// Runs `body` with the archived file open to write, though its saved mode may forbid the
    /// daemon's user to (write permission is lent for `body`, which also changes its attributes).
    private static func withWritable<T>(_ location: String, status: FileStatus, _ body: (OwnedDescriptor) throws -> T) throws -> T {
        if geteuid() == 0 || status.permissions & 0o200 != 0 {
            return try body(OwnedDescriptor(try FileIO.open(location, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)))
        }
        try Paths.setPermissions(location, mode_t(status.permissions | 0o200))
        defer { try? Paths.setPermissions(location, mode_t(status.permissions)) }
        return try body(OwnedDescriptor(try FileIO.open(location, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)))
    }

    /// Makes the versions this mirror holds the content of placeholders again, oldest first, until
    /// `bytes` are given back; how many were. Only files no live file shares (a package's unchanged
    /// member is the live package's too), no one reads and no one fetches give theirs.
    func evictVersionContent(_ bytes: Int64) -> Int64 {
        guard mirror.versions != nil else { return 0 }
        let locations = localVersions.withLock { $0.locations.sorted { $0.key < $1.key }.map(\.value.location) }
        var freed: Int64 = 0
        for location in locations where freed < bytes {
            let inUse = versionsInUse.withLock { inUse in inUse.keys.contains { StorePath.isWithin($0.path, location) || StorePath.isWithin(location, $0.path) } }
            if !inUse { freed += evictContent(at: location) }
        }
        if freed > 0 { logger.notice("the mirror's disk was full; \(freed) bytes of versions' content left it (the database keeps them)") }
        return freed
    }

    private func evictContent(at location: String) -> Int64 {
        guard let status = try? FileStatus.of(path: location) else { return 0 }
        if status.kind == .directory {
            return ((try? FileIO.directoryEntries(location)) ?? []).reduce(0) { $0 + evictContent(at: location + "/" + $1) }
        }
        guard status.kind == .regular, status.linkCount == 1, status.blocks > 0 else { return 0 }
        return (try? Self.withWritable(location, status: status) { file -> Int64 in
            // A reader holds it: passed by.
            guard flock(file.rawValue, LOCK_EX | LOCK_NB) == 0 else { return 0 }
            // Marked first: a crash between the two leaves a file fetched again, never holes shown as content.
            try Self.markPlaceholder(location)
            guard docfs_fallocate(file.rawValue, Self.punchHole | Self.keepSize, 0, off_t(status.size)) == 0 else {
                try? Paths.removeExtendedAttribute(location, name: Self.placeholderAttribute)
                return 0
            }
            var times = [status.accessTime, status.modificationTime]
            futimens(file.rawValue, &times)
            return status.blocks * 512
        }) ?? 0
    }

    private static let punchHole: Int32 = 0x02
    private static let keepSize: Int32 = 0x01
}
