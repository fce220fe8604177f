import DocumentModel
import DocumentStore
import FUSE
import Glibc
import Logging
import SystemSupport

/// The bridge between the kernel and the store: every file is a document of a registered type
/// (or raw data), decoded when opened for reading and validated when a write is committed.
///
/// ## The core, in five minutes
///
/// **Requests.** libfuse hands requests to a few threads (`FUSESession`); each method here answers
/// one. An inode the kernel holds is a `Node` in the `NodeTable`, found by its parent and its name
/// (bytes: `FileName`), or by its item's number where the name is new to it (a hard link, an item
/// renamed beside the mount), and its store path is its parents' names joined.
///
/// **Versions.** A document's content is a committed file of the store, never changed in place.
/// Writes go to a private stage (`Stage`); a commit (`CommitPipeline`, one pipeline for every way
/// a document changes) judges the stage by decoding it as the type its name claims, then either
/// refuses it into the quarantine or installs it in one step, keeping the file it replaces as a
/// version. A reader holds the committed file it opened (`NodeState.live`, a `ReadView` per
/// handle), so it reads one committed version whole; a writer's handles read its stage.
///
/// **The kernel's caches.** The kernel keeps one size and one page cache per inode. A writer that
/// would change them under readers reading through the page cache gets a new inode for the name,
/// and the readers keep theirs (`moveNameOffCachedReaders`), or their version's size is held
/// (`heldStatus`). No clock decides who uses the cache: readers bypass it while a writer is at
/// work, or while a writer sent back with ESTALE has not come back to the name
/// (`NodeTable.keepsReadersOffCache`). Changes made beside the mount reach the kernel through the store's
/// watcher or change feed (`StoreWatcher`, `storeChanged`).
///
/// **Locks**, outer to inner, each at its level of `LockLevel` (checked in debug builds, and in
/// release builds started with DOCFS_CHECK_LOCK_ORDER=1):
/// - `Node.staging`: one document's writes, and its commit's judgement (a decode may take long);
/// - `packageLayout`, then one package's lock (`PackageCoordinator`): changes inside packages
///   against renames of the folders holding them;
/// - `changes`: a rename, a removal or a link exclusively, a commit's install shared (and its
///   second judgement, when a rename overtook the first), held across the store's waits (a
///   database's commit);
/// - `namespace`: which file a name leads to, as lookups see it. A change's local step (the
///   store's `Publication`) and the node table's update together exclusively; lookup, getattr,
///   readdir and open shared. Never held across a decode or a database's commit;
/// - `Node.state`, the node table, the stores' own locks: short bookkeeping.
///
/// So no lookup, `stat`, `ls` or read waits for a decode or for a database.
///
/// The operations live in extensions by area: names and attributes (`+Entries`), the read and write
/// paths (`+ReadPath`, `+WritePath`), commits (`+Commit`), directories, and extended attributes.
final class DocumentFileSystem: FileSystemOperations {
    let store: any DocumentStore
    /// Which items are documents, of which type (the same answer everywhere: `DocumentClassifier`).
    let classifier: DocumentClassifier
    let options: DocumentFSOptions
    let nodes = NodeTable()
    let files = HandleTable<OpenFile>()
    let directories = HandleTable<DirectoryListing>()
    let notifier = KernelNotifier()
    let codec: DocumentCodec
    /// Where every commit is judged and stored, and versions are kept.
    let pipeline: CommitPipeline
    let packages: PackageCoordinator
    /// Renames, removals and links take it exclusively for the whole change, the store's waits (a
    /// database's commit) included; a commit takes it shared from resolving its document's path to
    /// installing there (and across its judgement, when a rename overtook the first one). So the
    /// path a change resolved names what it changes until it is made.
    /// No lookup, getattr, readdir, open or read takes it: none waits for a database.
    let changes = ReadWriteLock(.changes)
    /// The local step that makes a change visible (the store's `Publication`: its rename or removal
    /// in the store's directory or mirror, and the node table's update with it) takes it
    /// exclusively; resolving a name or an inode to a stored file (lookup, getattr, open) takes it
    /// shared. So a path always names the file it resolved to: an open racing with a save-by-rename
    /// finds the old or the new document, never a third state. Held across no wait on a database:
    /// content a PostgreSQL store's mirror lacks is fetched with it let go; only content that left
    /// the mirror again before the open (or a writer's seed) found it is downloaded holding this
    /// shared.
    let namespace = ReadWriteLock(.namespace)
    /// Every change inside a package (a member's commit, a create, a rename within it) holds it
    /// shared from resolving the package's path to storing the change, as does a commit's second
    /// judgement (see `DocumentFileSystem+Commit`); a rename or exchange of a
    /// folder (a package, or a folder holding packages) holds it exclusively. So a change lands in
    /// the package it was made in, under that package's name at that moment: a package renamed or
    /// exchanged half-way through a commit made the commit replace whatever folder then had the
    /// old name. Taken before a package's own lock and before `namespace` (see `LockLevel`).
    let packageLayout = ReadWriteLock(.packageLayout)
    /// Watches the store for changes made beside DocFS; nil where it cannot be watched.
    let watcher: StoreWatcher?
    /// How long the kernel may cache names and attributes (see `DocumentFSOptions.cacheTimeout`).
    let cacheTimeout: Double
    var logger: Logger { options.logger }

    init(store: any DocumentStore, rules: DocumentTypeRules, options: DocumentFSOptions) {
        self.store = store
        self.classifier = DocumentClassifier(rules: rules)
        self.options = options
        self.codec = DocumentCodec()
        self.pipeline = CommitPipeline(store: store, codec: codec, logger: options.logger)
        self.packages = PackageCoordinator(pipeline: pipeline)
        let rootPath = store.localPath(of: "")
        let watcher = rootPath == nil ? nil : StoreWatcher()
        if store.hasChangeFeed {
            self.watcher = nil
            cacheTimeout = options.cacheTimeout ?? 86400
        } else if let watcher, rootPath != nil, let root = try? store.status(of: ""),
                  watcher.watch(.root, storedAs: root.inode, open: { try store.openDirectory("") }) {
            self.watcher = watcher
            cacheTimeout = options.cacheTimeout ?? 86400
        } else {
            self.watcher = nil
            cacheTimeout = options.cacheTimeout ?? 1
            if options.cacheTimeout == nil {
                options.logger.notice("the store cannot be watched for changes made beside DocFS (fanotify needs root and a local file system): the kernel caches names and attributes for \(cacheTimeout) s, so such changes show within that")
            }
        }
    }

    /// Starts telling the kernel about changes made in the store beside DocFS.
    func startWatching() {
        watcher?.start { [weak self] change in self?.storeChanged(change) }
        if store.hasChangeFeed {
            store.startChangeFeed { [weak self] changes in
                guard let self else { return }
                for case .entry(let folder, let name) in changes {
                    guard let parent = nodes.existingInode(atPath: folder) else { continue }
                    storeChanged(.entry(parent: parent, name: name))
                }
            }
        }
    }

    /// A change another process made in the store: the kernel forgets the entry and what it named.
    private func storeChanged(_ change: StoreWatcher.Change) {
        switch change {
        case .entry(let parent, let name):
            guard let name else {
                notifier.invalidateContent(of: parent)
                return
            }
            if parent == .root && name == DirectoryStore.privateName { return }
            notifier.invalidateEntry(parent: parent, name: name)
            // The directory's cached listing, attributes and times changed too.
            notifier.invalidateContent(of: parent)
            if let child = nodes.existingChild(parent: parent, name: name) {
                // First: dropping the caches may move the name off the inode that holds the version.
                keepVersionReplacedBeside(child)
                dropCachedContent(of: child)
                // The watch reports the name the change was made through; a file's other names
                // (hard links) are inodes of their own.
                for other in nodes.otherNames(of: child) { dropCachedContent(of: other) }
            } else {
                followRenamedBeside(parent: parent, name: name)
            }
            // The history listed at the name is its document's number's, wherever that went.
            if let versions = store.versions, let folder = nodes.path(of: parent) { versions.changedBeside(StorePath.join(folder, name)) }
        case .everything:
            logger.warning("the store changed faster than its watch could report; every cached name and attribute is dropped")
            store.versions?.forgetIndex()
            for (parent, name, inode) in nodes.allNames() {
                notifier.invalidateEntry(parent: parent, name: name)
                keepVersionReplacedBeside(inode)
                dropCachedContent(of: inode)
            }
        }
    }

    /// An item the kernel holds under another name, renamed to `name` in `parent` beside DocFS (by
    /// another program, or another mount of a PostgreSQL store): its inode follows it before anyone
    /// looks the name up, so what is written through a file open on it lands at its new name.
    private func followRenamedBeside(parent: Inode, name: FileName) {
        namespace.reading {
            guard let folder = nodes.path(of: parent) else { return }
            let path = StorePath.join(folder, name)
            guard let status = try? store.status(of: path),
                  let (inode, from) = nodes.follow(parent: parent, name: name, status: status, kinship: { kinship(of: status, toRecord: $0, at: $1) })
            else { return }
            notifier.invalidateEntry(parent: from.parent, name: from.name)
            let former = nodes.path(of: from.parent).map { StorePath.join($0, from.name) } ?? from.name.string
            let message: Logger.Message = "\(former) was renamed to \(path) beside DocFS; the kernel's inode follows it"
            if nodes.existingNode(inode) != nil { logger.info(message) } else { logger.debug(message) }
        }
    }

    /// A document replaced or removed beside DocFS while open through the mount keeps the version
    /// it replaced, as a save through the mount would: the daemon holds that file open. (Closed,
    /// or changed in place, its bytes are gone before the notice comes.)
    private func keepVersionReplacedBeside(_ inode: Inode) {
        guard store.versions != nil, let node = nodes.existingNode(inode), let path = nodes.path(of: inode),
              classifier.packageMember(of: path) == nil, classifier.claim(forPath: path, isDirectory: false) != nil
        else { return }
        let (live, kept) = node.state.withLock { ($0.live, $0.keptBesideInode) }
        guard let live, let held = try? live.status(), held.kind == .regular, held.inode != kept,
              (try? store.status(of: path))?.inode != held.inode
        else { return }
        do {
            try store.keepReplacedVersion(of: path, file: live)
            node.state.withLock { $0.keptBesideInode = held.inode }
        } catch {
            logger.warning("\(path) was replaced beside DocFS; the version it replaced could not be kept: \(error)")
        }
    }

    /// A change through one name of a file with several links: the kernel's inodes of its other
    /// names hold stale attributes (a link count, a mode) and, after a write in place, stale pages.
    func otherNamesChanged(of inode: Inode, content: Bool) {
        for other in nodes.otherNames(of: inode) {
            // The attributes at once (a size read next must be the new one); pages queued, as a
            // content invalidation must be.
            notifier.invalidateAttributes(of: other)
            if content { notifier.invalidateContent(of: other) }
        }
    }

    /// A package commit swapped a new directory in under the package's name: watch that one.
    func rewatchPackage(_ root: String) {
        guard watcher != nil, let inode = nodes.existingInode(atPath: root), let status = try? store.status(of: root) else { return }
        watchDirectory(inode, path: root, status: status)
    }

    /// Watches a directory the kernel now holds.
    func watchDirectory(_ inode: Inode, path: String, status: FileStatus) {
        guard let watcher else { return }
        watcher.watch(inode, storedAs: status.inode) { try store.openDirectory(path) }
    }

    func initialize(connection: inout ConnectionSettings) {
        // No atomic O_TRUNC: with it the kernel sets the inode's one size to 0 itself after the open,
        // under readers still reading the committed version through the page cache. Without it a
        // truncating open arrives as a truncation (setattr) whose reply says what size to keep.
        connection.decline(Capability.atomicOpenTruncate)
        connection.request(Capability.exportSupport)
        connection.request(Capability.spliceRead)
        connection.request(Capability.spliceWrite)
        connection.request(Capability.spliceMove)
        // Every listing carries attributes. With READDIRPLUS_AUTO the kernel asks for them only in a
        // directory's first batch (and after a child was looked up), so `find -size`, `ls -l` and
        // `du` cost a LOOKUP round trip for every entry past the first few hundred.
        connection.request(Capability.readdirPlus)
        connection.decline(Capability.readdirPlusAuto)
        connection.request(Capability.autoInvalidateData)
        connection.request(Capability.parallelDirectoryOperations)
        connection.request(Capability.asyncRead)
        // Without this the kernel asks for `security.capability` before every write, a round trip
        // per write; the commit clears set-user-ID and set-group-ID bits itself instead.
        connection.request(Capability.handleKillPrivileges)
        // POSIX ACLs stored with the store's items are enforced by the kernel, as on a local disk
        // (with default_permissions, which DocumentMount always gives). The kernel then leaves the
        // creator's umask to the file system, which a folder's default ACL overrides.
        connection.request(Capability.posixACL)
        connection.request(Capability.dontMask)
        // Locks are the kernel's: without FLOCK/POSIX_LOCKS it arbitrates them itself, which is
        // exact for a store that only this mount serves.
        connection.decline(Capability.flockLocks)
        connection.decline(Capability.posixLocks)
        // Write-through: the kernel's O_APPEND and st_size stay ours to answer, and every write
        // reaches the stage.
        connection.decline(Capability.writebackCache)
        connection.maxWrite = 1 << 20
        if let maxRead = options.maxRead { connection.maxRead = maxRead }
        connection.maxReadahead = 1 << 20
    }

    // MARK: Helpers shared by the operations

    /// The store path of a live inode, or ENOENT.
    func path(of inode: Inode) throws(FUSEError) -> String {
        guard let path = nodes.path(of: inode) else { throw .noEntry }
        return path
    }

    /// The store path of `name` in `parent`. The store's private area is no name of the mount's:
    /// no request can make, open or remove it.
    func childPath(parent: Inode, name: FileName) throws(FUSEError) -> String {
        if parent == .root && name == DirectoryStore.privateName { throw .accessDenied }
        return StorePath.join(try path(of: parent), name)
    }

    /// Whether readers of a file see its writers' bytes as they land, as on a local disk: raw files
    /// of a store that stages them (a database, which takes each save whole at close or fsync).
    /// Other mounts see them at that commit, as NFS clients see each other's writes at close; a
    /// reader in this mount sees them at once (`tail -f` of a log another program keeps open).
    /// Documents are never read half-written: their readers keep the committed version.
    func readersFollowWrites(_ role: DocumentClassifier.Role) -> Bool {
        if case .raw = role { return !store.writesInPlace }
        return false
    }

    /// Whether a member of a package may be written: as for documents, from the package's type.
    func isEditable(member: PackageMember, status: FileStatus) -> Bool {
        !options.readOnly && status.permissions & 0o222 != 0 && member.claim.isWritableType
    }

    /// Editability of any stored item, package members included.
    func isEditable(path: String, status: FileStatus) -> Bool {
        if let member = classifier.packageMember(of: path) { return isEditable(member: member, status: status) }
        if status.kind != .regular { return !options.readOnly }
        return isEditable(claim: classifier.claim(forPath: path, isDirectory: false), status: status)
    }

    /// The mode a new item at `path` is made with: the creator's umask applied, as the kernel would
    /// without POSIX ACLs, except under a folder's default ACL, which decides instead.
    func creationMode(_ mode: mode_t, at path: String, _ context: RequestContext) -> mode_t {
        store.inheritsDefaultACL(path) ? mode : mode & ~(context.umask & 0o777)
    }

    func owner(_ context: RequestContext) -> Ownership {
        Ownership(userID: context.userID, groupID: context.groupID)
    }

    /// `isEditable` of a stored document: not on a read-only mount, not when the stored file has no
    /// write permission, not when its type cannot be written back.
    func isEditable(claim: DocumentClaim?, status: FileStatus) -> Bool {
        if options.readOnly { return false }
        if status.permissions & 0o222 == 0 { return false }
        return claim?.isWritableType ?? true
    }

    /// EFBIG for a file that would end past what the store can hold of one (`maximumFileSize`).
    func requireFits(offset: Int64, length: Int64 = 0) throws(FUSEError) {
        guard let limit = store.maximumFileSize else { return }
        let (end, overflow) = offset.addingReportingOverflow(length)
        if overflow || end > limit { throw .fileTooLarge }
    }

    func requireWritable() throws(FUSEError) {
        if options.readOnly { throw .readOnlyFileSystem }
    }

    /// Refuses a new raw file on a `--strict` mount.
    func requireClaimedIfStrict(_ path: String, isDirectory: Bool) throws(FUSEError) {
        guard options.strict, !isDirectory, classifier.claim(forPath: path, isDirectory: false) == nil else { return }
        logger.warning("refused \(path): no document type claims it and the mount is --strict")
        throw .notPermitted
    }

    func statistics(inode: Inode) throws(FUSEError) -> FileSystemStatistics {
        try storeCall { try store.statistics() }
    }

    func access(inode: Inode, mask: Int32, context: RequestContext) throws(FUSEError) {
        let path = try path(of: inode)
        let status = try storeCall { try store.status(of: path) }
        guard mask & W_OK != 0 else { return }
        try requireWritable()
        if status.kind == .regular, !isEditable(path: path, status: status) {
            throw .accessDenied
        }
    }
}

/// A store call, its error turned into the errno the kernel is answered with.
@discardableResult
func storeCall<T>(_ body: () throws -> T) throws(FUSEError) -> T {
    do { return try body() } catch { throw FUSEError(error) }
}
