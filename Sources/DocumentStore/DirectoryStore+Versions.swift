import Foundation
import Glibc
import SystemSupport

/// Keeping the versions a save replaces (see `VersionArchive`), and dropping them as they age.
extension DirectoryStore {
    public func keepVersion(of path: String) throws {
        guard keepsVersions, let versions else { return }
        let full = absolute(path)
        guard let status = try? FileStatus.of(path: full) else { return }
        switch status.kind {
        case .regular where status.size > 0, .directory: break
        // An empty file is a draft being made (`touch`, a copy's first step): nothing to go back to.
        default: return
        }
        let record = SaveRecord.read(at: full) ?? SaveRecord(time: status.modificationTime, userID: nil)
        try versionChanges.withLock { _ in
            guard let target = try versions.newVersionPath(for: path, record: record, inode: status.inode) else { return }
            if status.kind == .regular {
                // The file the save replaces, linked: no byte is copied, and the version keeps the
                // mode and owner it had.
                try Paths.makeHardLink(target, to: full)
            } else {
                do {
                    try linkClone(full, to: target)
                } catch {
                    try? FileIO.removeItem(target)
                    throw error
                }
            }
            versions.changed()
        }
    }

    public func recordSave(of path: String, by user: uid_t) {
        recordSave(of: path, by: user, at: SaveRecord.now(by: user).time)
    }

    /// `recordSave` with the save's time given (a restore keeping a time, a test's clock).
    public func recordSave(of path: String, by user: uid_t, at time: timespec) {
        guard keepsVersions else { return }
        SaveRecord(time: time, userID: user).write(at: absolute(path))
    }

    /// Drops what `retention` does not keep at `now`. Returns how many versions went and the space
    /// they gave back.
    @discardableResult
    public func pruneVersions(_ retention: VersionRetention, now: Date = Date()) -> (count: Int, bytes: Int64) {
        guard let versions, !isReadOnly else { return (0, 0) }
        let documents = versions.allDocuments().map(\.versions)
        var count = 0
        var bytes: Int64 = 0
        for version in retention.versionsToDrop(documents, now: now) {
            let removed = versionChanges.withLock { _ in (try? versions.remove(version)) != nil }
            if removed {
                count += 1
                bytes += version.exclusiveBytes
            }
        }
        return (count, bytes)
    }
}
