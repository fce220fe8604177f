import Foundation
import Glibc
import SystemSupport

/// Keeping the versions a save replaces (see `VersionArchive`), and dropping them as they age.
extension DirectoryStore {
    public func keepVersion(of path: String, copying: Bool) throws {
        try keepVersion(of: path, copying: copying, as: nil)
    }

    public func keepVersion(ofRemoved path: String, joining removed: String, as document: RemovedDocument) throws {
        // The record first: an earlier removal's may admit more people than this document does,
        // and the version must never be readable by them, not even until the removal records it
        // (or if the removal then fails: the version stays there, under the narrowed record).
        let kept = try keepVersion(of: path, copying: false, as: nil, joining: removed) {
            versions?.recordRemovedDocument(removed, as: document, makingFolder: true)
        }
        if kept != nil { removalsKeptAhead.withLock { _ = $0.insert(PathKey(path)) } }
    }

    public func dropPendingVersions(of paths: [String]) {
        removalsKeptAhead.withLock { kept in for path in paths { kept.remove(PathKey(path)) } }
    }

    public func remove(_ path: String, directory: Bool, retiring: RemovedDocument?, publishing publish: Publication) throws {
        if directory { try removeDirectory(path, publishing: publish) } else { try removeFile(path, publishing: publish) }
        guard let retiring else { return }
        let removed = VersionArchive.removedPath(of: path, owner: retiring.status.userID)
        // Recorded only for a history that goes there (or a version kept there ahead): an empty
        // package made and removed again at the path narrows nobody's record.
        let keptAhead = removalsKeptAhead.withLock { $0.remove(PathKey(path)) != nil }
        let hadHistory = keptAhead || versions?.index.documents.contains(Array(path.utf8)) == true
        moveVersions(from: path, to: removed, exchanging: false)
        if hadHistory { versions?.recordRemovedDocument(removed, as: retiring) }
    }

    /// `keepVersion(of:copying:)` under the save time and saver `record` (those of the item's own
    /// record, or its modification time, where nil), in the history of `history` where given (a
    /// removed document's, see `keepVersion(ofRemoved:joining:as:)`) rather than of `path`;
    /// `beforeKeeping` runs once a version is to be kept, before it is. Returns where the version
    /// went; nil where nothing was kept.
    @discardableResult
    public func keepVersion(
        of path: String, copying: Bool, as record: SaveRecord?, joining history: String? = nil, beforeKeeping: () -> Void = {}
    ) throws -> String? {
        guard keepsVersions, let versions else { return nil }
        let full = absolute(path)
        // The document's own history is its number's (see `VersionArchive`); a removed one's
        // history, joined, is nobody's number.
        guard let (status, number) = try? FileSystemPath.at(full, { directory, name in
            let status = try FileStatus.of(name: name, in: directory, path: full)
            return (status, history == nil ? historyNumber(of: status, at: AttributeTarget(name, in: directory)) : nil)
        }) else {
            if history == nil { noteHistoryNumber(nil, of: path, movedAway: copying) }
            return nil
        }
        // Noted before anything can stop the version (an empty file, a full disk, the item kept
        // already): the save installs a new number whether or not a version is kept, and the
        // history must take it (see `recordSave`).
        if history == nil { noteHistoryNumber(number, of: path, movedAway: copying) }
        switch status.kind {
        case .regular where status.size > 0, .directory: break
        // An empty file is a draft being made (`touch`, a copy's first step): nothing to go back to.
        default: return nil
        }
        beforeKeeping()
        let given = record
        var record = given ?? SaveRecord.read(at: full) ?? SaveRecord(time: status.modificationTime, userID: nil)
        // Saved where DocFS did not see who could reach it (beside the mount, by an earlier DocFS,
        // its record lost, or changed beside the mount since DocFS saved it): judged by its folders
        // as they are now, the last it was the document.
        let foundReach = !record.knowsReach || (given == nil && record.predates(status))
        if foundReach {
            record.unreachable = unreachableBits(of: path)
            record.knowsReach = true
        }
        // A file with other names in the store (a hard link, raw and written in place) would change
        // its version through them: such a file, or one that stays in use, is copied. One that is
        // going is linked: no byte copied, and the version keeps the mode and owner it had.
        let archived = status.linkCount > 1 ? ArchivedLinks.count(of: full) : 0
        let otherNames = max(1, ArchivedLinks.storeNames(of: status, archived: archived)) - 1
        // A record to write goes on a file that will be linked in before it is (the file is leaving
        // its name): the version is never seen without it.
        if given != nil || foundReach, status.kind == .regular, !copying, otherNames == 0 {
            do { try record.writeOrThrow(at: full) } catch { if record.unreachable != 0 { throw error } }
        }
        // A package's version made ahead, if it is still the package's content: renamed in.
        let prepared = status.kind == .directory ? takePreparedVersion(of: path) : nil
        var preparedUsed = false
        defer { if let prepared, !preparedUsed { Self.removePrepared(prepared) } }
        // Linked in, the version is the document's file, which carries its record already (its
        // own, or the one written on it above).
        var linked = false
        let kept = try versions.addVersion(of: history ?? path, number: number, record: record, inode: status.inode) { target in
            if let prepared {
                try FileIO.rename(prepared, target, flags: 1)
                preparedUsed = true
                return
            }
            if status.kind == .directory {
                try linkCopy(ofFolder: full, status: status, to: target)
                return
            }
            if !copying && otherNames == 0 {
                do {
                    try Paths.makeHardLink(target, to: full)
                    linked = true
                    // Set through the document's own name, whose count was just read (or is 0).
                    ArchivedLinks.set(full, to: archived + 1)
                    return
                } catch let error as SystemCallError where error.errno == EMLINK || error.errno == EPERM {
                    // Too many links, or a file system without them: a copy will do.
                }
            }
            try copyFile(full, status: status, to: target)
        }
        guard let kept else { return nil }
        // Given, it is the version's own (the file's, if any, is another's): `savedBy` reads it there.
        // A version whose record cannot say what it keeps closed (a full disk; a copy whose
        // attributes did not all come along) is not kept open.
        if !linked, given != nil || foundReach || record.unreachable != 0, SaveRecord.read(at: kept) != record {
            do { try record.writeOrThrow(at: kept) } catch { if record.unreachable != 0 { try dropUnrecorded(kept, of: history ?? path, error) } }
        }
        StoreMetrics.versionBytes.increment(by: Double(status.kind == .regular ? status.blocks * 512 : 0))
        versions.added(history ?? path, at: kept)
        return kept
    }

    /// Notes `number`, that of the item a change at `path` is about to replace, for `recordSave`;
    /// nil forgets an earlier note (no item there now, or one with no number of its own).
    /// `movedAway`: the item goes on under another name (an editor's backup: vim's
    /// `backupcopy=no`, Emacs), and its history waits at `path` for the file saved there next,
    /// whatever is noted meanwhile (that file's empty draft, or no file).
    private func noteHistoryNumber(_ number: VersionArchive.HistoryNumber?, of path: String, movedAway: Bool) {
        numbersReplaced.withLock { noted in
            if !movedAway, let earlier = noted[PathKey(path)], earlier.movedAway {
                if let number, !earlier.numbers.contains(number.value) { noted[PathKey(path)]?.numbers.append(number.value) }
                return
            }
            guard let number else { noted.removeValue(forKey: PathKey(path)); return }
            // Bounded: a change never recorded as a save (it failed, or saved nothing) leaves its entry.
            if noted.count >= 4096 { noted.removeAll() }
            noted[PathKey(path)] = ReplacedNumbers(numbers: [number.value], movedAway: movedAway)
        }
    }

    /// The number a document's history is kept under: the item's (see `identity(of:at:)`), read
    /// without giving one. Nil where the store keeps no numbers that last (the history is then
    /// labelled by its path), or the item has none of its own.
    func historyNumber(of status: FileStatus, at target: AttributeTarget) -> VersionArchive.HistoryNumber? {
        guard keysHistoriesByNumber, let identities, let attribute = identities.attributeName,
              status.kind == .regular || status.kind == .directory
        else { return nil }
        switch IdentityAttribute.read(at: target, name: attribute, inode: status.inode) {
        // A copied number too: the item is its original moved to another file system (its first
        // lookup gives it a fresh number, and its history takes that) or a copy beside it (which
        // the archive tells apart: the original is still at its history's path).
        case .own(let kept), .unchecked(let kept), .copied(let kept): return .init(value: kept, travels: true)
        case .none: break
        }
        return identities.ownsNumber(status.inode) ? .init(value: status.inode, travels: false) : nil
    }

    /// Keeps `file`, the document at `path` as it was before a change made beside DocFS replaced or
    /// removed it (DocFS still holds it open), as a copy: its bytes are in use, or unnamed. Nothing
    /// when the archive holds that file already (a save through DocFS kept it).
    public func keepReplacedVersion(of path: String, file: OwnedDescriptor) throws {
        guard keepsVersions, let versions else { return }
        let status = try file.status()
        guard status.kind == .regular, status.size > 0, NumberAttribute.read(from: file.rawValue, name: ArchivedLinks.attributeName) == nil else { return }
        var record = SaveRecord.read(from: file) ?? SaveRecord(time: status.modificationTime, userID: nil)
        if !record.knowsReach || record.predates(status) {
            record = SaveRecord(time: record.time, userID: record.userID, unreachable: unreachableBits(of: path))
        }
        // Read as a save: the history goes on under the number of what replaced the document.
        versions.historyContinues(at: path)
        let kept = try versions.addVersion(of: path, record: record, inode: status.inode) { target in
            try copyFile(from: file, status: status, to: target)
        }
        guard let kept else { return }
        do { try record.writeOrThrow(at: kept) } catch { if record.unreachable != 0 { try dropUnrecorded(kept, of: path, error) } }
        versions.added(path, at: kept)
    }

    /// Takes back the version just kept at `kept` whose record, which says whom it is kept closed
    /// to, could not be written (`error`: a full disk, say): it would be open to them. Throws that
    /// error, which the change's caller reports as a version not kept.
    private func dropUnrecorded(_ kept: String, of document: String, _ error: any Error) throws -> Never {
        if let versions, let version = versions.version(of: document, named: StorePath.lastComponent(kept)) { try? versions.remove(version) }
        throw error
    }

    /// The most files a package's version links whole. A save in a package of more keeps the member
    /// it replaces instead: linking thousands of files at every save made a member save in a
    /// 3,000-member package 50 times slower.
    public static let wholePackageVersionLimit = 256

    public func keepsWholeVersion(ofPackage path: String) -> Bool {
        // Prepared only for a package within the limit (checked again when it is used).
        if preparedVersions.withLock({ $0.contains { FileSystemPath.same($0.path, path) } }) { return true }
        var budget = Self.wholePackageVersionLimit
        func fits(_ folder: String) -> Bool {
            for entry in (try? FileIO.directoryEntriesWithTypes(folder)) ?? [] {
                budget -= 1
                if budget < 0 { return false }
                if Int32(entry.type) == Int32(DT_DIR), !fits(folder + "/" + entry.name) { return false }
            }
            return true
        }
        return fits(absolute(path))
    }

    /// A copy of the file at `source` at `target`, made exclusively, with the file's mode, owner,
    /// times and attributes (but DocFS's own numbers), by reflink where the file system has it.
    private func copyFile(_ source: String, status: FileStatus, to target: String) throws {
        try copyFile(from: OwnedDescriptor(try FileIO.open(source, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)), status: status, to: target)
    }

    private func copyFile(from input: OwnedDescriptor, status: FileStatus, to target: String) throws {
        let output = OwnedDescriptor(try FileIO.open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode: 0o600))
        do {
            try FileIO.copyContents(from: input.rawValue, to: output.rawValue, path: target)
        } catch {
            Paths.remove(target)
            throw error
        }
        for attribute in (try? input.extendedAttributeNames()) ?? []
        where attribute != identities?.attributeName && attribute != ArchivedLinks.attributeName {
            guard let value = try? input.extendedAttribute(attribute) else { continue }
            try? value.withUnsafeBytes { try output.setExtendedAttribute(attribute, value: $0, flags: 0) }
        }
        giveAttributes(of: status, to: output.rawValue, always: true)
    }

    /// A folder at `target` of links to the files of the folder at `source` as they are now: each
    /// folder made anew with its mode, owner, attributes and times, files and symbolic links shared
    /// or copied. Done on descriptors, a call or two an item: it runs on every package save.
    func linkCopy(ofFolder source: String, status: FileStatus, to target: String) throws {
        let from = OwnedDescriptor(try FileIO.open(source, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC))
        try FileSystemPath.at(target) { parent, name in
            // Made here first: a name taken (EEXIST) is another version's, and left alone.
            try retryingOnInterrupt("mkdir", path: target) { mkdirat(parent, name, status.permissions & 0o777) }
            do {
                try linkCopy(of: from, status: status, into: parent, name: name, path: target)
            } catch {
                // The links made so far were counted: uncounted as they go.
                VersionArchive.releaseLinks(at: target)
                try? FileIO.removeItem(target)
                throw error
            }
        }
    }

    /// Fills the folder `name` in `parent`, just made, from the folder open as `source`.
    private func linkCopy(of source: OwnedDescriptor, status: FileStatus, into parent: Int32, name: UnsafePointer<CChar>, path: String) throws {
        let folder = OwnedDescriptor(try retryingOnInterrupt("open", path: path) { openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) })
        for entry in try FileIO.listing(of: source.rawValue, path: path) {
            try linkCopy(entry: entry.name, type: entry.type, of: source, into: folder, path: path)
        }
        for attribute in (try? source.extendedAttributeNames()) ?? [] where attribute != identities?.attributeName {
            guard let value = try? source.extendedAttribute(attribute) else { continue }
            try? value.withUnsafeBytes { try folder.setExtendedAttribute(attribute, value: $0, flags: 0) }
        }
        giveAttributes(of: status, to: folder.rawValue, always: false)
    }

    /// Puts the item `name` (of listed `type`) of the folder open as `source` into `folder`: a
    /// folder made anew and filled, a file linked, a symbolic link made again. The folder's own
    /// times are the caller's to give, after its last item.
    func linkCopy(entry name: String, type listedType: UInt8, of source: OwnedDescriptor, into folder: OwnedDescriptor, path: String) throws {
        // The name's own bytes (`FileSystemPath`), not its encoding's: a member whose name is
        // not UTF-8 would be missed, and the package's version not kept.
        try FileSystemPath.withCString(name) { entryName in
            var type = Int32(listedType)
            if type == Int32(DT_UNKNOWN) {
                // A file system that does not say in its listing (XFS without ftype).
                var raw = stat()
                try retryingOnInterrupt("stat", path: path) { fstatat(source.rawValue, entryName, &raw, AT_SYMLINK_NOFOLLOW) }
                switch raw.st_mode & S_IFMT {
                case S_IFDIR: type = Int32(DT_DIR)
                case S_IFLNK: type = Int32(DT_LNK)
                case S_IFREG: type = Int32(DT_REG)
                // A special file is linked, and not counted: only files' counts are ever lowered.
                default: type = Int32(DT_FIFO)
                }
            }
            switch type {
            case Int32(DT_DIR):
                let child = OwnedDescriptor(try retryingOnInterrupt("open", path: path) {
                    openat(source.rawValue, entryName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                })
                let childStatus = try child.status(path: path)
                try retryingOnInterrupt("mkdir", path: path) { mkdirat(folder.rawValue, entryName, childStatus.permissions & 0o777) }
                try linkCopy(of: child, status: childStatus, into: folder.rawValue, name: entryName, path: path + "/" + name)
            case Int32(DT_LNK):
                var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let length = try retryingOnInterrupt("readlink", path: path) { readlinkat(source.rawValue, entryName, &buffer, buffer.count - 1) }
                buffer[length] = 0
                try retryingOnInterrupt("symlink", path: path) { symlinkat(buffer, folder.rawValue, entryName) }
            default:
                try retryingOnInterrupt("link", path: path) { linkat(source.rawValue, entryName, folder.rawValue, entryName, 0) }
                if type == Int32(DT_REG) {
                    ArchivedLinks.adjust(at: AttributeTarget(entryName, in: folder.rawValue), by: 1)
                }
            }
        }
    }

    /// The owner, mode and times of `status`, on an item the daemon just made. `always`: set the
    /// mode even where the umask cut nothing (a file made 0600).
    func giveAttributes(of status: FileStatus, to descriptor: Int32, always: Bool) {
        if status.userID != geteuid() || status.groupID != getegid() { fchown(descriptor, status.userID, status.groupID) }
        if always || status.permissions & ~0o777 != 0 || status.permissions & daemonUmask != 0 { fchmod(descriptor, status.permissions) }
        var times = [status.accessTime, status.modificationTime]
        futimens(descriptor, &times)
    }

    public func status(ofOpen file: OwnedDescriptor) throws -> FileStatus {
        var status = try file.status()
        if status.linkCount > 0 && status.kind == .regular {
            status.linkCount = ArchivedLinks.storeNames(of: status, archived: NumberAttribute.read(from: file.rawValue, name: ArchivedLinks.attributeName) ?? 0)
        }
        return status
    }

    public func recordSave(of path: String, by user: uid_t) {
        recordSave(of: path, by: user, at: SaveRecord.now(by: user).time)
    }

    /// `recordSave` with the save's time given (a restore keeping a time, a test's clock).
    public func recordSave(of path: String, by user: uid_t, at time: timespec) {
        guard keepsVersions else { return }
        let full = absolute(path)
        let replaced = numbersReplaced.withLock { $0.removeValue(forKey: PathKey(path)) }?.numbers
        // One look at the document: its status for the record, and its number where the save
        // replaced a numbered item.
        let looked = try? FileSystemPath.at(full) { directory, name -> (FileStatus, VersionArchive.HistoryNumber?) in
            let status = try FileStatus.of(name: name, in: directory, path: full)
            return (status, replaced == nil ? nil : historyNumber(of: status, at: AttributeTarget(name, in: directory)))
        }
        let status = looked?.0, number = looked?.1
        SaveRecord(time: time, userID: user, unreachable: unreachableBits(of: path, document: status)).write(at: full)
        // A save that gave the document a new number (a save by rename, a file with other names
        // saved apart from them): the history of the number it replaced takes the new one.
        guard let versions, let replaced, let number else { return }
        // The history listed at the path is one of theirs, at most (each is checked against it).
        for previous in replaced where previous != number.value { versions.historyContinues(at: path, from: previous, to: number) }
    }

    /// The permission bits of the document at `path` that its folders keep from others and from its
    /// group now (`SaveRecord.unreachable`): those of a folder on the way that they cannot search.
    /// A folder's group is the document's group only where the two are the same; otherwise the
    /// group is judged as others are (a member of both is not told apart), and so are the users and
    /// groups a document's ACL names.
    public func unreachableBits(of path: String) -> mode_t {
        unreachableBits(of: path, document: try? FileStatus.of(path: absolute(path)))
    }

    /// `unreachableBits(of:)` where the document's status is read already (nil: it could not be).
    func unreachableBits(of path: String, document: FileStatus?) -> mode_t {
        guard let document else { return 0o077 }
        return reach(of: path, document: document).unreachable
    }

    /// Plain stats, one of the document and one a folder on the way up (a document in the store's
    /// root folder: two in all): the item numbers `status(of:)` reads are not wanted here.
    public func removedDocument(at path: String) -> RemovedDocument? {
        guard let document = try? FileStatus.of(path: absolute(path)) else { return nil }
        let (unreachable, folder) = reach(of: path, document: document)
        return folder.map { RemovedDocument(status: document, folder: $0, unreachable: unreachable) }
    }

    /// What the folders on the way to the document at `path` keep from its group and others (see
    /// `unreachableBits(of:)`), and the status of the folder it is in (nil: it could not be read).
    private func reach(of path: String, document: FileStatus) -> (unreachable: mode_t, folder: FileStatus?) {
        // Every document counts, a private one too: a chmod may open it before its next save, and
        // the version that save keeps has the mode of then.
        var bits: mode_t = 0
        var folder = path
        var first: FileStatus?
        repeat {
            folder = StorePath.split(folder)?.parent ?? ""
            // A folder that cannot be looked at (gone meanwhile) lets nobody in.
            guard let status = try? FileStatus.of(path: absolute(folder)) else { return (0o077, first) }
            first = first ?? status
            if status.permissions & 0o001 == 0 { bits |= 0o007 }
            if status.permissions & (status.groupID == document.groupID ? 0o010 : 0o001) == 0 { bits |= 0o070 }
        } while !folder.isEmpty && bits != 0o077
        return (bits, first)
    }

    /// Drops what `retention` does not keep at `now`. Returns how many versions went and the space
    /// they gave back. It holds no lock a save takes: saves only add names, and it removes others.
    @discardableResult
    public func pruneVersions(_ retention: VersionRetention, now: Date = Date()) -> (count: Int, bytes: Int64) {
        guard let versions, !isReadOnly else { return (0, 0) }
        let documents = versions.allDocuments()
        var count = 0
        var bytes: Int64 = 0
        let dropped = retention.versionsToDrop(documents.map(\.versions), now: now) { document in
            (try? self.status(of: document)) != nil
        }
        for version in dropped where (try? versions.remove(version)) != nil {
            count += 1
            bytes += version.exclusiveBytes
        }
        StoreMetrics.retained(documents.map(\.versions), droppedCount: count, droppedBytes: bytes)
        return (count, bytes)
    }

    // MARK: Versions are purgeable space

    /// A write found the store's file system full (of blocks or inodes): versions give their
    /// space back, as APFS purges its local snapshots — first every version but each document's
    /// newest, oldest first, then the newest ones, oldest first — until `roomToMake` is free or
    /// none is left (or `bytes`, where more). Each is recorded (`versionsGivenUp`). One at a time:
    /// writers that found the disk full together share the room the first made (a version is never
    /// dropped twice). Whether there is room now that there was not.
    public func makeRoom(bytes: Int64) -> Bool {
        guard keepsVersions, versions != nil, versionsGivenUp != nil else { return false }
        return makingRoom.withLock { _ in makeRoomAlone(max(bytes, roomToMake())) }
    }

    private func makeRoomAlone(_ wanted: Int64) -> Bool {
        guard let versions, let versionsGivenUp else { return false }
        // Made by the writer that held this before: tried again without dropping more.
        if freeBytes() >= wanted { return true }
        let order = versions.allDocuments().flatMap { _, versions in versions.enumerated().map { ($1, $0 == versions.count - 1) } }
            .sorted { ($0.1 ? 1 : 0, $0.0.savedAt) < ($1.1 ? 1 : 0, $1.0.savedAt) }
        var freed: Int64 = 0
        var dropped: [VersionsGivenUp.Event] = []
        // A version sharing its file with a live document (or another version) frees nothing.
        for (version, _) in order where freed < wanted && version.exclusiveBytes > 0 {
            guard (try? versions.remove(version)) != nil else { continue }
            freed += version.exclusiveBytes
            dropped.append(.init(kind: .dropped, document: version.document, time: version.savedAt, bytes: version.exclusiveBytes, owner: version.status.userID))
        }
        StoreMetrics.dropped(dropped.count, .space)
        StoreMetrics.versionBytes.decrement(by: Double(freed))
        versionsGivenUp.record(dropped)
        return !dropped.isEmpty
    }

    /// How much a full store makes room for at once: 1% of its file system, at least 4 MiB, so a
    /// stream of writes does not drop one version at a time.
    private func roomToMake() -> Int64 {
        let whole = (try? statistics()).map { Int64($0.f_blocks) * Int64($0.f_frsize) } ?? 0
        return max(4 << 20, whole / 100)
    }

    /// The bytes free for this process's writes, and 0 where no inode is free.
    private func freeBytes() -> Int64 {
        guard let statistics = try? statistics(), statistics.f_favail > 0 else { return 0 }
        return Int64(statistics.f_bavail) * Int64(statistics.f_frsize)
    }

    /// Called before the change that could not keep the version: the document is still there to
    /// say whose it was.
    public func versionNotKept(of path: String) {
        // A plain stat: the item numbers `status(of:)` keeps may need room the store has not got.
        let owner = (try? FileStatus.of(path: absolute(path)))?.userID
        versionsGivenUp?.record([.init(kind: .notKept, document: path, time: Date(), bytes: 0, owner: owner)])
    }

    public func givenUpVersions(of path: String) -> [VersionsGivenUp.Event] {
        versionsGivenUp?.events().filter { FileSystemPath.same($0.document, path) } ?? []
    }
}

extension DirectoryStore {
    public func moveVersions(from source: String, to destination: String, exchanging: Bool) {
        versions?.moveHistory(from: source, to: destination, exchanging: exchanging)
    }

    /// Whether histories are keyed by the documents' numbers: where the numbers last (a store
    /// whose file system keeps the attribute that carries them through saves).
    var keysHistoriesByNumber: Bool { identities?.attributeName != nil }
}

extension DirectoryStore {
    /// A package put back from its version at `location` (written anew by the daemon, so root's,
    /// with no attributes) gets what each of its items had in the version: owner, group, mode and
    /// extended attributes (its ACLs among them), as a save keeps them.
    public func restoreMetadata(fromVersionAt location: String, to path: String) {
        giveMetadata(from: location, to: absolute(path))
    }

    private func giveMetadata(from source: String, to target: String) {
        guard let status = try? FileStatus.of(path: source), let made = try? FileStatus.of(path: target), made.kind == status.kind else { return }
        if canChangeOwner { try? Paths.setOwner(target, userID: status.userID, groupID: status.groupID) }
        if status.kind != .symbolicLink { try? Paths.setPermissions(target, status.permissions) }
        for name in (try? Paths.extendedAttributeNames(source)) ?? []
        where name != identities?.attributeName && name != SaveRecord.attributeName && name != ArchivedLinks.attributeName {
            guard let value = try? Paths.extendedAttribute(source, name: name) else { continue }
            _ = try? value.withUnsafeBytes { try Paths.setExtendedAttribute(target, name: name, value: $0, flags: 0) }
        }
        guard status.kind == .directory else { return }
        for name in (try? FileIO.directoryEntries(source)) ?? [] { giveMetadata(from: source + "/" + name, to: target + "/" + name) }
    }
}
