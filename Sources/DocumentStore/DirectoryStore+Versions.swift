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
            let kept = try versions.addVersion(of: path, record: record, inode: status.inode) { target in
                if status.kind == .regular {
                    // The file the save replaces, linked: no byte is copied, and the version keeps
                    // the mode and owner it had.
                    try Paths.makeHardLink(target, to: full)
                    ArchivedLinks.adjust(target, by: 1)
                } else {
                    try linkCopy(ofFolder: full, status: status, to: target)
                }
            }
            if kept != nil { versions.added(path) }
        }
    }

    /// A folder at `target` of links to the files of the folder at `source` as they are now: each
    /// folder made anew with its mode, owner, attributes and times, files and symbolic links shared
    /// or copied. Done on descriptors, a call or two an item: it runs on every package save.
    private func linkCopy(ofFolder source: String, status: FileStatus, to target: String) throws {
        let from = OwnedDescriptor(try FileIO.open(source, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
        try FileSystemPath.at(target) { parent, name in
            do {
                try linkCopy(of: from, status: status, into: parent, name: name, path: target)
            } catch {
                try? FileIO.removeItem(target)
                throw error
            }
        }
    }

    private func linkCopy(of source: OwnedDescriptor, status: FileStatus, into parent: Int32, name: UnsafePointer<CChar>, path: String) throws {
        // Made with its mode: the daemon's umask is set again below only where it cut a bit.
        try retryingOnInterrupt("mkdir", path: path) { mkdirat(parent, name, status.permissions & 0o777) }
        let folder = OwnedDescriptor(try retryingOnInterrupt("open", path: path) { openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) })
        for entry in try FileIO.listing(of: source.rawValue, path: path) {
            try entry.name.withCString { entryName in
                switch Int32(entry.type) {
                case Int32(DT_DIR):
                    let child = OwnedDescriptor(try retryingOnInterrupt("open", path: path) {
                        openat(source.rawValue, entryName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    })
                    try linkCopy(of: child, status: try child.status(path: path), into: folder.rawValue, name: entryName, path: path + "/" + entry.name)
                case Int32(DT_LNK):
                    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                    let length = try retryingOnInterrupt("readlink", path: path) { readlinkat(source.rawValue, entryName, &buffer, buffer.count - 1) }
                    buffer[length] = 0
                    try retryingOnInterrupt("symlink", path: path) { symlinkat(buffer, folder.rawValue, entryName) }
                case Int32(DT_REG):
                    try retryingOnInterrupt("link", path: path) { linkat(source.rawValue, entryName, folder.rawValue, entryName, 0) }
                    Self.withAttributePath(name: entryName, in: folder.rawValue) { ArchivedLinks.adjust(at: $0, by: 1) }
                default:
                    try retryingOnInterrupt("link", path: path) { linkat(source.rawValue, entryName, folder.rawValue, entryName, 0) }
                }
            }
        }
        for attribute in (try? source.extendedAttributeNames()) ?? [] where attribute != identities?.attributeName {
            guard let value = try? source.extendedAttribute(attribute) else { continue }
            try? value.withUnsafeBytes { try folder.setExtendedAttribute(attribute, value: $0, flags: 0) }
        }
        if status.userID != geteuid() || status.groupID != getegid() { fchown(folder.rawValue, status.userID, status.groupID) }
        if status.permissions & ~0o777 != 0 || status.permissions & daemonUmask != 0 { fchmod(folder.rawValue, status.permissions) }
        var times = [status.accessTime, status.modificationTime]
        futimens(folder.rawValue, &times)
    }

    public func status(ofOpen file: OwnedDescriptor) throws -> FileStatus {
        var status = try file.status()
        if status.linkCount > 0 && status.kind == .regular {
            let archived = (try? file.extendedAttribute(ArchivedLinks.attributeName)).flatMap(ArchivedLinks.number) ?? 0
            status.linkCount -= min(status.linkCount, archived)
        }
        return status
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
