import DocumentModel
import Glibc
import Synchronization
import SystemSupport

/// Where documents live. Paths are relative to the store's root, `/`-separated, with `""` for the
/// root itself. Implementations persist atomically (a reader or a crash sees the old or the new
/// item, never a mix), keep writes in progress in a private staging area, and keep rejected
/// content in a quarantine instead of dropping it.
///
/// `DirectoryStore` is the embedded default; another backend (a database shared by several
/// machines, say) implements the same calls.
public protocol DocumentStore: AnyObject, Sendable {
    /// A human-readable location, for logs and `fileURL`s.
    var rootURL: URL { get }
    /// Where the item at `path` is on the local file system, for a watch on changes made beside
    /// DocFS; nil for a store that is not a local directory.
    func localPath(of path: String) -> String?

    func status(of path: String) throws -> FileStatus
    /// Whether `identity` (a `FileStatus.identity` this store gave) names one item for as long as
    /// the store exists, never another after it is gone: an item found under it at a new name is
    /// that item, renamed. False where numbers may be given again (a local file system's own).
    func identityIsNeverReused(_ identity: UInt64) -> Bool
    /// `status(of:)` without the number the item is known by (`identity` is the file system's
    /// number): for a judgement of what is there, which asks for nothing else, at less cost.
    func unnumberedStatus(of path: String) throws -> FileStatus
    /// The status of `name` in the directory `folder`, opened with `openDirectory`: one path
    /// component for the kernel to resolve instead of the whole path, for listings that stat every entry.
    func status(of name: FileName, in directory: OwnedDescriptor, folder: String) throws -> FileStatus
    func openDirectory(_ path: String) throws -> OwnedDescriptor
    /// The directory's entries with their kinds; the store's private area is never listed.
    func list(_ path: String) throws -> [StoreDirectoryEntry]
    func openForReading(_ path: String) throws -> OwnedDescriptor
    /// Brings the content of the file at `path` where `openForReading` finds it at once (a
    /// database store's mirror fetches it), so that an open waits for a download holding nothing
    /// lookups need. Nothing for a store whose content is local.
    func fetchContent(of path: String) throws
    /// `openForReading`, for a caller holding a lock that lookups need: nil where the content is
    /// not there to open at once (a database store's mirror lacks it), rather than fetch it. The
    /// caller lets go, fetches (`fetchContent`) and tries again.
    func openFetchedForReading(_ path: String) throws -> OwnedDescriptor?
    /// The status of a stored file DocFS holds open (one whose name may be gone), as `status(of:)`
    /// would give it.
    func status(ofOpen file: OwnedDescriptor) throws -> FileStatus
    /// Opens a file that is stored as written (raw data, not a document), for in-place access.
    func openInPlace(_ path: String, flags: Int32, mode: mode_t, owner: Ownership?) throws -> OwnedDescriptor
    /// The stored item as a lazy `FileWrapper`: nothing is read until asked for.
    func fileWrapper(at path: String) throws -> FileWrapper
    /// The stored folder at `path` as a `FileWrapper` that `body` reads, through a descriptor of
    /// the folder opened once: every read stays in the folder `path` named when `body` began,
    /// whatever is renamed meanwhile (a package decoded while it moves is read whole, never half
    /// from another folder). `body` is also given that folder's status; the wrapper is done with
    /// when it returns.
    func withFolderWrapper<T>(at path: String, _ body: (FileWrapper, FileStatus) throws -> T) throws -> T

    /// A private file for a write in progress to `document`, holding a copy of `source`'s content
    /// when given. A copy that fails (a full disk) leaves nothing behind.
    func makeStagingFile(seededFrom source: OwnedDescriptor?, for document: String) throws -> StagingFile
    /// Notes that `staging` holds a change to the item now at `document`, where a store checks a
    /// commit against the version its change began from (PostgreSQL): `makeStagingFile` looks by
    /// a name its caller read before, which a rename since may have given another item. Called
    /// with the name read again where no rename through this mount can pass between.
    func noteBase(of staging: StagingFile, for document: String)
    /// Whether `noteBase` matters: the store checks commits against their bases.
    var checksBases: Bool { get }
    /// Moves a staged file into place at `path` in one step, carrying over the permissions, owner
    /// and extended attributes of the item it replaces. Returns the new item's status. `durable`:
    /// the data is synced before the rename and the directory after it, so the new version and its
    /// name are on disk when this returns.
    @discardableResult
    func install(_ staging: StagingFile, at path: String, durable: Bool) throws -> FileStatus
    /// Writes a wrapper (file or package) atomically at `path`, reusing unchanged files of the item
    /// it replaces. Returns the new item's status. `durable` as for `install`; `publish` as for
    /// `rename` (a package's change that moves or removes names inside it shows whole).
    @discardableResult
    func persist(_ wrapper: FileWrapper, at path: String, durable: Bool, publishing publish: Publication) throws -> FileStatus
    /// Makes the item stored at `path` and the directory entry naming it durable.
    func synchronize(_ path: String) throws
    /// Makes the folder at `path` durable: its entries, not the items they name (fsync of a folder).
    func synchronizeDirectory(_ path: String) throws
    /// Keeps rejected bytes for the user: moves the staging file into the quarantine, with a note
    /// saying which document it was for, when and why it was refused. The item and its note belong
    /// to `owner`, who wrote the bytes (nil: the daemon's own). Returns where it went.
    func quarantine(_ staging: StagingFile, for path: String, reason: String, owner: Ownership?) throws -> String
    /// Like `quarantine`, but keeps a copy and leaves the staging file as it is (its writer may still
    /// complete it).
    func quarantineCopy(of staging: StagingFile, for path: String, reason: String, owner: Ownership?) throws -> String
    /// A private copy of the directory (package) at `path` to prepare a change in: directories are
    /// made anew, files hard-linked, links copied, so the copy costs one entry per item and no data.
    /// Returns its store path (inside the private area), usable with every call here.
    func cloneDirectory(_ path: String) throws -> String
    /// Replaces the directory at `path` with the prepared one at `prepared`, in one atomic step;
    /// `publish` as for `rename`.
    func replaceDirectory(at path: String, with prepared: String, publishing publish: Publication) throws
    /// Moves any item (a refused package change, say) into the quarantine with a note.
    func quarantineItem(_ item: String, for path: String, reason: String, owner: Ownership?) throws -> String
    /// Removes a private item (an abandoned clone).
    func removePrivateItem(_ item: String)

    /// Drops a staging file whose write was abandoned (its document was deleted while open).
    func discard(_ staging: StagingFile)
    /// Gives back a failed stage's space at once, even while its descriptor stays open.
    func releaseSpace(of staging: StagingFile)

    /// Creates an empty file (failing with EEXIST if the name is taken) and returns it opened for
    /// reading, so the caller can serve it without opening it again.
    @discardableResult
    func createEmptyFile(_ path: String, mode: mode_t, owner: Ownership?) throws -> OwnedDescriptor
    /// Whether a new item at `path` takes its permissions from its folder's default POSIX ACL (the
    /// store's file system gives them, and the creator's umask does not apply, as on a local disk).
    func inheritsDefaultACL(_ path: String) -> Bool
    /// A FIFO, socket, or character or block device (`mode` carries the type), stored as itself.
    func makeSpecialFile(_ path: String, mode: mode_t, device: dev_t, owner: Ownership?) throws
    func makeDirectory(_ path: String, mode: mode_t, owner: Ownership?) throws
    /// Removes the empty folder at `path`; `publish` as for `rename`.
    func removeDirectory(_ path: String, publishing publish: Publication) throws
    /// Removes the file at `path`; `publish` as for `rename`.
    func removeFile(_ path: String, publishing publish: Publication) throws
    /// `removeFile` or `removeDirectory`; with `retiring` (the removed document's status and its
    /// folder's), its versions go among the removed documents' (`VersionArchive.removedPath`),
    /// open only to whom could read it then: in the removal's transaction, where the store has
    /// transactions. A new document at the path starts with no history.
    func remove(_ path: String, directory: Bool, retiring: RemovedDocument?, publishing publish: Publication) throws
    /// `flags` as renameat2's: RENAME_NOREPLACE (1), RENAME_EXCHANGE (2). The store calls
    /// `publish` once, with the part of the change that lookups see, after everything that can
    /// wait (a database's commit): see `Publication`.
    func rename(_ source: String, to destination: String, flags: UInt32, publishing publish: Publication) throws
    /// `rename`, and with `carryingVersions` the versions of what moves go with it
    /// (`moveVersions`): in the rename's own transaction, where the store has transactions.
    func rename(_ source: String, to destination: String, flags: UInt32, carryingVersions: Bool, publishing publish: Publication) throws
    func makeSymbolicLink(_ path: String, target: String, owner: Ownership?) throws
    func symbolicLinkTarget(_ path: String) throws -> String
    func makeHardLink(_ path: String, to existing: String) throws

    func setPermissions(_ path: String, _ mode: mode_t) throws
    func setOwner(_ path: String, _ owner: Ownership) throws
    func setTimes(_ path: String, access: timespec, modification: timespec) throws
    func truncate(_ path: String, size: Int64) throws

    func extendedAttribute(_ path: String, name: String) throws -> [UInt8]
    func setExtendedAttribute(_ path: String, name: String, value: UnsafeRawBufferPointer, flags: Int32) throws
    func extendedAttributeNames(_ path: String) throws -> [String]
    func removeExtendedAttribute(_ path: String, name: String) throws

    func statistics() throws -> statvfs

    /// The largest file the store can hold, where it has a limit of its own (a database's); nil
    /// where its file system's limit is the one (the kernel applies that).
    var maximumFileSize: Int64? { get }
    /// Whether raw files (no document type claims them) are opened and written in place. A store
    /// that must see every change whole (a database) says no: raw writes are then staged and
    /// installed at close, as documents are.
    var writesInPlace: Bool { get }
    /// Whether the store reports changes made elsewhere (other mounts of a shared store) through
    /// `startChangeFeed`; a local directory has none and is watched through `localPath` instead.
    var hasChangeFeed: Bool { get }
    /// Starts delivering changes made elsewhere, on a thread of the store's, until the process ends.
    func startChangeFeed(_ handler: @escaping @Sendable ([StoreChange]) -> Void)
    /// Returns once the store is known to take changes, or once it has waited as long as a change
    /// would: called before a lock that every lookup needs is taken for a change, so that in an
    /// outage the change waits without that lock.
    func awaitWritable()
    /// Gives back disk space the store holds for itself (content it can fetch again, versions),
    /// after a write found the disk full, until at least `bytes` are free (or what the store thinks
    /// a write needs, where larger); whether there is room now that there was not.
    func makeRoom(bytes: Int64) -> Bool
    /// Records that a change kept no version of `path` (the store had no room for it), where
    /// `docfs status` and `docfs versions` show it.
    func versionNotKept(of path: String)
    /// What a full store gave up of the versions of the document at `path` (see `VersionsGivenUp`).
    func givenUpVersions(of path: String) -> [VersionsGivenUp.Event]

    /// The store's earlier versions of its documents; nil for a store that keeps none.
    var versions: VersionArchive? { get }
    /// Keeps the document (file or package) now at `path` among its versions: called just before a
    /// save replaces it or a removal takes it. An empty file, or nothing at `path`, keeps nothing.
    /// `copying`: the file stays in use under another name (renamed away), so the version must be a
    /// copy of it, not the file itself.
    func keepVersion(of path: String, copying: Bool) throws
    /// Keeps the document at `path`, which a removal is about to take, straight into the history
    /// at `removed` (its place in its owner's removal area, where `remove(_:directory:retiring:publishing:)`
    /// takes its history): kept there at once, not kept at `path` and then moved. `document` says
    /// who could read it, which narrows that history's record first. A store that keeps versions
    /// within the change itself keeps it as `keepVersion(of:copying:)` does.
    func keepVersion(ofRemoved path: String, joining removed: String, as document: RemovedDocument) throws
    /// Whether a version of the package at `path` is kept whole (a folder of links to its files), or,
    /// for a package of too many files to link at every save, member by member.
    func keepsWholeVersion(ofPackage path: String) -> Bool
    /// Marks the item now at `path` as saved by `user` now, which names and attributes the version
    /// it becomes once a later save replaces it.
    func recordSave(of path: String, by user: uid_t)
    /// Runs `change`, a commit whose saves of `paths` by `user` `recordSave` records afterwards: a
    /// store that can write who saves in the change itself does so, and its `recordSave` then has
    /// nothing left to write.
    func recordingSaves<T>(of paths: [String], by user: uid_t, _ change: () throws -> T) throws -> T
    /// The permission bits of the document at `path` its folders keep from its group and from
    /// others now (`SaveRecord.unreachable`).
    func unreachableBits(of path: String) -> mode_t
    /// What a removal through the mount records of the document at `path` (see
    /// `RemovedDocument`), read as it is now; nil where it or its folder cannot be read.
    func removedDocument(at path: String) -> RemovedDocument?
    /// Makes the next version of the package at `path` ahead, off the next save's path (a store
    /// that keeps packages' versions as folders of links); nothing for a file.
    func prepareVersion(of path: String)
    /// Forgets what `keepVersion` noted for `paths` and no change took (a store that keeps the
    /// version within the change that replaces it): called at the end of every change.
    func dropPendingVersions(of paths: [String])
    /// A document (or a folder of them) renamed from `source` to `destination` takes its versions
    /// along (both ways with `exchanging`); called after the store's rename.
    func moveVersions(from source: String, to destination: String, exchanging: Bool)
    /// A folder of `status` removed through the mount: where documents with versions were below
    /// it, the view shows it as it was (`VersionArchive.recordRemovedFolder`).
    func recordRemovedFolder(_ path: String, status: FileStatus)
    /// A package just put back whole from its version at `location` gets each item's owner, mode
    /// and extended attributes from the version. Nothing where the store keeps them otherwise.
    func restoreMetadata(fromVersionAt location: String, to path: String)
    /// Keeps `file`, which DocFS still holds open, as the version of the document at `path` that a
    /// change made beside DocFS replaced or removed.
    func keepReplacedVersion(of path: String, file: OwnedDescriptor) throws
    /// Opens the archived file at `location` (a version, or a file of a package's version) to read,
    /// its content there: fetched first where the store holds it elsewhere (a database) and the
    /// archive only its place, and kept there while the descriptor is open.
    func openVersionContent(at location: String) throws -> OwnedDescriptor
    /// Runs `body` with the content of the version at `location` (a package's whole) there to read.
    func withVersionContent<T>(at location: String, _ body: () throws -> T) throws -> T
    /// Removes one of `versions`' versions (a package's whole).
    func removeVersion(_ version: DocumentVersion) throws
    /// Drops the versions `retention` does not keep at `now`: how many went, and the space they
    /// gave back. Never delays a save.
    func pruneVersions(_ retention: VersionRetention, now: Date) -> (count: Int, bytes: Int64)
}

/// A document removed through the mount, as it was: who could read it then decides who may read
/// its versions (`VersionArchive.readers(of:in:)`).
public struct RemovedDocument: Sendable {
    public var status: FileStatus
    /// The folder it was in.
    public var folder: FileStatus
    /// What the folders above that one kept from its group and from others
    /// (`SaveRecord.unreachable`): a private folder further up keeps its history private too.
    public var unreachable: mode_t

    public init(status: FileStatus, folder: FileStatus, unreachable: mode_t = 0) {
        self.status = status
        self.folder = folder
        self.unreachable = unreachable
    }
}

/// How a change to which item a name leads to becomes visible. A store calls it once, when the
/// change is decided and durable (a database's COMMIT answered), with `apply`: the change's local
/// part, which does not wait (the rename or removal in the store's directory, or in a database
/// store's mirror). The caller runs `apply` holding what its lookups need, and updates its own
/// record of names in the same step, so a lookup sees the change whole or not at all and never
/// waits for a database. A change refused (EEXIST, ENOTEMPTY, a database's refusal) never calls it.
public typealias Publication = (_ apply: () throws -> Void) throws -> Void

extension DocumentStore {
    public func noteBase(of staging: StagingFile, for document: String) {}
    public var checksBases: Bool { false }
    public func unnumberedStatus(of path: String) throws -> FileStatus { try status(of: path) }
    public func identityIsNeverReused(_ identity: UInt64) -> Bool { false }
    @discardableResult
    public func persist(_ wrapper: FileWrapper, at path: String, durable: Bool) throws -> FileStatus {
        try persist(wrapper, at: path, durable: durable, publishing: { try $0() })
    }
    public func replaceDirectory(at path: String, with prepared: String) throws {
        try replaceDirectory(at: path, with: prepared, publishing: { try $0() })
    }
    public func removeDirectory(_ path: String) throws { try removeDirectory(path, publishing: { try $0() }) }
    public func removeFile(_ path: String) throws { try removeFile(path, publishing: { try $0() }) }
    public func rename(_ source: String, to destination: String, flags: UInt32) throws {
        try rename(source, to: destination, flags: flags, publishing: { try $0() })
    }
    public func rename(_ source: String, to destination: String, flags: UInt32, carryingVersions: Bool, publishing publish: Publication) throws {
        try rename(source, to: destination, flags: flags, publishing: publish)
        if carryingVersions { moveVersions(from: source, to: destination, exchanging: flags & 2 != 0) }
    }
    public var writesInPlace: Bool { true }
    public var maximumFileSize: Int64? { nil }
    public func fetchContent(of path: String) throws {}
    public func openFetchedForReading(_ path: String) throws -> OwnedDescriptor? { try openForReading(path) }
    public var hasChangeFeed: Bool { false }
    public func startChangeFeed(_ handler: @escaping @Sendable ([StoreChange]) -> Void) {}
    public func awaitWritable() {}
    public func makeRoom(bytes: Int64) -> Bool { false }
    public func versionNotKept(of path: String) {}
    public func givenUpVersions(of path: String) -> [VersionsGivenUp.Event] { [] }
    public func status(ofOpen file: OwnedDescriptor) throws -> FileStatus { try file.status() }
    public func inheritsDefaultACL(_ path: String) -> Bool { false }
    public func withFolderWrapper<T>(at path: String, _ body: (FileWrapper, FileStatus) throws -> T) throws -> T {
        let status = try status(of: path)
        return try body(try fileWrapper(at: path), status)
    }
    public var versions: VersionArchive? { nil }
    public func keepVersion(of path: String, copying: Bool) throws {}
    public func keepsWholeVersion(ofPackage path: String) -> Bool { true }
    public func keepVersion(of path: String) throws { try keepVersion(of: path, copying: false) }
    public func recordSave(of path: String, by user: uid_t) {}
    public func recordingSaves<T>(of paths: [String], by user: uid_t, _ change: () throws -> T) throws -> T { try change() }
    public func unreachableBits(of path: String) -> mode_t { 0 }
    public func removedDocument(at path: String) -> RemovedDocument? {
        guard let document = try? status(of: path), let folder = try? status(of: StorePath.split(path)?.parent ?? "") else { return nil }
        return RemovedDocument(status: document, folder: folder, unreachable: unreachableBits(of: path))
    }
    public func keepReplacedVersion(of path: String, file: OwnedDescriptor) throws {}
    public func dropPendingVersions(of paths: [String]) {}
    public func moveVersions(from source: String, to destination: String, exchanging: Bool) {}
    public func keepVersion(ofRemoved path: String, joining removed: String, as document: RemovedDocument) throws {
        try keepVersion(of: path, copying: false)
    }
    public func recordRemovedFolder(_ path: String, status: FileStatus) {
        guard let archive = versions else { return }
        // Documents removed below it, or (beside the mount) left there with versions.
        let index = archive.index
        for folder in [path] + archive.removedPaths(of: path, preferring: nil) where index.children[Array(folder.utf8)] != nil {
            archive.recordRemovedFolder(folder, as: status)
        }
    }
    public func restoreMetadata(fromVersionAt location: String, to path: String) {}
    public func prepareVersion(of path: String) {}
    public func openVersionContent(at location: String) throws -> OwnedDescriptor {
        OwnedDescriptor(try FileIO.open(location, O_RDONLY | O_NOFOLLOW | O_NONBLOCK))
    }
    public func withVersionContent<T>(at location: String, _ body: () throws -> T) throws -> T { try body() }
    public func removeVersion(_ version: DocumentVersion) throws {
        try versions?.remove(version)
        StoreMetrics.dropped(1, .removed)
    }
    public func pruneVersions(_ retention: VersionRetention, now: Date) -> (count: Int, bytes: Int64) { (0, 0) }
}

/// A commit the store refused on grounds of its own (a shared store: another mount saved the
/// document since this write began). DocFS treats it as a refused save: EIO to the program, the
/// staged bytes in the quarantine with `reason`.
public struct StoreRefusal: Error, CustomStringConvertible, Sendable {
    public let reason: String
    public init(reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// A change made to the store elsewhere: the entry `name` of `folder` (nil for the folder itself).
public enum StoreChange: Sendable, Equatable {
    case entry(folder: String, name: FileName?)
}

/// One name in a stored directory.
public struct StoreDirectoryEntry: Sendable {
    public enum Kind: Sendable { case regular, directory, symbolicLink, fifo, socket, characterDevice, blockDevice, unknown }
    public var name: FileName
    public var kind: Kind
    /// The number the item is known by (`FileStatus.identity`).
    public var identity: UInt64
    public init(name: FileName, kind: Kind, identity: UInt64) {
        self.name = name
        self.kind = kind
        self.identity = identity
    }
}

/// A write in progress, outside the live document.
public final class StagingFile: Sendable {
    /// Where the staged bytes are (in the store's private area).
    public let path: String
    /// Open for reading and writing; shared with readers of the document while the write is open.
    public let descriptor: OwnedDescriptor

    /// The file system's number of the staged file, once any status of it was read (0 before):
    /// it never changes, and a save writes it into the identity attribute (`IdentityAttribute`).
    private let knownInode = Atomic<UInt64>(0)

    public init(path: String, descriptor: OwnedDescriptor) {
        self.path = path
        self.descriptor = descriptor
    }

    public func status() throws -> FileStatus {
        let status = try descriptor.status(path: path)
        knownInode.store(status.inode, ordering: .relaxed)
        return status
    }

    /// The file system's number of the staged file (read where no status was yet); nil where it
    /// cannot be read.
    public var inode: UInt64? {
        let known = knownInode.load(ordering: .relaxed)
        return known != 0 ? known : (try? status())?.inode
    }
}
