import CSystemShims
import DocumentModel
import Foundation
import Glibc
import Synchronization
import SystemSupport

/// The default store: a plain directory of documents, with DocFS's private area in `.docfs/`
/// at its root (staging for writes in progress, temporary items for atomic persistence, and the
/// quarantine). Everything lives on one file system, so every move into place is a `rename(2)`.
public final class DirectoryStore: DocumentStore {
    /// The name of the private area at the store's root; never a document, hidden from the mount.
    public static let privateAreaName = ".docfs"

    public let rootURL: URL
    private let root: String
    private let stagingDirectory: String
    private let temporaryDirectory: String
    public let quarantineDirectory: String
    private let counter = Atomic<UInt64>(0)
    /// Whether new items may be given to their requester (only root may chown).
    private let canChangeOwner = geteuid() == 0
    /// How much the quarantine may keep before the oldest items are pruned.
    public let quarantineLimits: QuarantineLimits
    /// Serializes pruning, which lists and sizes the whole quarantine.
    private let pruning = Mutex<Void>(())

    public enum OpenError: Error, CustomStringConvertible {
        case notADirectory(String)
        public var description: String {
            switch self {
            case .notADirectory(let path): "\(path) is not a directory"
            }
        }
    }

    /// Opens the store at `path`, creating its private area. Writes that a crash interrupted
    /// (staging files left behind) are moved to the quarantine, never deleted; half-built
    /// temporary items are removed — the items they were to replace are intact.
    public init(path: String, quarantineLimits: QuarantineLimits = QuarantineLimits()) throws {
        self.quarantineLimits = quarantineLimits
        let status = try FileStatus.of(path: path)
        guard status.kind == .directory else { throw OpenError.notADirectory(path) }
        root = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        rootURL = URL(fileURLWithPath: root, isDirectory: true)
        let privateArea = root + "/" + Self.privateAreaName
        stagingDirectory = privateArea + "/staging"
        temporaryDirectory = privateArea + "/tmp"
        quarantineDirectory = privateArea + "/quarantine"
        for directory in [privateArea, stagingDirectory, temporaryDirectory, quarantineDirectory] {
            if mkdir(directory, 0o700) != 0 && errno != EEXIST { throw SystemCallError.last("mkdir", path: directory) }
        }
    }

    /// Staging files a crash left behind: moved into the quarantine. Returns where they went.
    public func recoverInterruptedWrites() -> [String] {
        for name in (try? FileIO.directoryEntries(temporaryDirectory)) ?? [] {
            try? FileIO.removeItem(temporaryDirectory + "/" + name)
        }
        var recovered: [String] = []
        for name in (try? FileIO.directoryEntries(stagingDirectory)) ?? [] {
            let document = StagingName.document(fromStagingName: name) ?? "(unknown: \(name))"
            let reason = "interrupted: DocFS stopped (a crash or a kill) before this write was committed; the document kept its previous version"
            if let kept = try? quarantine(absolutePath: stagingDirectory + "/" + name, for: document, reason: reason, tag: "interrupted") {
                recovered.append(kept)
            }
        }
        pruneQuarantine()
        return recovered
    }

    func absolute(_ path: String) -> String { path.isEmpty ? root : root + "/" + path }

    private let processID = getpid()

    private func uniqueName(_ tag: String) -> String {
        "\(tag)-\(processID)-\(counter.add(1, ordering: .relaxed).newValue)"
    }

    private func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var parts = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &parts)
        return String(format: "%04d%02d%02dT%02d%02d%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec, now.tv_nsec / 1_000_000)
    }

    // MARK: Reading

    public func status(of path: String) throws -> FileStatus { try FileStatus.of(path: absolute(path)) }

    public func status(of name: String, in directory: OwnedDescriptor) throws -> FileStatus {
        try FileStatus.of(name: name, in: directory.rawValue)
    }

    public func openDirectory(_ path: String) throws -> OwnedDescriptor {
        OwnedDescriptor(try FileIO.open(absolute(path), O_RDONLY | O_DIRECTORY | O_NOFOLLOW))
    }

    public func list(_ path: String) throws -> [StoreDirectoryEntry] {
        try FileIO.directoryEntriesWithTypes(absolute(path)).compactMap { name, type in
            if path.isEmpty && name == Self.privateAreaName { return nil }
            let kind: StoreDirectoryEntry.Kind = switch Int32(type) {
            case Int32(DT_REG): .regular
            case Int32(DT_DIR): .directory
            case Int32(DT_LNK): .symbolicLink
            case Int32(DT_UNKNOWN): .unknown
            default: .other
            }
            return StoreDirectoryEntry(name: name, kind: kind)
        }
    }

    public func openForReading(_ path: String) throws -> OwnedDescriptor {
        OwnedDescriptor(try FileIO.open(absolute(path), O_RDONLY | O_NOFOLLOW))
    }

    public func openInPlace(_ path: String, flags: Int32, mode: mode_t, owner: Ownership?) throws -> OwnedDescriptor {
        let full = absolute(path)
        let descriptor = try FileIO.open(full, flags | O_NOFOLLOW, mode: mode)
        if flags & O_CREAT != 0, let owner, canChangeOwner { fchown(descriptor, owner.userID, owner.groupID) }
        return OwnedDescriptor(descriptor)
    }

    public func fileWrapper(at path: String) throws -> FileWrapper {
        try FileWrapper(url: URL(fileURLWithPath: absolute(path)))
    }

    // MARK: Writing

    public func makeStagingFile(seededFrom source: OwnedDescriptor?, for document: String) throws -> StagingFile {
        // The name carries the document's path, so a stage a crash leaves behind can say whose it was.
        let stagingPath = stagingDirectory + "/" + uniqueName("stage") + "-" + StagingName.encode(document)
        let descriptor = OwnedDescriptor(try FileIO.open(stagingPath, O_RDWR | O_CREAT | O_EXCL, mode: 0o600))
        if let source {
            do {
                try FileIO.copyContents(from: source.rawValue, to: descriptor.rawValue, path: stagingPath)
            } catch {
                // A copy that failed (a full disk) must not leave a partial stage holding space.
                unlink(stagingPath)
                throw error
            }
        }
        return StagingFile(path: stagingPath, descriptor: descriptor)
    }

    public func install(_ staging: StagingFile, at path: String, durable: Bool) throws -> FileStatus {
        let destination = absolute(path)
        if let existing = try? FileStatus.of(path: destination), existing.kind == .regular {
            try copyMetadata(from: destination, existing: existing, to: staging.descriptor.rawValue, path: staging.path)
        }
        if durable { try FileIO.synchronize(staging.descriptor.rawValue, dataOnly: true, path: staging.path) }
        try FileIO.rename(staging.path, destination)
        if durable { try FileIO.synchronizeDirectory(containing: destination) }
        return try staging.status()
    }

    public func synchronize(_ path: String) throws {
        let full = absolute(path)
        try synchronizeTree(full)
        try FileIO.synchronizeDirectory(containing: full)
    }

    public func persist(_ wrapper: FileWrapper, at path: String, durable: Bool) throws -> FileStatus {
        let destination = absolute(path)
        let existing = try? FileStatus.of(path: destination)
        let temporary = temporaryDirectory + "/" + uniqueName("persist")
        do {
            // Files of a package that the document carried forward unchanged are hard-linked, never
            // copied: the store replaces files, it never modifies them in place.
            try wrapper.write(
                to: URL(fileURLWithPath: temporary), options: [.linkingUnchangedFiles],
                originalContentsURL: existing?.kind == .directory ? URL(fileURLWithPath: destination) : nil)
            if let existing, existing.kind == .regular {
                let descriptor = try FileIO.open(temporary, O_RDONLY | O_NOFOLLOW)
                defer { FileIO.close(descriptor) }
                try copyMetadata(from: destination, existing: existing, to: descriptor, path: temporary)
            }
            if durable { try synchronizeTree(temporary) }
            try FileIO.replaceItem(at: destination, with: temporary)
            if durable { try FileIO.synchronizeDirectory(containing: destination) }
        } catch {
            try? FileIO.removeItem(temporary)
            throw error
        }
        return try FileStatus.of(path: destination)
    }

    /// fsyncs every file and folder of a freshly written item, folders after their contents.
    private func synchronizeTree(_ full: String) throws {
        let status = try FileStatus.of(path: full)
        guard status.kind == .regular || status.kind == .directory else { return }
        if status.kind == .directory {
            for name in try FileIO.directoryEntries(full) { try synchronizeTree(full + "/" + name) }
        }
        let descriptor = try FileIO.open(full, O_RDONLY | O_NOFOLLOW)
        defer { FileIO.close(descriptor) }
        try FileIO.synchronize(descriptor, path: full)
    }

    public func quarantine(_ staging: StagingFile, for path: String, reason: String) throws -> String {
        try quarantine(absolutePath: staging.path, for: path, reason: reason, tag: "rejected")
    }

    public func quarantineCopy(of staging: StagingFile, for path: String, reason: String) throws -> String {
        let copy = try makeStagingFile(seededFrom: staging.descriptor, for: path)
        do {
            return try quarantine(absolutePath: copy.path, for: path, reason: reason, tag: "rejected")
        } catch {
            discard(copy)
            throw error
        }
    }

    public func quarantineItem(_ item: String, for path: String, reason: String) throws -> String {
        try quarantine(absolutePath: absolute(item), for: path, reason: reason, tag: "rejected")
    }

    /// Moves an item into the quarantine under a name that sorts by time, with a `.reason` file
    /// beside it naming the document, the time and why.
    private func quarantine(absolutePath: String, for path: String, reason: String, tag: String) throws -> String {
        let time = timestamp()
        let base = quarantineDirectory + "/" + time + "-" + uniqueName(tag) + "-" + StagingName.encode(path)
        try FileIO.rename(absolutePath, base)
        let note = "document: \(path)\ntime: \(time)\nreason: \(reason)\n"
        if let descriptor = try? FileIO.open(base + ".reason", O_WRONLY | O_CREAT | O_TRUNC, mode: 0o600) {
            try? FileIO.writeAll(descriptor, Data(note.utf8))
            FileIO.close(descriptor)
        }
        pruneQuarantine(keeping: base)
        return base
    }

    /// Removes the oldest quarantined items until the quarantine is within its limits; the item
    /// just kept (`keeping`) is never removed. Returns the items removed.
    @discardableResult
    public func pruneQuarantine(keeping newest: String? = nil) -> [String] {
        pruning.withLock { _ in
            let items = Quarantine.items(in: quarantineDirectory)
            let now = Date()
            var total = items.reduce(0) { $0 + $1.bytes }
            var removed: [String] = []
            for item in items where item.path != newest {
                let tooOld = now.timeIntervalSince(item.date) > quarantineLimits.maximumAge
                guard tooOld || total > quarantineLimits.maximumBytes else { continue }
                try? FileIO.removeItem(item.path)
                unlink(item.path + ".reason")
                total -= item.bytes
                removed.append(item.path)
            }
            return removed
        }
    }

    public func cloneDirectory(_ path: String) throws -> String {
        let clone = Self.privateAreaName + "/tmp/" + uniqueName("package")
        do {
            try linkClone(absolute(path), to: absolute(clone))
        } catch {
            try? FileIO.removeItem(absolute(clone))
            throw error
        }
        return clone
    }

    private func linkClone(_ source: String, to destination: String) throws {
        let status = try FileStatus.of(path: source)
        try retryingOnInterrupt("mkdir", path: destination) { mkdir(destination, status.permissions) }
        if canChangeOwner { lchown(destination, status.userID, status.groupID) }
        for name in (try? extendedAttributeNames(relativeOrAbsolute: source)) ?? [] {
            guard let value = try? rawExtendedAttribute(source, name: name) else { continue }
            _ = value.withUnsafeBytes { lsetxattr(destination, name, $0.baseAddress, $0.count, 0) }
        }
        for entry in try FileIO.directoryEntriesWithTypes(source) {
            let from = source + "/" + entry.name
            let to = destination + "/" + entry.name
            switch Int32(entry.type) {
            case Int32(DT_DIR): try linkClone(from, to: to)
            case Int32(DT_LNK):
                let target = try symbolicLinkTarget(relativeOrAbsolute: from)
                try retryingOnInterrupt("symlink", path: to) { Glibc.symlink(target, to) }
            default:
                try retryingOnInterrupt("link", path: to) { Glibc.link(from, to) }
            }
        }
        var times = [status.accessTime, status.modificationTime]
        utimensat(AT_FDCWD, destination, &times, AT_SYMLINK_NOFOLLOW)
    }

    public func replaceDirectory(at path: String, with prepared: String) throws {
        try FileIO.replaceItem(at: absolute(path), with: absolute(prepared))
    }

    public func removePrivateItem(_ item: String) {
        try? FileIO.removeItem(absolute(item))
    }

    public func discard(_ staging: StagingFile) {
        unlink(staging.path)
    }

    public func releaseSpace(of staging: StagingFile) {
        _ = ftruncate(staging.descriptor.rawValue, 0)
        unlink(staging.path)
    }

    /// The replaced file's permissions, owner and user extended attributes go to its successor, so
    /// a save through DocFS is as invisible to them as an in-place write.
    private func copyMetadata(from source: String, existing: FileStatus, to descriptor: Int32, path: String) throws {
        // A write clears set-user-ID and set-group-ID, as the kernel would on a local disk.
        fchmod(descriptor, existing.permissions & ~mode_t(S_ISUID | S_ISGID))
        if canChangeOwner { fchown(descriptor, existing.userID, existing.groupID) }
        for name in (try? extendedAttributeNames(relativeOrAbsolute: source)) ?? [] {
            guard let value = try? rawExtendedAttribute(source, name: name) else { continue }
            _ = value.withUnsafeBytes { fsetxattr(descriptor, name, $0.baseAddress, $0.count, 0) }
        }
    }

    public func createEmptyFile(_ path: String, mode: mode_t, owner: Ownership?) throws {
        let full = absolute(path)
        let descriptor = try FileIO.open(full, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode)
        defer { FileIO.close(descriptor) }
        if let owner, canChangeOwner { fchown(descriptor, owner.userID, owner.groupID) }
    }

    public func makeDirectory(_ path: String, mode: mode_t, owner: Ownership?) throws {
        let full = absolute(path)
        try retryingOnInterrupt("mkdir", path: full) { mkdir(full, mode) }
        if let owner, canChangeOwner { lchown(full, owner.userID, owner.groupID) }
    }

    public func removeDirectory(_ path: String) throws {
        let full = absolute(path)
        try retryingOnInterrupt("rmdir", path: full) { rmdir(full) }
    }

    public func removeFile(_ path: String) throws {
        let full = absolute(path)
        try retryingOnInterrupt("unlink", path: full) { unlink(full) }
    }

    public func rename(_ source: String, to destination: String, flags: UInt32) throws {
        try FileIO.rename(absolute(source), absolute(destination), flags: flags)
    }

    public func makeSymbolicLink(_ path: String, target: String, owner: Ownership?) throws {
        let full = absolute(path)
        try retryingOnInterrupt("symlink", path: full) { Glibc.symlink(target, full) }
        if let owner, canChangeOwner { lchown(full, owner.userID, owner.groupID) }
    }

    public func symbolicLinkTarget(_ path: String) throws -> String {
        try symbolicLinkTarget(relativeOrAbsolute: absolute(path))
    }

    private func symbolicLinkTarget(relativeOrAbsolute full: String) throws -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = try retryingOnInterrupt("readlink", path: full) { readlink(full, &buffer, buffer.count - 1) }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public func makeHardLink(_ path: String, to existing: String) throws {
        let full = absolute(path)
        let source = absolute(existing)
        try retryingOnInterrupt("link", path: full) { Glibc.link(source, full) }
    }

    public func setPermissions(_ path: String, _ mode: mode_t) throws {
        let full = absolute(path)
        try retryingOnInterrupt("chmod", path: full) { chmod(full, mode & 0o7777) }
    }

    public func setOwner(_ path: String, _ owner: Ownership) throws {
        let full = absolute(path)
        try retryingOnInterrupt("chown", path: full) { lchown(full, owner.userID, owner.groupID) }
    }

    public func setTimes(_ path: String, access: timespec, modification: timespec) throws {
        let full = absolute(path)
        var times = [access, modification]
        try retryingOnInterrupt("utimensat", path: full) { utimensat(AT_FDCWD, full, &times, AT_SYMLINK_NOFOLLOW) }
    }

    public func truncate(_ path: String, size: Int64) throws {
        let full = absolute(path)
        try retryingOnInterrupt("truncate", path: full) { Glibc.truncate(full, off_t(size)) }
    }

    // MARK: Extended attributes

    public func extendedAttribute(_ path: String, name: String) throws -> [UInt8] {
        try rawExtendedAttribute(absolute(path), name: name)
    }

    private func rawExtendedAttribute(_ full: String, name: String) throws -> [UInt8] {
        while true {
            let size = try retryingOnInterrupt("getxattr", path: full) { lgetxattr(full, name, nil, 0) }
            var value = [UInt8](repeating: 0, count: size)
            let read = lgetxattr(full, name, &value, size)
            if read >= 0 { return Array(value[0..<read]) }
            if errno != ERANGE { throw SystemCallError.last("getxattr", path: full) }
        }
    }

    public func setExtendedAttribute(_ path: String, name: String, value: UnsafeRawBufferPointer, flags: Int32) throws {
        let full = absolute(path)
        try retryingOnInterrupt("setxattr", path: full) { lsetxattr(full, name, value.baseAddress, value.count, flags) }
    }

    public func extendedAttributeNames(_ path: String) throws -> [String] {
        try extendedAttributeNames(relativeOrAbsolute: absolute(path))
    }

    private func extendedAttributeNames(relativeOrAbsolute full: String) throws -> [String] {
        while true {
            let size = try retryingOnInterrupt("listxattr", path: full) { llistxattr(full, nil, 0) }
            if size == 0 { return [] }
            var buffer = [CChar](repeating: 0, count: size)
            let read = llistxattr(full, &buffer, size)
            if read >= 0 {
                return buffer[0..<read].split(separator: 0).map { String(decoding: $0.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
            }
            if errno != ERANGE { throw SystemCallError.last("listxattr", path: full) }
        }
    }

    public func removeExtendedAttribute(_ path: String, name: String) throws {
        let full = absolute(path)
        try retryingOnInterrupt("removexattr", path: full) { lremovexattr(full, name) }
    }

    public func statistics() throws -> statvfs {
        var result = statvfs()
        try retryingOnInterrupt("statvfs", path: root) { statvfs(root, &result) }
        return result
    }
}
