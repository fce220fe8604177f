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
    public static let privateName = FileName(validating: ".docfs")

    public let rootURL: URL
    private let root: String
    /// The store and its private area, each held open: every path below them is resolved from
    /// these descriptors, never through a symbolic link (see `ConfinedTree`).
    private let rootTree: ConfinedTree
    private let privateTree: ConfinedTree?
    /// The staging folder, a tree of its own: every commit creates and renames a file in it, and
    /// as a tree it is reached through its descriptor, without opening `.docfs/staging` each time.
    private let stagingTree: ConfinedTree?
    private let stagingDirectory: String
    private let temporaryDirectory: String
    public let quarantineDirectory: String
    private let counter = Atomic<UInt64>(0)
    /// Whether new items may be given to their requester (only root may chown).
    let canChangeOwner = geteuid() == 0
    /// Who the daemon is: what the kernel makes a new item's owner without being asked.
    private let daemonIdentity = Ownership(userID: geteuid(), groupID: getegid())
    /// The daemon's own umask, which every create it makes goes through. The kernel has already
    /// applied the requester's, so a mode the daemon's would cut (0620 under umask 022) is set
    /// again, exactly, on the new item.
    let daemonUmask = DirectoryStore.processUmask()
    /// How much the quarantine may keep before the oldest items are pruned.
    public let quarantineLimits: QuarantineLimits
    /// Serializes pruning, which lists and sizes the whole quarantine.
    private let pruning = OrderedMutex<Void>(.pruning, ())
    /// The numbers items are known by in the mount; nil for a store whose numbers are given by
    /// another (a database's mirror).
    let identities: ItemIdentities?
    let isReadOnly: Bool
    /// The documents' earlier versions (see `VersionArchive`); nil where the store has no private area.
    public let versions: VersionArchive?
    /// The versions a full store gave up (see `makeRoom`), for `docfs status` and `docfs versions`.
    public let versionsGivenUp: VersionsGivenUp?
    /// Held while versions make room on a full store (see `makeRoom`).
    let makingRoom = OrderedMutex(.makingRoom, ())
    /// Documents whose last version a removal under way kept in their removal area already
    /// (`keepVersion(ofRemoved:joining:as:)`), until the removal or the end of its change.
    let removalsKeptAhead = OrderedMutex<Set<PathKey>>(.leaf, [])
    /// Folder reads under way, and the replaced folders whose removal waits for them.
    let folderReads = OrderedMutex(.leaf, FolderReads())
    /// The numbers of the items a save in progress replaces, by the saved path, until the save is
    /// recorded (`recordSave`): where the save gave the document a new number, the history of the
    /// replaced number takes it (see `noteHistoryNumber`).
    let numbersReplaced = OrderedMutex<[PathKey: ReplacedNumbers]>(.leaf, [:])
    struct ReplacedNumbers {
        var numbers: [UInt64]
        /// The first went on under another name (see `noteHistoryNumber`).
        var movedAway: Bool
    }
    /// Whether saves and removals keep the version they replace (`--versions off` says no).
    public let keepsVersions: Bool
    /// Where packages' next versions are made ahead (`DirectoryStore+PreparedVersions`), and those made.
    let preparedDirectory: String?
    let preparedVersions = OrderedMutex<[(path: String, location: String)]>(.leaf, [])
    /// The latest request to prepare each package's version, by a number: an older request still
    /// queued is skipped, and a save waits for the one in hand instead of copying again.
    let preparationRequests = OrderedMutex<(next: UInt64, latest: [PathKey: UInt64])>(.leaf, (1, [:]))
    let preparing = DispatchQueue(label: "docfs-package-versions", qos: .utility)
    /// Whether a folder listing's inode numbers are the items' own (ext4, XFS, Btrfs, tmpfs): then
    /// a prepared version's files are compared by their listings alone.
    let listsItsInodes: Bool

    public enum OpenError: Error, CustomStringConvertible {
        case notADirectory(String)
        case untrustedPrivateArea(String, reason: String)
        public var description: String {
            switch self {
            case .notADirectory(let path): "\(path) is not a directory"
            case .untrustedPrivateArea(let path, let reason):
                "\(path) is not DocFS's private area: \(reason). Move it away (DocFS makes a new one) or fix it, then open the store again"
            }
        }
    }

    /// Opens the store at `path`, creating its private area. Writes that a crash interrupted
    /// (staging files left behind) are moved to the quarantine, never deleted; half-built
    /// temporary items are removed — the items they were to replace are intact.
    /// `readOnly` opens a store without creating its private area (for `docfs check` and `status`,
    /// which never write, and work on read-only stores).
    /// `keepsIdentities`: items keep their numbers across saves (see `ItemIdentities`); a store
    /// whose numbers come from elsewhere (a database's mirror) says no.
    public init(
        path: String, quarantineLimits: QuarantineLimits = QuarantineLimits(), readOnly: Bool = false, keepsIdentities: Bool = true,
        keepsVersions: Bool = true
    ) throws {
        self.quarantineLimits = quarantineLimits
        isReadOnly = readOnly
        // The root is the administrator's choice, links and all; everything below it is confined.
        let resolved = FileSystemPath.withCString(path, { realpath($0, nil) }).map { pointer in
            defer { free(pointer) }
            return FileSystemPath.string(fromCString: pointer)
        } ?? path
        let status = try FileStatus.of(path: resolved)
        guard status.kind == .directory else { throw OpenError.notADirectory(path) }
        listsItsInodes = Self.listsItsInodes(resolved)
        root = resolved
        rootURL = URL(fileURLWithPath: root, isDirectory: true)
        rootTree = try ConfinedTree(path: root)
        let privateArea = root + "/" + Self.privateAreaName
        stagingDirectory = privateArea + "/staging"
        temporaryDirectory = privateArea + "/tmp"
        quarantineDirectory = privateArea + "/" + Quarantine.folderName.string
        if !readOnly {
            try Self.makePrivateDirectory(privateArea)
        }
        privateTree = try Self.checkPrivateArea(privateArea, required: !readOnly).map { try ConfinedTree(path: $0, isPrivateArea: true) }
        if !readOnly {
            for directory in [stagingDirectory, temporaryDirectory, quarantineDirectory] { try Self.makePrivateDirectory(directory) }
        }
        stagingTree = readOnly ? nil : try ConfinedTree(path: stagingDirectory, isPrivateArea: true)
        let hasPrivateArea = privateTree != nil
        identities = keepsIdentities
            ? ItemIdentities(directory: hasPrivateArea ? privateArea : nil, probe: hasPrivateArea ? privateArea : nil, writable: !readOnly)
            : nil
        versions = hasPrivateArea ? VersionArchive(directory: privateArea + "/versions") : nil
        versionsGivenUp = hasPrivateArea ? VersionsGivenUp(path: privateArea + "/versions-given-up") : nil
        self.keepsVersions = keepsVersions && !readOnly && hasPrivateArea
        if self.keepsVersions {
            let prepared = privateArea + "/versions-pending"
            try Self.makePrivateDirectory(prepared)
            preparedDirectory = prepared
            versionsGivenUp?.makeRecord()
            removeLeftoverPreparedVersions()
        } else {
            preparedDirectory = nil
        }
        // Not read-only: a command reading the archive changes nothing in it, and may not read
        // the attribute namespace the daemon keeps its numbers in.
        if keysHistoriesByNumber && !readOnly {
            // Weak: the archive may outlive its store (a command that kept only the archive).
            versions?.keyByNumbers { [weak self] path in
                guard let self else { return .unknown }
                let full = absolute(path)
                do {
                    let number = try FileSystemPath.at(full) { directory, name in
                        historyNumber(of: try FileStatus.of(name: name, in: directory, path: full), at: AttributeTarget(name, in: directory))
                    }
                    return number.map { .numbered($0) } ?? .unknown
                } catch let error as SystemCallError where error.errno == ENOENT || error.errno == ENOTDIR {
                    return .none
                } catch {
                    return .unknown
                }
            }
        }
    }

    /// Whether the file system at `path` is one whose listings give each item's own inode number:
    /// others (overlayfs across its layers, FUSE file systems) may give other numbers, or one number
    /// for two items.
    private static func listsItsInodes(_ path: String) -> Bool {
        let type = FileSystemPath.withCString(path) { docfs_file_system_type($0) }
        let ext4 = 0xEF53, xfs = 0x5846_5342, btrfs = 0x9123_683E, tmpfs = 0x0102_1994
        return [ext4, xfs, btrfs, tmpfs].contains(type)
    }

    /// Makes a folder of the private area, or accepts the one there if it is a real folder (never
    /// a link: the path is resolved beneath the store). Its group is the daemon's, and it is not
    /// set-group-ID: a set-group-ID store (or one mounted `grpid`) gives its group to the folders
    /// made in it, and they to every stage, temporary file and quarantined copy made there.
    private static func makePrivateDirectory(_ path: String) throws {
        do {
            try Paths.makeDirectory(path, mode: 0o700)
        } catch let error as SystemCallError where error.errno == EEXIST {}
        let status = try FileStatus.of(path: path)
        guard status.kind == .directory else {
            throw OpenError.untrustedPrivateArea(path, reason: "it is not a folder")
        }
        // A folder someone else made is not taken over: `checkPrivateArea` refuses it.
        guard status.userID == geteuid() else { return }
        if status.groupID != getegid() { try Paths.setOwner(path, userID: geteuid(), groupID: getegid()) }
        if status.mode & 0o7777 != 0o700 { try Paths.setPermissions(path, 0o700) }
    }

    /// The private area holds other users' refused bytes and the stages that become documents:
    /// it must be a folder the daemon's user owns and nobody else can enter. One that is not (a
    /// link, a file, a folder someone else made) is refused rather than used. Returns its path,
    /// or nil when it is absent and not `required` (a read-only open of a store never mounted).
    private static func checkPrivateArea(_ path: String, required: Bool) throws -> String? {
        let status: FileStatus
        do {
            status = try FileStatus.of(path: path)
        } catch let error as SystemCallError where error.errno == ENOENT && !required {
            return nil
        }
        guard status.kind == .directory else {
            throw OpenError.untrustedPrivateArea(path, reason: status.kind == .symbolicLink ? "it is a symbolic link" : "it is not a folder")
        }
        guard status.userID == geteuid() else {
            throw OpenError.untrustedPrivateArea(path, reason: "it belongs to uid \(status.userID), not to DocFS's user (uid \(geteuid()))")
        }
        if status.permissions & 0o077 != 0, required { try Paths.setPermissions(path, 0o700) }
        return path
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

    public func localPath(of path: String) -> String? { absolute(path) }

    private let processID = getpid()

    func uniqueName(_ tag: String) -> String {
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

    public func status(of path: String) throws -> FileStatus {
        let full = absolute(path)
        return try FileSystemPath.at(full) { directory, name in try identifiedStatus(name: name, in: directory, path: full, document: path) }
    }

    public func unnumberedStatus(of path: String) throws -> FileStatus {
        let full = absolute(path)
        return try FileSystemPath.at(full) { directory, name in try identifiedStatus(name: name, in: directory, path: full, document: path, numbered: false) }
    }

    public func status(of name: FileName, in directory: OwnedDescriptor, folder: String) throws -> FileStatus {
        try FileSystemPath.withCString(name.string) {
            try identifiedStatus(name: $0, in: directory.rawValue, path: name.string, document: StorePath.join(folder, name))
        }
    }

    public func openDirectory(_ path: String) throws -> OwnedDescriptor {
        OwnedDescriptor(try FileIO.open(absolute(path), O_RDONLY | O_DIRECTORY | O_NOFOLLOW))
    }

    public func list(_ path: String) throws -> [StoreDirectoryEntry] {
        let directory = try openDirectory(path)
        return try FileIO.listing(of: directory.rawValue, path: absolute(path)).compactMap { entry, type, inode in
            guard let name = try? FileName(entry) else { return nil }
            if path.isEmpty && name == Self.privateName { return nil }
            let kind: StoreDirectoryEntry.Kind = switch Int32(type) {
            case Int32(DT_REG): .regular
            case Int32(DT_DIR): .directory
            case Int32(DT_LNK): .symbolicLink
            case Int32(DT_FIFO): .fifo
            case Int32(DT_SOCK): .socket
            case Int32(DT_CHR): .characterDevice
            case Int32(DT_BLK): .blockDevice
            default: .unknown
            }
            return StoreDirectoryEntry(name: name, kind: kind, identity: listedIdentity(of: name, kind: kind, inode: inode, in: directory, folder: path))
        }
    }

    public func openForReading(_ path: String) throws -> OwnedDescriptor {
        OwnedDescriptor(try FileIO.open(absolute(path), O_RDONLY | O_NOFOLLOW))
    }

    public func openInPlace(_ path: String, flags: Int32, mode: mode_t, owner: Ownership?) throws -> OwnedDescriptor {
        let full = absolute(path)
        guard flags & O_CREAT != 0 else { return OwnedDescriptor(try FileIO.open(full, flags | O_NOFOLLOW, mode: mode)) }
        // Made exclusively first, so the mode and owner are given only to a file this call made
        // (and made again if it is removed between the two opens).
        var attempts = 0
        while true {
            attempts += 1
            do {
                let descriptor = try FileIO.open(full, flags | O_EXCL | O_NOFOLLOW, mode: mode)
                giveNewItem(descriptor, mode: mode, owner: owner, at: full)
                return OwnedDescriptor(descriptor)
            } catch let error as SystemCallError where error.errno == EEXIST && flags & O_EXCL == 0 {
                do {
                    return OwnedDescriptor(try FileIO.open(full, flags & ~O_CREAT | O_NOFOLLOW, mode: mode))
                } catch let error as SystemCallError where error.errno == ENOENT && attempts < 8 {
                    continue
                }
            }
        }
    }

    /// A file this store just made gets its requester as owner, then exactly the mode asked for:
    /// in that order, so a set-ID bit is not cleared by the chown, and the file is never writable
    /// by others while it still belongs to the daemon. Under a folder's default ACL the file
    /// system gave the permissions (a chmod would overrule the ACL): only set-ID bits a chown
    /// cleared are given back.
    private func giveNewItem(_ descriptor: Int32, mode: mode_t, owner: Ownership?, at full: String) {
        let newOwner = ownerToSet(for: owner, at: full)
        if let newOwner { fchown(descriptor, newOwner.userID, newOwner.groupID) }
        let setID = newOwner != nil && mode & (S_ISUID | S_ISGID) != 0
        // The file system made it with the mode asked for, less the daemon's umask.
        guard mode & daemonUmask != 0 || setID else { return }
        if Self.inheritsDefaultACL(full) {
            if setID, let made = try? FileStatus.of(descriptor: descriptor) { fchmod(descriptor, made.permissions | (mode & (S_ISUID | S_ISGID))) }
        } else {
            fchmod(descriptor, mode)
        }
    }

    public func inheritsDefaultACL(_ path: String) -> Bool { Self.inheritsDefaultACL(absolute(path)) }

    /// Whether the folder holding `full` has a default ACL (`system.posix_acl_default`).
    private static func inheritsDefaultACL(_ full: String) -> Bool {
        let parent = full.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(full[..<$0]) } ?? "."
        return (try? Paths.extendedAttribute(parent, name: "system.posix_acl_default"))?.isEmpty == false
    }

    public func fileWrapper(at path: String) throws -> FileWrapper {
        // Not a directory URL: Foundation would find out with a stat of its own, by the whole path.
        try FileWrapper(url: URL(fileURLWithPath: absolute(path), isDirectory: false))
    }

    /// Read through `/proc/self/fd/N/.` of the folder, opened beneath the store with no link
    /// followed, and confined there as the store is (a `ConfinedTree`): each member is resolved
    /// beneath the open folder, wherever it has moved, and never through a link.
    /// A folder that a change replaces meanwhile is removed only after the read (`readingFolder`):
    /// what is read is one version of the folder, whole.
    public func withFolderWrapper<T>(at path: String, _ body: (FileWrapper, FileStatus) throws -> T) throws -> T {
        try readingFolder { try readFolder(at: path, body) }
    }

    private func readFolder<T>(at path: String, _ body: (FileWrapper, FileStatus) throws -> T) throws -> T {
        let folder = try openDirectory(path)
        let status = try folder.status(path: path)
        // "/." so the magic link is followed to the folder: its own status would be a link's.
        let tree = ConfinedTree(descriptor: folder, path: "/proc/self/fd/\(folder.rawValue)/.")
        defer { tree.release() }
        let wrapper = try FileWrapper(url: URL(fileURLWithPath: tree.path, isDirectory: true))
        wrapper.filename = StorePath.lastComponent(path)
        wrapper.preferredFilename = wrapper.filename
        return try body(wrapper, status)
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
                Paths.remove(stagingPath)
                throw error
            }
        }
        return StagingFile(path: stagingPath, descriptor: descriptor)
    }

    public func install(_ staging: StagingFile, at path: String, durable: Bool) throws -> FileStatus {
        let destination = absolute(path)
        let existing = try? FileStatus.of(path: destination)
        if let existing, existing.kind == .regular {
            try copyMetadata(from: destination, existing: existing, to: staging.descriptor.rawValue, inode: staging.inode, path: staging.path)
        }
        if durable { try FileIO.synchronize(staging.descriptor.rawValue, dataOnly: true, path: staging.path) }
        if let existing, existing.kind == .regular, existing.size == 0, !durable,
           (try? FileIO.exchange(staging.path, destination, movesFolder: false)) != nil {
            // Over an empty draft (a file just created), swap and drop the draft: a rename over an
            // existing file makes ext4 (auto_da_alloc) start writing the new data back before the
            // rename returns, a third of a small file's commit. That heuristic guards the old
            // content against a crash; an empty draft has none to guard.
            do {
                try Paths.removeFile(staging.path)
            } catch let error as SystemCallError where error.errno == EISDIR {
                // A folder put there beside the mount since it was looked at went with the exchange:
                // the folders resolved before are resolved again.
                ConfinedTree.resolveFoldersAgain()
            } catch {}
        } else {
            // A stage is a file: it replaces a file or nothing (a folder there fails EISDIR).
            try FileIO.rename(staging.path, destination, movesFolder: false)
        }
        if durable { try FileIO.synchronizeDirectory(containing: destination) }
        return try staging.status()
    }

    public func synchronize(_ path: String) throws {
        let full = absolute(path)
        try synchronizeTree(full)
        try FileIO.synchronizeDirectory(containing: full)
    }

    public func synchronizeDirectory(_ path: String) throws {
        let full = absolute(path)
        let descriptor = try FileIO.open(full, O_RDONLY | O_DIRECTORY)
        defer { FileIO.close(descriptor) }
        try FileIO.synchronize(descriptor, path: full)
    }

    public func persist(_ wrapper: FileWrapper, at path: String, durable: Bool, publishing publish: Publication) throws -> FileStatus {
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
                try copyMetadata(from: destination, existing: existing, to: descriptor, inode: nil, path: temporary)
            } else if let existing, existing.kind == .directory {
                carryIdentities(from: destination, to: temporary)
            }
            if durable { try synchronizeTree(temporary) }
            try replace(destination, with: temporary, publishing: publish)
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

    public func quarantine(_ staging: StagingFile, for path: String, reason: String, owner: Ownership?) throws -> String {
        try quarantine(absolutePath: staging.path, for: path, reason: reason, tag: "rejected", owner: owner)
    }

    public func quarantineCopy(of staging: StagingFile, for path: String, reason: String, owner: Ownership?) throws -> String {
        let copy = try makeStagingFile(seededFrom: staging.descriptor, for: path)
        do {
            return try quarantine(absolutePath: copy.path, for: path, reason: reason, tag: "rejected", owner: owner)
        } catch {
            discard(copy)
            throw error
        }
    }

    public func quarantineItem(_ item: String, for path: String, reason: String, owner: Ownership?) throws -> String {
        try quarantine(absolutePath: absolute(item), for: path, reason: reason, tag: "rejected", owner: owner)
    }

    /// Moves an item into the quarantine under a name that sorts by time, with a `.reason` file
    /// beside it naming the document, the time and why. Both are given to `owner`, so the mount's
    /// quarantine view shows them to that user (the folders above stay the daemon's, 0700).
    private func quarantine(absolutePath: String, for path: String, reason: String, tag: String, owner: Ownership? = nil) throws -> String {
        let time = timestamp()
        let base = quarantineDirectory + "/" + time + "-" + uniqueName(tag) + "-" + StagingName.encode(path)
        try FileIO.rename(absolutePath, base)
        StoreMetrics.quarantinedItems.increment()
        StoreMetrics.quarantinedBytes.increment(by: Int((try? FileStatus.of(path: base))?.size ?? 0))
        if let owner, canChangeOwner { try? Paths.setOwner(base, userID: owner.userID, groupID: owner.groupID) }
        let note = Quarantine.Note(document: path, time: time, reason: reason)
        if let descriptor = try? FileIO.open(base + ".reason", O_WRONLY | O_CREAT | O_EXCL, mode: 0o600) {
            if let owner, canChangeOwner { fchown(descriptor, owner.userID, owner.groupID) }
            try? FileIO.writeAll(descriptor, note.data)
            FileIO.close(descriptor)
        }
        pruneQuarantine(keeping: base)
        return base
    }

    /// The quarantined items, oldest first.
    public var quarantinedItems: [Quarantine.Item] { Quarantine.items(in: quarantineDirectory) }

    /// Removes one quarantined item and its note.
    public func removeQuarantined(_ item: Quarantine.Item) throws {
        try FileIO.removeItem(item.path)
        Paths.remove(item.path + ".reason")
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
            for item in items where !(newest.map { FileSystemPath.same(item.path, $0) } ?? false) {
                let tooOld = now.timeIntervalSince(item.date) > quarantineLimits.maximumAge
                guard tooOld || total > quarantineLimits.maximumBytes else { continue }
                try? FileIO.removeItem(item.path)
                Paths.remove(item.path + ".reason")
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
        try Paths.makeDirectory(destination, mode: status.permissions)
        if canChangeOwner { try? Paths.setOwner(destination, userID: status.userID, groupID: status.groupID) }
        for name in (try? extendedAttributeNames(relativeOrAbsolute: source)) ?? [] where name != identities?.attributeName {
            guard let value = try? rawExtendedAttribute(source, name: name) else { continue }
            try? value.withUnsafeBytes { try Paths.setExtendedAttribute(destination, name: name, value: $0, flags: 0) }
        }
        // The clone replaces the folder: it is known by the folder's number (its files are the
        // folder's own, linked).
        if let identity = identityToCarry(from: status, at: source), let attribute = identities?.attributeName,
           let made = try? FileStatus.of(path: destination) {
            _ = try? AttributeTarget.at(destination) { IdentityAttribute.write(identity, holder: made.inode, at: $0, name: attribute, exclusive: false) }
        }
        for entry in try FileIO.directoryEntriesWithTypes(source) {
            let from = source + "/" + entry.name
            let to = destination + "/" + entry.name
            switch Int32(entry.type) {
            case Int32(DT_DIR): try linkClone(from, to: to)
            case Int32(DT_LNK):
                try Paths.makeSymbolicLink(to, target: try Paths.symbolicLinkTarget(from))
            default:
                try Paths.makeHardLink(to, to: from)
            }
        }
        var times = [status.accessTime, status.modificationTime]
        try? Paths.setTimes(destination, &times)
    }

    public func replaceDirectory(at path: String, with prepared: String, publishing publish: Publication) throws {
        try replace(absolute(path), with: absolute(prepared), publishing: publish)
    }

    /// Puts the private item at `prepared` (absolute) in the place of `destination` (absolute) as
    /// `publish`'s step. The item it replaced is removed after the step, outside what lookups wait
    /// for, and after any folder read under way (`removeReplaced`); left over by a failure, it goes
    /// with the private area's cleanup at the next mount.
    private func replace(_ destination: String, with prepared: String, publishing publish: Publication) throws {
        var swapped = false
        try publish { swapped = try FileIO.swapIn(prepared, at: destination) }
        if swapped { removeReplaced(atAbsolutePath: prepared) }
    }

    /// The step of `replaceDirectory` alone (a shared store's mirror publishes it with its own
    /// bookkeeping): true when it swapped, leaving the replaced item at `prepared`.
    public func swapIn(_ prepared: String, at path: String) throws -> Bool {
        try FileIO.swapIn(absolute(prepared), at: absolute(path))
    }

    public func removePrivateItem(_ item: String) {
        try? FileIO.removeItem(absolute(item))
    }

    public func discard(_ staging: StagingFile) {
        Paths.remove(staging.path)
    }

    public func releaseSpace(of staging: StagingFile) {
        _ = ftruncate(staging.descriptor.rawValue, 0)
        Paths.remove(staging.path)
    }

    /// The replaced file's permissions, owner, extended attributes and number go to its successor,
    /// so a save through DocFS is as invisible to them as an in-place write.
    /// `inode`: the file system's number of `descriptor`'s file where known (read otherwise).
    private func copyMetadata(from source: String, existing: FileStatus, to descriptor: Int32, inode: UInt64?, path: String) throws {
        // The owner first: a chown clears set-user-ID and set-group-ID. Those bits are taken as
        // they are now: a write by someone without CAP_FSETID cleared them when it was made (see
        // DocumentFileSystem.dropSetIDBits). Always, for the daemon's own documents too: a stage
        // made in a set-group-ID folder (or one mounted grpid) has that folder's group.
        if canChangeOwner { fchown(descriptor, existing.userID, existing.groupID) }
        fchmod(descriptor, existing.permissions)
        assignIdentity(identityToCarry(from: existing, at: source), to: descriptor, inode: inode)
        // Not the save record: it is the replaced version's, and the new one gets its own.
        for name in (try? extendedAttributeNames(relativeOrAbsolute: source)) ?? []
        where name != identities?.attributeName && name != SaveRecord.attributeName && name != ArchivedLinks.attributeName {
            guard let value = try? rawExtendedAttribute(source, name: name) else { continue }
            _ = value.withUnsafeBytes { bytes in
                FileSystemPath.withCString(name) { fsetxattr(descriptor, $0, bytes.baseAddress, bytes.count, 0) }
            }
        }
    }

    /// The owner to give an item the daemon (root) just made for `requester`, or nil when the kernel
    /// gave it the right one: the requester, and the group of the directory when it is
    /// set-group-ID (which a local file system gives new items itself). A requester who is the
    /// daemon's own user and group needs no change (a create by root, the common case, costs no
    /// `stat` of the directory and no `chown`).
    private func ownerToSet(for requester: Ownership?, at full: String) -> Ownership? {
        guard let requester, canChangeOwner, requester != daemonIdentity else { return nil }
        let parent = full.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(full[..<$0]) } ?? "."
        guard let directory = try? FileStatus.of(path: parent), directory.mode & S_ISGID != 0 else { return requester }
        return Ownership(userID: requester.userID, groupID: directory.groupID)
    }

    @discardableResult
    public func createEmptyFile(_ path: String, mode: mode_t, owner: Ownership?) throws -> OwnedDescriptor {
        let full = absolute(path)
        // Read-write, so the mode a user gives (0200, say) cannot stop the daemon reading it back.
        let descriptor = OwnedDescriptor(try FileIO.open(full, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, mode: mode))
        giveNewItem(descriptor.rawValue, mode: mode, owner: owner, at: full)
        assignFreshIdentity(to: descriptor.rawValue)
        return descriptor
    }

    public func makeSpecialFile(_ path: String, mode: mode_t, device: dev_t, owner: Ownership?) throws {
        let full = absolute(path)
        try Paths.makeNode(full, mode: mode, device: device)
        if mode & daemonUmask != 0, !Self.inheritsDefaultACL(full) { try? Paths.setPermissions(full, mode & 0o7777) }
        if let owner = ownerToSet(for: owner, at: full) { try? Paths.setOwner(full, userID: owner.userID, groupID: owner.groupID) }
    }

    public func makeDirectory(_ path: String, mode: mode_t, owner: Ownership?) throws {
        let full = absolute(path)
        try Paths.makeDirectory(full, mode: mode)
        // A folder made in a set-group-ID folder inherits that bit, which the mode asked for lacks.
        if mode & daemonUmask != 0, !Self.inheritsDefaultACL(full), let made = try? FileStatus.of(path: full) {
            try? Paths.setPermissions(full, (mode | (made.mode & S_ISGID)) & 0o7777)
        }
        if let owner = ownerToSet(for: owner, at: full) { try? Paths.setOwner(full, userID: owner.userID, groupID: owner.groupID) }
        // A number never given again, as a new file gets: a folder renamed beside DocFS is then
        // known at its new name for what it is, and what is open below it follows it.
        if identities?.attributeName != nil, let folder = try? FileIO.open(full, O_RDONLY | O_DIRECTORY | O_NOFOLLOW) {
            assignFreshIdentity(to: folder)
            close(folder)
        }
    }

    /// The process's umask, from /proc (reading it with umask(2) would change it for a moment
    /// under every other thread); 022 where /proc does not say.
    private static func processUmask() -> mode_t {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }
        return line.flatMap { mode_t($0.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8) } ?? 0o022
    }

    // A directory store's changes are local: each is its own publication.

    public func removeDirectory(_ path: String, publishing publish: Publication) throws {
        let full = absolute(path)
        try publish { try Paths.removeDirectory(full) }
    }

    public func removeFile(_ path: String, publishing publish: Publication) throws {
        let full = absolute(path)
        try publish { try Paths.removeFile(full) }
    }

    public func rename(_ source: String, to destination: String, flags: UInt32, publishing publish: Publication) throws {
        let (from, to) = (absolute(source), absolute(destination))
        try publish { try FileIO.rename(from, to, flags: flags) }
    }

    public func makeSymbolicLink(_ path: String, target: String, owner: Ownership?) throws {
        let full = absolute(path)
        try Paths.makeSymbolicLink(full, target: target)
        if let owner = ownerToSet(for: owner, at: full) { try? Paths.setOwner(full, userID: owner.userID, groupID: owner.groupID) }
    }

    public func symbolicLinkTarget(_ path: String) throws -> String {
        try Paths.symbolicLinkTarget(absolute(path))
    }

    public func makeHardLink(_ path: String, to existing: String) throws {
        try Paths.makeHardLink(absolute(path), to: absolute(existing))
    }

    public func setPermissions(_ path: String, _ mode: mode_t) throws {
        let full = absolute(path)
        try Paths.setPermissions(full, mode & 0o7777)
    }

    public func setOwner(_ path: String, _ owner: Ownership) throws {
        let full = absolute(path)
        try Paths.setOwner(full, userID: owner.userID, groupID: owner.groupID)
    }

    public func setTimes(_ path: String, access: timespec, modification: timespec) throws {
        let full = absolute(path)
        var times = [access, modification]
        try Paths.setTimes(full, &times)
    }

    public func truncate(_ path: String, size: Int64) throws {
        let full = absolute(path)
        let descriptor = try FileIO.open(full, O_WRONLY | O_NOFOLLOW)
        defer { FileIO.close(descriptor) }
        try retryingOnInterrupt("truncate", path: full) { ftruncate(descriptor, off_t(size)) }
    }

    // MARK: Extended attributes

    public func extendedAttribute(_ path: String, name: String) throws -> [UInt8] {
        try Paths.extendedAttribute(absolute(path), name: name)
    }

    private func rawExtendedAttribute(_ full: String, name: String) throws -> [UInt8] {
        try Paths.extendedAttribute(full, name: name)
    }

    public func setExtendedAttribute(_ path: String, name: String, value: UnsafeRawBufferPointer, flags: Int32) throws {
        try Paths.setExtendedAttribute(absolute(path), name: name, value: value, flags: flags)
    }

    public func extendedAttributeNames(_ path: String) throws -> [String] {
        try Paths.extendedAttributeNames(absolute(path))
    }

    private func extendedAttributeNames(relativeOrAbsolute full: String) throws -> [String] {
        try Paths.extendedAttributeNames(full)
    }

    public func removeExtendedAttribute(_ path: String, name: String) throws {
        try Paths.removeExtendedAttribute(absolute(path), name: name)
    }

    public func statistics() throws -> statvfs {
        var result = statvfs()
        try retryingOnInterrupt("statvfs", path: root) { FileSystemPath.withCString(root) { statvfs($0, &result) } }
        return result
    }
}
