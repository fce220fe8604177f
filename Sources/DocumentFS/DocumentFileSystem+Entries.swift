import DocumentStore
import FUSE
import Glibc
import SystemSupport

/// Names and attributes: lookup, getattr, setattr, and the operations that make or remove names.
extension DocumentFileSystem {
    /// renameat2's RENAME_EXCHANGE and RENAME_NOREPLACE, which Glibc's module does not export.
    var renameExchange: UInt32 { 2 }
    var renameNoReplace: UInt32 { 1 }

    private static let timeNow = Int((1 << 30) - 1)
    private static let timeOmit = Int((1 << 30) - 2)

    /// The attributes the kernel sees: the stored file's, with its number in the store, the staged size
    /// and times while a write is open, and no write permission where the document is not editable.
    func attributes(path: String, status: FileStatus, staged: FileStatus? = nil) -> stat {
        var result = stat()
        let shown = staged ?? status
        result.st_ino = ino_t(status.identity)
        result.st_mode = status.mode
        result.st_nlink = nlink_t(status.linkCount)
        result.st_rdev = dev_t(status.specialDevice)
        result.st_uid = status.userID
        result.st_gid = status.groupID
        result.st_size = off_t(shown.size)
        result.st_blocks = blkcnt_t(shown.blocks)
        result.st_blksize = 4096
        result.st_atim = status.accessTime
        result.st_mtim = shown.modificationTime
        result.st_ctim = staged.map { later($0.changeTime, status.changeTime) } ?? status.changeTime
        if options.readOnly || (status.kind == .regular && !isEditable(path: path, status: status)) {
            result.st_mode &= ~mode_t(0o222)
        }
        if let userID = options.shownOwner.userID { result.st_uid = userID }
        if let groupID = options.shownOwner.groupID { result.st_gid = groupID }
        if let umask = options.shownUmask { result.st_mode &= ~umask }
        return result
    }

    private func later(_ first: timespec, _ second: timespec) -> timespec {
        (first.tv_sec, first.tv_nsec) >= (second.tv_sec, second.tv_nsec) ? first : second
    }

    /// A node's entry as `caller` should see it: a writer sees its staged size and times, everyone
    /// else the committed ones. While a write is staged the attributes are not cached, so each asks.
    func entry(for inode: Inode, path: String, status: FileStatus, caller: pid_t?) -> Entry {
        let node = nodes.existingNode(inode)
        let (staged, timeout) = stagedStatus(of: node, for: caller, path: path)
        let (shown, shownStaged) = shownStatus(status, staged: staged, of: node)
        return Entry(
            inode: inode, attributes: attributes(path: path, status: shown, staged: shownStaged),
            entryTimeout: cacheTimeout, attributeTimeout: timeout)
    }

    /// The stage's status when `caller` is one of its writers, or when everyone reads what its
    /// writers write (`readersFollowWrites`), and how long attributes may be cached.
    private func stagedStatus(of node: Node?, for caller: pid_t?, path: String?) -> (FileStatus?, Double) {
        guard let node else { return (nil, cacheTimeout) }
        let (file, writers) = node.state.withLock { ($0.stagedFile, $0.writerThreads) }
        guard let file else { return (nil, cacheTimeout) }
        let isWriter = caller.map { ThreadGroup.sameProcess($0, asAnyOf: writers) } ?? false
        guard isWriter || path.map({ readersFollowWrites(classifier.role(forPath: $0)) }) == true else { return (nil, 0) }
        return (try? file.status(), 0)
    }

    /// How the item `status` describes, found at a name the node table does not hold, relates to the
    /// live record with its number, at that record's `path` (see `NodeTable.child`).
    func kinship(of status: FileStatus, toRecord record: Inode, at path: String) -> NodeTable.Kinship {
        let there = try? store.status(of: path)
        if let there, there.device == status.device, there.inode == status.inode {
            return status.kind != .directory && status.linkCount > 1 ? .anotherName : .unrelated
        }
        if there?.identity == status.identity { return .unrelated }
        // The number left the record's name. A writer must never land in a stranger's file, so it
        // is the same item only where that is certain: the record holds that very file open (a file
        // system gives a number again only once its file is gone), or the number cannot have been
        // given to another (a row's id, a fresh number) and is the one the record's handles opened.
        let (held, opened) = nodes.existingNode(record)?.state.withLock { ($0.live, $0.shownIdentity) } ?? (nil, nil)
        if let opened, opened != status.identity { return .unrelated }
        if let file = try? held?.status() {
            if file.device == status.device && file.inode == status.inode { return .moved }
            // A database store's mirror holds a row's content in a file it may make anew; a
            // directory store's file is the item itself.
            guard store.hasChangeFeed else { return .unrelated }
        }
        return store.identityIsNeverReused(status.identity) ? .moved : .unrelated
    }

    /// Looks up a name that must now exist in the store and counts the kernel's new reference.
    func countedEntry(parent: Inode, name: FileName, path: String, caller: pid_t?) throws(FUSEError) -> Entry {
        try countedEntryAndStatus(parent: parent, name: name, path: path, caller: caller).entry
    }

    /// `countedEntry`, with the stored item's status it was made from.
    func countedEntryAndStatus(parent: Inode, name: FileName, path: String, caller: pid_t?) throws(FUSEError) -> (entry: Entry, status: FileStatus) {
        try namespace.reading { () throws(FUSEError) -> (entry: Entry, status: FileStatus) in
            let status = try storeCall { try store.status(of: path) }
            let inode = nodes.child(parent: parent, name: name, counting: true, status: status, kinship: { kinship(of: status, toRecord: $0, at: $1) })
            if status.kind == .directory { watchDirectory(inode, path: path, status: status) }
            return (entry(for: inode, path: path, status: status, caller: caller), status)
        }
    }

    func lookup(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) -> Entry {
        let path = try childPath(parent: parent, name: name)
        do {
            return try countedEntry(parent: parent, name: name, path: path, caller: context.processID)
        } catch where error.errno == ENOENT {
            // Removed behind the mount's back, perhaps: forget a stale name. The kernel may cache
            // the absence as long as it caches names (editors and git probe many missing names,
            // which have no node: they take nothing exclusively).
            if nodes.existingChild(parent: parent, name: name) != nil { namespace.writing { nodes.detach(parent: parent, name: name) } }
            guard cacheTimeout > 0 else { throw error }
            return .negative(timeout: cacheTimeout)
        }
    }

    /// `.` and `..`, which the kernel looks up to turn an NFS file handle of an exported mount back
    /// into a name: the folder itself, or the folder holding it (the root has none: ENOENT).
    func lookup(_ entry: RelativeEntry, in directory: Inode, context: RequestContext) throws(FUSEError) -> Entry {
        let target: Inode
        switch entry {
        case .current:
            target = directory
        case .parent:
            guard directory != .root else { throw .noEntry }
            guard let parent = nodes.parent(of: directory) else { throw .stale }
            target = parent
        }
        return try namespace.reading { () throws(FUSEError) -> Entry in
            guard let path = nodes.path(of: target) else { throw .stale }
            let status = try storeCall { try store.status(of: path) }
            guard status.kind == .directory || entry == .current else { throw .notDirectory }
            guard nodes.countLookup(target) else { throw .stale }
            return self.entry(for: target, path: path, status: status, caller: context.processID)
        }
    }

    func forget(inode: Inode, count: UInt64) {
        nodes.forget(inode, count: count)
    }

    /// The inode a request carrying `handle` is about: the handle's. An open that reached an inode
    /// a rename had just replaced is served by the node that has the name now (`open`'s
    /// `.replaced`), while the kernel keeps the handle on the old inode: its `ftruncate`, `fchmod`,
    /// `futimens` and the sizes the kernel asks for with it (a read, `lseek(SEEK_END)`) are the new
    /// node's (they were the old file's, and a truncation was dropped). `fstat` comes without it.
    func inode(_ inode: Inode, servingHandle handle: UInt64?) -> Inode {
        handle.flatMap { files.get($0)?.node.inode } ?? inode
    }

    func getAttributes(inode kernelInode: Inode, handle: UInt64?, context: RequestContext) throws(FUSEError) -> AttributesReply {
        let inode = inode(kernelInode, servingHandle: handle)
        guard nodes.contains(inode) else { throw .stale }
        let node = nodes.existingNode(inode)
        let (staged, timeout) = stagedStatus(of: node, for: context.processID, path: nodes.path(of: inode))
        return try namespace.reading { () throws(FUSEError) -> AttributesReply in
            if let path = nodes.path(of: inode) {
                let (shown, shownStaged) = shownStatus(try storeCall { try store.status(of: path) }, staged: staged, of: node)
                return AttributesReply(attributes: attributes(path: path, status: shown, staged: shownStaged), timeout: timeout)
            }
            // Unlinked while open, or replaced by a rename: what its last file still shows.
            guard let kept = node?.state.withLock({ $0.committed }), var status = try? store.status(ofOpen: kept) else { throw .stale }
            status.identity = node?.state.withLock { $0.formerIdentity } ?? status.identity
            return AttributesReply(attributes: attributes(path: "", status: status, staged: staged), timeout: timeout)
        }
    }

    func setAttributes(inode kernelInode: Inode, changes: AttributeChanges, handle: UInt64?, context: RequestContext) throws(FUSEError) -> AttributesReply {
        try requireWritable()
        let inode = inode(kernelInode, servingHandle: handle)
        // Before the reply: `chmod a; stat b` of two links shows the new mode, as on a local disk.
        defer { otherNamesChanged(of: inode, content: changes.size != nil) }
        if let size = changes.size { try requireFits(offset: size) }
        guard let path = nodes.path(of: inode) else {
            // A truncation by a name that moved meanwhile: the kernel looks it up again.
            if changes.size != nil, handle == nil, let node = nodes.existingNode(inode), node.state.withLock({ $0.superseded }) {
                throw sendWriterBack(context.processID, from: node)
            }
            try setAttributes(ofDetached: inode, changes: changes, handle: handle)
            return try getAttributes(inode: inode, handle: handle, context: context)
        }
        guard let node = nodes.node(inode) else { throw .noEntry }
        if changes.size != nil, handle == nil {
            // Moved here, or by another writer since this request found the path: the kernel
            // looks the name up again.
            if moveNameOffCachedReaders(node, writer: context.processID) { throw .stale }
            if node.state.withLock({ $0.superseded }) {
                throw sendWriterBack(context.processID, from: node)
            }
            nodes.writerArrived(context.processID)
        }
        if let size = changes.size {
            try dropSetIDBits(of: node, path: path, writer: owner(context), process: context.processID)
            try truncate(node: node, path: path, size: size, handle: handle, caller: context.processID)
        }
        guard changes.mode != nil || changes.userID != nil || changes.groupID != nil || changes.accessTime != nil || changes.modificationTime != nil else {
            return try getAttributes(inode: inode, handle: handle, context: context)
        }
        try withPackageHeldStill(inode) { (path: String) throws(FUSEError) in
            if let mode = changes.mode {
                try storeCall { try store.setPermissions(path, mode) }
                node.state.withLock { state in _ = state.stagedFile.map { fchmod($0.descriptor.rawValue, mode & 0o7777) } }
            }
            if changes.userID != nil || changes.groupID != nil {
                let current = try storeCall { try store.status(of: path) }
                let owner = Ownership(userID: changes.userID ?? current.userID, groupID: changes.groupID ?? current.groupID)
                try storeCall { try store.setOwner(path, owner) }
            }
            if changes.accessTime != nil || changes.modificationTime != nil {
                let access = timeValue(changes.accessTime)
                let modification = timeValue(changes.modificationTime)
                try storeCall { try store.setTimes(path, access: access, modification: modification) }
                // `cp -p` sets the times on the open descriptor before closing: they belong to the staged
                // version that the close is about to store.
                node.state.withLock { state in
                    guard let staged = state.stagedFile else { return }
                    var times = [access, modification]
                    futimens(staged.descriptor.rawValue, &times)
                }
            }
        }
        return try getAttributes(inode: inode, handle: handle, context: context)
    }

    /// Runs `body` with the inode's path while no change to the package it is in or is (its root)
    /// can be in flight: a member's commit swaps in a clone of the package taken before, which
    /// undid a chmod, a time or an extended attribute set on a package folder in between.
    func withPackageHeldStill<T>(_ inode: Inode, _ body: (String) throws(FUSEError) -> T) throws(FUSEError) -> T {
        try packageLayout.reading { () throws(FUSEError) -> T in
            let path = try path(of: inode)
            guard let root = classifier.packageRoot(at: path) else { return try body(path) }
            return try packages.withPackage(root) { () throws(FUSEError) -> T in try body(path) }
        }
    }

    /// The file an inode last named, when its name is gone (unlinked, or replaced by a rename) and
    /// it is still open: it keeps answering for its attributes, as on ext4.
    func detachedFile(_ inode: Inode) throws(FUSEError) -> OwnedDescriptor {
        guard let kept = nodes.existingNode(inode)?.state.withLock({ $0.committed }) else { throw .noEntry }
        return kept
    }

    /// fchmod, fchown, futimens and ftruncate on a file whose name is gone: applied to the file it
    /// last named, and to its stage (the version its writer's close would store, nowhere now).
    private func setAttributes(ofDetached inode: Inode, changes: AttributeChanges, handle: UInt64?) throws(FUSEError) {
        let file = try detachedFile(inode)
        let staged = nodes.existingNode(inode)?.state.withLock { $0.stagedFile?.descriptor }
        let handleFile: OwnedDescriptor? = handle.flatMap { files.get($0) }.flatMap { open in
            if case .raw(let descriptor) = open.access { return descriptor }
            return nil
        }
        // A raw handle's descriptor is the file itself; a document's stage is a file of its own.
        for descriptor in [handleFile ?? file, staged].compactMap({ $0 }) {
            try storeCall {
                if let mode = changes.mode { try descriptor.setPermissions(mode) }
                if changes.userID != nil || changes.groupID != nil {
                    let current = try descriptor.status()
                    try descriptor.setOwner(userID: changes.userID ?? current.userID, groupID: changes.groupID ?? current.groupID)
                }
                if changes.accessTime != nil || changes.modificationTime != nil {
                    try descriptor.setTimes(access: timeValue(changes.accessTime), modification: timeValue(changes.modificationTime))
                }
            }
        }
        // The size of a file no one can open again: its stage if it has one, or its raw handle's file.
        if let size = changes.size, let target = staged ?? handleFile {
            try storeCall { try retryingOnInterrupt("ftruncate") { ftruncate(target.rawValue, off_t(size)) } }
        }
    }

    private func timeValue(_ change: AttributeChanges.TimeChange?) -> timespec {
        switch change {
        case nil: timespec(tv_sec: 0, tv_nsec: Self.timeOmit)
        case .now: timespec(tv_sec: 0, tv_nsec: Self.timeNow)
        case .time(let time): time
        }
    }

    func readLink(inode: Inode) throws(FUSEError) -> String {
        let path = try path(of: inode)
        return try storeCall { try store.symbolicLinkTarget(path) }
    }

    func makeNode(parent: Inode, name: FileName, mode: mode_t, device: dev_t, context: RequestContext) throws(FUSEError) -> Entry {
        try requireWritable()
        let path = try childPath(parent: parent, name: name)
        let mode = creationMode(mode, at: path, context)
        let owner = owner(context)
        let isRegular = mode & S_IFMT == S_IFREG
        // FIFOs, sockets and devices are stored as themselves and are always raw: no type reads them.
        let change: (String) -> PackageChange = isRegular
            ? { .createFile($0, mode: mode & 0o7777, owner: owner) }
            : { .makeSpecialFile($0, mode: mode, device: device, owner: owner) }
        if try changeInPackage(parent: parent, name: name, change) {
            return try countedEntry(parent: parent, name: name, path: path, caller: context.processID)
        }
        if isRegular {
            try requireClaimedIfStrict(path, isDirectory: false)
            try storeCall { try store.createEmptyFile(path, mode: mode & 0o7777, owner: owner) }
        } else {
            try storeCall { try store.makeSpecialFile(path, mode: mode, device: device, owner: owner) }
        }
        return try countedEntry(parent: parent, name: name, path: path, caller: context.processID)
    }

    /// Makes a change inside a package through the package's commit (validated unless the package
    /// is a draft); returns false when `path` is not inside a package.
    /// The name is resolved again once folder renames are held off (`packageLayout`).
    /// `publish`: the change's step in the store and the node table's with it (see `publishing`).
    func changeInPackage(
        parent: Inode, name: FileName, publishing publish: Publication = { try $0() }, _ change: (String) -> PackageChange
    ) throws(FUSEError) -> Bool {
        try packageLayout.reading { () throws(FUSEError) -> Bool in
            guard let member = classifier.packageMember(of: try childPath(parent: parent, name: name)) else { return false }
            try packages.withPackage(member.root) { () throws(FUSEError) in
                _ = try packages.commit(change(member.member), root: member.root, claim: member.claim, publishing: publish)
            }
            TestHook.packageChangeMade.pause()
            rewatchPackage(member.root)
            return true
        }
    }

    func makeDirectory(parent: Inode, name: FileName, mode: mode_t, context: RequestContext) throws(FUSEError) -> Entry {
        try requireWritable()
        let path = try childPath(parent: parent, name: name)
        let mode = creationMode(mode, at: path, context)
        let owner = owner(context)
        if try !changeInPackage(parent: parent, name: name, { .makeDirectory($0, mode: mode & 0o7777, owner: owner) }) {
            try storeCall { try store.makeDirectory(path, mode: mode & 0o7777, owner: owner) }
        }
        return try countedEntry(parent: parent, name: name, path: path, caller: context.processID)
    }

    /// Runs `body`, a change to which stored file a name leads to, holding `changes` exclusively:
    /// it may wait for the store (a database's commit, an outage up to --primary-wait) and no
    /// lookup waits with it. Its store call publishes the change through `publishing`. An outage
    /// already known is waited out first, so saves in flight are not held behind this one meanwhile.
    func changingNames(_ body: () throws(FUSEError) -> Void) throws(FUSEError) {
        store.awaitWritable()
        try changes.writing(body)
    }

    /// A store's `Publication` for a change: its local part, and `update` (the node table's part),
    /// in one step under the namespace, so a lookup sees both or neither.
    func publishing(_ update: @escaping () -> Void) -> Publication {
        { [namespace] apply in
            try namespace.writing {
                try apply()
                update()
            }
        }
    }

    func unlink(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) {
        try requireWritable()
        let path = try childPath(parent: parent, name: name)
        // The file's other names show one link fewer.
        let otherNames = nodes.existingChild(parent: parent, name: name).map { nodes.otherNames(of: $0) } ?? []
        defer { for other in otherNames { notifier.invalidateAttributes(of: other) } }
        let detachMember = publishing { [nodes] in nodes.detach(parent: parent, name: name) }
        if try changeInPackage(parent: parent, name: name, publishing: detachMember, { .removeFile($0) }) { return }
        try changingNames { () throws(FUSEError) in
            let retained = fileToRetain(parent: parent, name: name, path: path)
            // `rm` of a document can be undone: its last version stays among its versions.
            let isDocument = classifier.claim(forPath: path, isDirectory: false) != nil
            // A document's history leaves the path (a new document there starts with none), as
            // reachable as it was: its status and its folder's, as they are, say who may read it
            // (see `VersionsView`). A raw file's removal stats nothing more.
            let removed = isDocument ? store.removedDocument(at: path) : nil
            let replaced: [CommitPipeline.Replaced] = isDocument
                ? [.init(path: path, removed: removed.map { (VersionArchive.removedPath(of: path, owner: $0.status.userID), $0) })] : []
            let detach = publishing { [self] in
                retain(retained, parent: parent, name: name)
                nodes.detach(parent: parent, name: name)
            }
            try storeCall {
                try pipeline.commit(replacing: replaced, saving: []) { try store.remove(path, directory: false, retiring: removed, publishing: detach) }
            }
        }
    }

    func removeDirectory(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) {
        try requireWritable()
        let path = try childPath(parent: parent, name: name)
        let detach = publishing { [nodes] in nodes.detach(parent: parent, name: name) }
        if try changeInPackage(parent: parent, name: name, publishing: detach, { .removeDirectory($0) }) { return }
        try changingNames { () throws(FUSEError) in
            var removed = try? store.status(of: path)
            let folder = try? store.status(of: StorePath.split(path)?.parent ?? "")
            let unreachable = removed == nil ? 0 : store.unreachableBits(of: path)
            // A package's history goes among the removed documents'; a folder they were in shows
            // there as it was (see `VersionsView`), less whom the folders above it kept out then.
            let package = classifier.claim(forPath: path, isDirectory: true) != nil
            let retiring = package
                ? removed.flatMap { status in folder.map { RemovedDocument(status: status, folder: $0, unreachable: unreachable) } } : nil
            removed?.mode &= ~unreachable
            try storeCall { try store.remove(path, directory: true, retiring: retiring, publishing: detach) }
            if let removed { store.recordRemovedFolder(path, status: removed) }
            packages.forget(path)
        }
    }

    func symlink(target: String, parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) -> Entry {
        try requireWritable()
        let path = try childPath(parent: parent, name: name)
        let owner = owner(context)
        if try !changeInPackage(parent: parent, name: name, { .makeSymbolicLink($0, target: target, owner: owner) }) {
            try storeCall { try store.makeSymbolicLink(path, target: target, owner: owner) }
        }
        return try countedEntry(parent: parent, name: name, path: path, caller: context.processID)
    }

    func link(inode: Inode, newParent: Inode, newName: FileName, context: RequestContext) throws(FUSEError) -> Entry {
        try requireWritable()
        let existing = try path(of: inode)
        let path = try childPath(parent: newParent, name: newName)
        // A package is replaced whole by each commit, which would silently end a link into it.
        if classifier.packageMember(of: path) != nil || classifier.packageMember(of: existing) != nil { throw .crossDevice }
        // A file under two names changes through either, judged as the name it is written
        // through: a raw name beside a document name would change the document unjudged.
        guard isJudgedAlike(existing, path) else {
            DocumentMetrics.refused(.link)
            logger.notice("refused to link \(existing) as \(path): content under one name would change under the other unjudged (\(judgement(of: existing)) and \(judgement(of: path)))")
            throw .notPermitted
        }
        var linked: (inode: Inode, status: FileStatus)?
        // A change of names, as renames are (a rename judges how many names the file has); local
        // on every store that has links, so made and published in one step.
        try changingNames { () throws(FUSEError) in
            try namespace.writing { () throws(FUSEError) in
                try storeCall { try store.makeHardLink(path, to: existing) }
                // An inode of its own (see `NodeTable`), which the kernel takes: FUSE allows a link's
                // new name to be another inode of the same file.
                let status = try storeCall { try store.status(of: path) }
                linked = (nodes.addName(inode, parent: newParent, name: newName, status: status), status)
            }
        }
        guard let linked else { throw .noEntry }
        // The file's other names show one link more.
        otherNamesChanged(of: linked.inode, content: false)
        return entry(for: linked.inode, path: path, status: linked.status, caller: context.processID)
    }

    func rename(parent: Inode, name: FileName, newParent: Inode, newName: FileName, flags: UInt32, context: RequestContext) throws(FUSEError) {
        try requireWritable()
        let exchange = flags & renameExchange != 0
        let move = { () throws(FUSEError) in
            try self.rename(parent: parent, name: name, newParent: newParent, newName: newName, flags: flags, exchange: exchange)
        }
        // The moving files' writes are held still (the staging lock, taken first in the documented
        // order) while the rename judges them and installs them under their new names.
        // Once each (an exchange of a name with itself names one node).
        let moving = Set([nodes.existingChild(parent: parent, name: name)] + (exchange ? [nodes.existingChild(parent: newParent, name: newName)] : []))
            .compactMap { $0 }.sorted().compactMap { nodes.node($0) }
        try holdingWritesStill(moving[...]) { () throws(FUSEError) in
            // Whether a folder moves is asked holding the shared lock, so an item swapped for a
            // folder beside the mount before then is moved holding the exclusive one.
            let moved = try packageLayout.reading { () throws(FUSEError) -> Bool in
                guard try !movesFolders(parent: parent, name: name, newParent: newParent, newName: newName, exchange: exchange) else { return false }
                try move()
                return true
            }
            if !moved { try packageLayout.writing(move) }
        }
    }

    /// Runs `body` holding the staging lock of each node, in inode order.
    private func holdingWritesStill(_ nodes: ArraySlice<Node>, _ body: () throws(FUSEError) -> Void) throws(FUSEError) {
        guard let first = nodes.first else { return try body() }
        try first.staging.withLock { (_: inout StageSlot) throws(FUSEError) in try holdingWritesStill(nodes.dropFirst(), body) }
    }

    /// Whether a rename moves a folder (which may be or hold a package): then it waits for the
    /// changes in flight inside packages, and they for it.
    private func movesFolders(parent: Inode, name: FileName, newParent: Inode, newName: FileName, exchange: Bool) throws(FUSEError) -> Bool {
        func isFolder(_ path: String) -> Bool { (try? store.unnumberedStatus(of: path))?.kind == .directory }
        if isFolder(try childPath(parent: parent, name: name)) { return true }
        guard exchange else { return false }
        return isFolder(try childPath(parent: newParent, name: newName))
    }

    private func rename(parent: Inode, name: FileName, newParent: Inode, newName: FileName, flags: UInt32, exchange: Bool) throws(FUSEError) {
        let source = try childPath(parent: parent, name: name)
        let destination = try childPath(parent: newParent, name: newName)
        let sourcePackage = classifier.packageMember(of: source)
        let destinationPackage = classifier.packageMember(of: destination)
        if sourcePackage != nil || destinationPackage != nil {
            // Inside one package, a rename is a change to it; across a package's boundary it would
            // change two documents at once, so programs copy instead (mv does, on EXDEV).
            guard let sourcePackage, let destinationPackage, FileSystemPath.same(sourcePackage.root, destinationPackage.root) else { throw .crossDevice }
            // A member is a document of the type its name claims too, however it got that name. (A
            // member has no hard links of its own: its other names are a package clone's.)
            try validateRenames(of: source, as: destination, exchange: exchange, state: renameState(of: source, destination))
            // Taken before the commit replaces it; kept once the names move.
            let replaced = exchange ? nil : replacedFile(parent: newParent, name: newName, path: destination, status: try? store.status(of: destination))
            // The names move in the store's step, under the namespace, so no lookup sees one without the other.
            let renameNodes = publishing { [self] in
                replaced?.retain(nodes.existingChild(parent: newParent, name: newName).flatMap { nodes.existingNode($0) })
                moveNames(parent: parent, name: name, newParent: newParent, newName: newName, exchange: exchange)
            }
            try packages.withPackage(sourcePackage.root) { () throws(FUSEError) in
                _ = try packages.commit(
                    .rename(sourcePackage.member, to: destinationPackage.member, flags: flags), root: sourcePackage.root, claim: sourcePackage.claim,
                    publishing: renameNodes)
            }
            TestHook.packageChangeMade.pause()
            rewatchPackage(sourcePackage.root)
        } else {
            // A file moving under a name that a document type claims becomes that document: its
            // content must decode as one (sed -i, vim, `os.replace` all save this way). Judged
            // before `changes` is held (a decode may take long), and again under it if the file
            // under either name changed meanwhile (a hard link made changes its file's ctime too);
            // writes through the mount are held still.
            let judged = renameState(of: source, destination, numbered: false)
            // Two names of one file (hard links): rename(2) does nothing and succeeds. Each name is
            // an inode of its own here, so the kernel asks, and takes the success for a move of the
            // source's inode to the destination's name: both names are looked up again once the
            // rename is answered (queued; the kernel holds the folders until it has moved them).
            if !exchange, flags & renameNoReplace == 0, let from = judged.source, let to = judged.destination, from.kind != .directory,
               from.device == to.device, from.inode == to.inode
            {
                notifier.invalidateEntry(parent: parent, name: name)
                notifier.invalidateEntry(parent: newParent, name: newName)
                return
            }
            try judgeRename(of: source, as: destination, exchange: exchange, state: judged)
            try changingNames { () throws(FUSEError) in
                let now = renameState(of: source, destination)
                if now.versions != judged.versions { try judgeRename(of: source, as: destination, exchange: exchange, state: now) }
                let replacedFile = exchange ? nil : replacedFile(parent: newParent, name: newName, path: destination, status: now.destination)
                // A linked file's name replaced: its other names show one link fewer.
                let replacedLinks = exchange ? [] : nodes.existingChild(parent: newParent, name: newName).map { nodes.otherNames(of: $0) } ?? []
                defer { for other in replacedLinks { notifier.invalidateAttributes(of: other) } }
                let sourceKind = documentKind(now.source, at: source)
                // A file saved in under a document's name (sed -i's temporary, vim's new file) is a
                // save; a document moved keeps the record of its own save.
                let saved = sourceKind == nil && documentKind(now.source, at: destination) != nil ? [destination] : []
                let historyFollows = historyFollowsRename(of: source, as: destination, state: now, exchange: exchange)
                let replaced = historyFollows && exchange ? [] : versionsReplacedByRename(from: source, to: destination, state: now, exchange: exchange)
                let renameNodes = publishing { [self] in
                    replacedFile?.retain(nodes.existingChild(parent: newParent, name: newName).flatMap { nodes.existingNode($0) })
                    moveNames(parent: parent, name: name, newParent: newParent, newName: newName, exchange: exchange)
                    markStagedIfClaimed(parent: newParent, name: newName, was: source, now: destination)
                    if exchange { markStagedIfClaimed(parent: parent, name: name, was: destination, now: source) }
                }
                try storeCall {
                    try pipeline.commit(replacing: replaced, saving: saved) {
                        try store.rename(source, to: destination, flags: flags, carryingVersions: historyFollows, publishing: renameNodes)
                    }
                }
                // The documents removed from a folder stay removed from its old path: that path
                // among the removed shows as the folder was, as after an rmdir, so its owner keeps
                // their undo and whoever makes a folder of the name later gets none of it.
                if !exchange, let moved = now.source, moved.kind == .directory { store.recordRemovedFolder(source, status: moved) }
                // A package folder renamed (or a folder renamed to or from a package name) is judged
                // afresh at its new path.
                packages.forget(source)
                packages.forget(destination)
            }
        }
    }

    /// Whether the versions of what a rename moves go with it (issue 36: versions belong to
    /// documents, not paths): a folder's (a package's, and those of every document below it), and
    /// a document's that stays a document under its new name, so `mv a.md b.md` carries `a.md`'s
    /// history and a new `a.md` starts with none. A document moved to a name no type claims keeps
    /// its history where it was (vim's `a.md~` backup, whose `a.md` is written anew at once). An
    /// exchange swaps the two histories when both items are folders or both documents under their
    /// new names.
    private func historyFollowsRename(of source: String, as destination: String, state: RenameState, exchange: Bool) -> Bool {
        func follows(_ status: FileStatus?, from path: String, to other: String) -> Bool {
            status?.kind == .directory || (documentKind(status, at: path) == .regular && documentKind(status, at: other) != nil)
        }
        guard follows(state.source, from: source, to: destination) else { return false }
        return !exchange || follows(state.destination, from: destination, to: source)
    }

    /// The versions a rename replaces, decided holding `changes` with the rename: the document
    /// at `destination` that a save by rename replaces; a document moved to a name no type claims
    /// (vim's `a.md~` backup, removed once the new `a.md` is written), kept as a copy, since it
    /// lives on; and with RENAME_EXCHANGE, a copy of each document whose name gets other content.
    private func versionsReplacedByRename(from source: String, to destination: String, state: RenameState, exchange: Bool) -> [CommitPipeline.Replaced] {
        let kind = documentKind(state.source, at: source)
        let destinationIsDocument = documentKind(state.destination, at: destination) != nil
        if exchange {
            return (kind != nil ? [.init(path: source, copying: true)] : []) + (destinationIsDocument ? [.init(path: destination, copying: true)] : [])
        }
        let backup = kind == .regular && classifier.claim(forPath: destination, isDirectory: false) == nil
        return (destinationIsDocument ? [.init(path: destination)] : []) + (backup ? [.init(path: source, copying: true)] : [])
    }

    /// The kind of an item with `status` when it is a document under the name `path` (a file or a
    /// package a type claims).
    private func documentKind(_ status: FileStatus?, at path: String) -> FileStatus.Kind? {
        guard let status, status.kind == .regular || status.kind == .directory,
              classifier.claim(forPath: path, isDirectory: status.kind == .directory) != nil
        else { return nil }
        return status.kind
    }

    private func moveNames(parent: Inode, name: FileName, newParent: Inode, newName: FileName, exchange: Bool) {
        if exchange {
            nodes.exchange(parent: parent, name: name, with: newParent, otherName: newName)
        } else {
            nodes.move(parent: parent, name: name, to: newParent, newName: newName)
        }
    }

    /// The file a rename is about to replace, and the inode that names it.
    private struct ReplacedFile {
        let node: Node
        let file: OwnedDescriptor?
        let identity: UInt64?

        /// The inode keeps its file open, so an open the kernel already resolved to it reads that
        /// old version, whole (as on a local disk), instead of failing with ESTALE. Done as the
        /// change shows: `current`, the inode the name leads to then, keeps it too (a writer's
        /// open may have moved the name to a new inode since it was read).
        func retain(_ current: Node?) {
            for node in [node] + (current.map { $0 === node ? [] : [$0] } ?? []) {
                node.state.withLock { state in
                    state.retained = file
                    state.formerIdentity = identity
                }
            }
        }
    }

    /// Taken before the rename replaces it (`status`: the item's, where the rename read it).
    private func replacedFile(parent: Inode, name: FileName, path: String, status: FileStatus?) -> ReplacedFile? {
        guard let replaced = nodes.existingChild(parent: parent, name: name), let node = nodes.node(replaced) else { return nil }
        let live = node.state.withLock { $0.live }
        return ReplacedFile(node: node, file: live ?? (try? store.openForReading(path)), identity: status?.identity)
    }

    /// What an open file that an unlink removes keeps, for its attributes (fstat, fchmod,
    /// fgetxattr) until its last close: the file it named and its number, read before the change.
    private func fileToRetain(parent: Inode, name: FileName, path: String) -> (file: OwnedDescriptor?, identity: UInt64?)? {
        guard let inode = nodes.existingChild(parent: parent, name: name), let node = nodes.existingNode(inode),
              node.state.withLock({ $0.openHandles > 0 })
        else { return nil }
        let identity = (try? store.status(of: path))?.identity
        let file = node.state.withLock { $0.committed } ?? (try? store.openForReading(path))
        return (file, identity)
    }

    /// Gives `retained` to the inode the name leads to as the unlink shows (a writer's open may
    /// have moved the name to a new inode since it was read), if it is open.
    private func retain(_ retained: (file: OwnedDescriptor?, identity: UInt64?)?, parent: Inode, name: FileName) {
        guard let retained, let inode = nodes.existingChild(parent: parent, name: name), let node = nodes.existingNode(inode) else { return }
        node.state.withLock { state in
            guard state.openHandles > 0 else { return }
            state.formerIdentity = retained.identity
            if state.committed == nil { state.retained = retained.file }
        }
    }

    /// A raw file renamed, while open in place, to a name a document type claims: its handles'
    /// writes are staged and judged from then on.
    private func markStagedIfClaimed(parent: Inode, name: FileName, was oldPath: String, now newPath: String) {
        guard case .raw = classifier.role(forPath: oldPath) else { return }
        if case .raw = classifier.role(forPath: newPath) { return }
        guard let inode = nodes.existingChild(parent: parent, name: name), let node = nodes.node(inode) else { return }
        node.isStaged.store(true, ordering: .releasing)
    }

    /// The two items a rename moves, as they are: what its judgement is made from, each read once.
    private struct RenameState {
        var source: FileStatus?
        var destination: FileStatus?
        /// What says whether either changed since (any write, replacement or new link does).
        var versions: [FileVersion?] { [source?.version, destination?.version] }
    }

    /// `numbered`: with the numbers the items are known by (a judgement alone needs none).
    private func renameState(of source: String, _ destination: String, numbered: Bool = true) -> RenameState {
        let status = numbered ? store.status(of:) : store.unnumberedStatus(of:)
        return RenameState(source: try? status(source), destination: try? status(destination))
    }

    /// Judges what a rename puts under document names, both ways for an exchange, from `state`: a
    /// file with other names moving to a name judged otherwise is refused (EPERM) before any
    /// content is judged; then content that does not decode under its new name (EIO).
    private func judgeRename(of source: String, as destination: String, exchange: Bool, state: RenameState) throws(FUSEError) {
        try refuseLinkedClaimChange(of: source, status: state.source, to: destination)
        if exchange { try refuseLinkedClaimChange(of: destination, status: state.destination, to: source) }
        try validateRenames(of: source, as: destination, exchange: exchange, state: state)
    }

    /// Judges the content a rename puts under document names, both ways for an exchange.
    private func validateRenames(of source: String, as destination: String, exchange: Bool, state: RenameState) throws(FUSEError) {
        try validateRename(of: source, status: state.source, as: destination, replacing: state.destination)
        if exchange { try validateRename(of: destination, status: state.destination, as: source, replacing: state.source) }
    }

    /// How content under `path` is judged: the claiming type and content type, or none (raw).
    private func judgement(of path: String) -> String {
        classifier.claim(forPath: path, isDirectory: false).map { "\($0.type.name) (\($0.contentType.identifier))" } ?? "raw"
    }

    /// Whether content under the two names is judged alike: both raw, or both claimed by one
    /// type as one content type.
    private func isJudgedAlike(_ first: String, _ second: String) -> Bool {
        let firstClaim = classifier.claim(forPath: first, isDirectory: false), secondClaim = classifier.claim(forPath: second, isDirectory: false)
        guard let firstClaim, let secondClaim else { return firstClaim == nil && secondClaim == nil }
        return firstClaim.type.name == secondClaim.type.name && firstClaim.contentType == secondClaim.contentType
    }

    /// A file with other names may not move to a name judged otherwise: its other names would
    /// then change it unjudged (see `link`, which makes its link holding `changes`).
    private func refuseLinkedClaimChange(of source: String, status: FileStatus?, to destination: String) throws(FUSEError) {
        guard let status, status.kind == .regular, status.linkCount > 1, !isJudgedAlike(source, destination) else { return }
        DocumentMetrics.refused(.link)
        logger.notice("refused to rename \(source) to \(destination): the file has \(status.linkCount) names, and its other names would change it unjudged as \(judgement(of: destination))")
        throw .notPermitted
    }

    private func validateRename(of source: String, status: FileStatus?, as destination: String, replacing replaced: FileStatus?) throws(FUSEError) {
        guard let status, status.kind == .regular, let destinationClaim = classifier.claim(forPath: destination, isDirectory: false) else { return }
        // An empty file is a draft where nothing non-empty is replaced (as `touch` makes one);
        // over a document, it empties it, which must decode as `truncate -s 0` must.
        if status.size == 0, replaced.map({ $0.kind != .regular || $0.size == 0 }) ?? true { return }
        if status.size > 0, isJudgedAlike(source, destination) {
            return  // Already a valid document of the same type.
        }
        do {
            let descriptor = try store.openForReading(source)
            _ = try codec.decode(codec.wrapper(for: descriptor, name: StorePath.lastComponent(destination)), claim: destinationClaim)
        } catch {
            DocumentMetrics.refused(.rename)
            logger.error("refused to rename \(source) to \(destination): its content is not a valid \(destinationClaim.type.name) (\(destinationClaim.contentType.identifier)): \(describe(error)); \(source) is kept as it was")
            throw .ioError
        }
    }
}
