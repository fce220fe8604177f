import DocumentStore
import FUSE
import Glibc
import SystemSupport

/// The read path: opening decodes the stored document once per stored version; reads are spliced
/// from the committed file (or, for a writer, from its stage), never copied through Swift.
///
/// Readers see committed versions only. Writes that are not committed yet never reach the kernel's
/// page cache that readers share: a handle opened write-only bypasses it (direct I/O), and a reader
/// that opens while a writer is at work (or one is expected back, or the inode just lost its name:
/// `NodeTable.keepsReadersOffCache`) bypasses it too and reads the committed file, as does one
/// whose version a commit replaced after it counted its handle (while it decoded, say). A reader
/// that opened the current version of a document nobody was writing reads through the shared
/// cache; what a writer or a change beside the mount does then is kept from it (see
/// `DocumentFileSystem+HeldVersions`).
extension DocumentFileSystem {
    /// What an open found at the inode's name, resolved against renames in one step.
    private enum Found {
        case raw(OwnedDescriptor, FileStatus)
        /// A document or member: its committed file, found when the node had seen `commits` commits
        /// (none for a writer that neither reads nor appends).
        case staged(path: String, role: DocumentClassifier.Role, live: OwnedDescriptor?, liveVersion: FileVersion, status: FileStatus, commits: UInt64)
        /// Replaced by a rename or removed since the kernel looked it up: its last version.
        case detached(OwnedDescriptor)
        /// Replaced by a rename, opened for writing: the inode that holds its name now.
        case replaced(by: Inode)
        /// Opened for writing where it must not be: the kernel looks the name up again
        /// (`sendWriterBack`).
        case sentBack
        /// Its content is not in a database store's mirror (it came since the open fetched, or
        /// was evicted): fetched with the namespace let go, then the open is made again.
        case unfetched(path: String)
    }

    func open(inode: Inode, flags: Int32, context: RequestContext) throws(FUSEError) -> OpenReply {
        try open(inode: inode, flags: flags, context: context, created: nil)
    }

    /// `created`: the status (as the create's entry read it) of the file just made by the `create`
    /// this open belongs to, which gets a handle for writing whatever mode it gave the file (`cp` of
    /// a read-only file makes a 0444 copy and writes to it), as on a local disk.
    func open(inode: Inode, flags: Int32, context: RequestContext, created: FileStatus?) throws(FUSEError) -> OpenReply {
        // Content a database store's mirror does not hold is fetched with the namespace let go, and
        // the open is made again (`.unfetched`); content evicted again in between (a cache smaller
        // than what is in use) is downloaded then rather than refused.
        if let reply = try open(inode: inode, flags: flags, context: context, downloading: false, created: created) { return reply }
        guard let reply = try open(inode: inode, flags: flags, context: context, downloading: true, created: created) else { throw .busy }
        return reply
    }

    /// Nil when the content is not in a database store's mirror and not `downloading`: it was
    /// fetched meanwhile.
    private func open(inode: Inode, flags: Int32, context: RequestContext, downloading: Bool, created: FileStatus?) throws(FUSEError) -> OpenReply? {
        // A node id DocFS has forgotten: requests run on several threads, so an OPEN can be handled
        // after a FORGET the kernel sent later. ESTALE makes the kernel look the name up again.
        guard let node = nodes.node(inode) else { throw .stale }
        let writing = flags & O_ACCMODE != O_RDONLY
        if writing { try requireWritable() }
        // A writer does not write to an inode that readers read through the page cache (see
        // `moveNameOffCachedReaders`): ESTALE makes the kernel look the name up again and open the
        // inode that has it now.
        if writing && moveNameOffCachedReaders(node, writer: context.processID) { throw .stale }
        // A writer sent back with ESTALE retries with a writing open: any other open of its thread
        // means the retry is over (it failed: the name was removed, say), and it is expected nowhere.
        if !writing { nodes.writerArrived(context.processID) }
        // What the open will read is fetched first (a database store's download), holding nothing
        // lookups need; a writer that neither reads nor appends reads nothing (see below).
        if flags & O_ACCMODE != O_WRONLY || flags & O_APPEND != 0, let path = nodes.path(of: inode) { try? store.fetchContent(of: path) }
        TestHook.openAfterFetch.pause()
        // From finding its file to counting its handle, the open keeps the node's live file: a
        // commit that lands in between leaves the file it made there for the open to serve.
        node.state.withLock { $0.opening += 1 }
        defer { node.state.withLock { $0.finishedOpening() } }
        let found = try namespace.reading { () throws(FUSEError) -> Found in
            guard let path = nodes.path(of: inode) else {
                if writing {
                    // The kernel resolved the name just before a rename replaced what it named. A
                    // writer must not write to a file no name leads to any more: it writes to the
                    // document that has the name now, as if it had looked up a moment later. Never
                    // through this inode while readers read it through the page cache (a name left
                    // to them, see `moveNameOffCachedReaders`, or a file replaced under them; none
                    // chooses the cache from now on: `NodeTable.keepsReadersOffCache`): the
                    // writer's handle would be this inode's, whose one size the kernel moves with
                    // every write. Then, or when the name is not known any more, the kernel looks
                    // the name up again (ESTALE) and repeats the open there.
                    guard let former = nodes.formerName(of: inode), !node.state.withLock({ $0.superseded || $0.cachedReaders > 0 }) else {
                        return .sentBack
                    }
                    // Counted as a lookup of this open's own, so that the kernel forgetting the
                    // name's inode meanwhile cannot drop its record under the open; given back
                    // once the open is made (or refused).
                    let current = nodes.child(parent: former.parent, name: former.name, counting: true)
                    guard nodes.path(of: current) != nil else {
                        nodes.forget(current, count: 1)
                        throw .stale
                    }
                    return .replaced(by: current)
                }
                guard let kept = node.state.withLock({ $0.committed }) else { throw .stale }
                return .detached(kept)
            }
            // A create's own file was read a moment ago, for its entry.
            let status = if let created { created } else { try storeCall { try store.status(of: path) } }
            guard status.kind == .regular else { throw .isDirectory }
            let role = classifier.role(forPath: path)
            if case .raw = role, store.writesInPlace {
                // Raw data: opened in place. O_APPEND is the kernel's to apply (it sends the offset);
                // O_TRUNC arrives as a truncation after the open (atomic O_TRUNC is declined), except
                // from a create.
                let descriptor = try storeCall { try store.openInPlace(path, flags: flags & (O_ACCMODE | O_TRUNC), mode: 0, owner: nil) }
                return .raw(descriptor, status)
            }
            let (current, commits) = node.state.withLock { ($0.live, $0.commits) }
            if let current, (try? current.status().version) == status.version {
                return .staged(path: path, role: role, live: current, liveVersion: status.version, status: status, commits: commits)
            }
            if current == nil && flags & O_ACCMODE == O_WRONLY && flags & O_APPEND == 0 {
                // A writer that neither reads nor appends needs the committed file only to seed its
                // stage at its first write (see `modifyStage`), and not at all when it truncates
                // first, as an O_TRUNC open does (the kernel sends the truncation after the open): a
                // shared store would fetch the content only to throw it away. (An appender's
                // commits carry its readers along from the version it opened: `carryAppend`. A node
                // that holds a committed file gets the current one, so none seeds a stage stale.)
                return .staged(path: path, role: role, live: nil, liveVersion: status.version, status: status, commits: commits)
            }
            guard let opened = try storeCall({ downloading ? try store.openForReading(path) : try store.openFetchedForReading(path) }) else {
                return .unfetched(path: path)
            }
            return .staged(
                path: path, role: role, live: opened, liveVersion: try storeCall { try opened.status().version }, status: status, commits: commits)
        }
        switch found {
        case .raw(let descriptor, let status):
            let keepCache = node.state.withLock { state in
                // Not while anyone writes it in place: an asynchronous direct write (O_DIRECT, AIO)
                // leaves in the page cache what a reader's read cached while it ran, and the kernel
                // would serve those pages as the file (xfstests generic/451).
                let keep = flags & O_TRUNC == 0 && state.writableHandles == 0 && state.cachedVersion == status.version
                state.openHandles += 1
                if writing { state.writableHandles += 1 }
                state.cachedVersion = flags & O_TRUNC == 0 ? status.version : nil
                return keep
            }
            if writing { nodes.writerArrived(context.processID) }
            return register(OpenFile(node: node, access: .raw(descriptor), flags: flags, view: nil), keepCache: keepCache)
        case .detached(let kept):
            node.state.withLock { $0.openHandles += 1 }
            return register(OpenFile(node: node, access: .staged, flags: flags, view: ReadView(kept, commit: .max)), directIO: true)
        case .staged(let path, let role, let live, let liveVersion, let status, let commits):
            TestHook.openBeforeInstall.pause()
            return try openStaged(
                node, path: path, role: role, live: live, liveVersion: liveVersion, status: status, flags: flags, context: context,
                foundAtCommit: commits, created: created)
        case .unfetched(let path):
            // A download holding the namespace shared held every lookup behind a change waiting
            // for it exclusively (PostgresFaultTests: cached reads waited for the whole download).
            try storeCall { try store.fetchContent(of: path) }
            return nil
        case .sentBack:
            throw sendWriterBack(context.processID, from: node)
        case .replaced(let current):
            defer { nodes.forget(current, count: 1) }
            // Not the file this open's create made: it opens as any file does. Directly: the
            // kernel's pages and size for this handle are the replaced inode's, not the document's;
            // its size is asked for again, with the handle (see `inode(_:servingHandle:)`).
            var reply = try open(inode: current, flags: flags, context: context, created: nil)
            (reply.directIO, reply.keepCache) = (true, false)
            notifier.invalidateAttributes(of: inode)
            return reply
        }
    }

    /// Counts the open and serves `live`. `foundAtCommit`: how many commits the node had seen when
    /// `live` was found. If one landed since, the open serves the version that commit made, as a
    /// read after a save on a local disk does (it is the node's live file, with the new count).
    private func openStaged(
        _ node: Node, path: String, role: DocumentClassifier.Role, live found: OwnedDescriptor?, liveVersion foundVersion: FileVersion, status: FileStatus,
        flags: Int32, context: RequestContext, foundAtCommit foundAt: UInt64, created: FileStatus?
    ) throws(FUSEError) -> OpenReply {
        let writing = flags & O_ACCMODE != O_RDONLY
        let truncating = writing && flags & O_TRUNC != 0
        // The creator's handle is writable whatever mode it gave the new file.
        var judged = status
        if created != nil { judged.mode |= 0o200 }
        switch role {
        case .raw: break
        case .document(let claim):
            if writing && !isEditable(claim: claim, status: judged) {
                logger.notice("refused to open \(path) for writing: the document is not editable")
                throw .accessDenied
            }
        case .packageMember(let member):
            if writing && !isEditable(member: member, status: judged) { throw .accessDenied }
            // A member is read only from a package that decodes (or from a draft, served as it is).
            if flags & O_ACCMODE != O_WRONLY, case .corrupt(let reason) = packages.state(of: member.root, claim: member.claim) {
                logger.error("cannot open \(path): its package \(member.root) does not decode as \(member.claim.type.name): \(reason)")
                throw .ioError
            }
        }
        let followsWrites = readersFollowWrites(role)
        // Counted before decoding, so a racing release cannot drop the live file under us, under
        // the lock a commit sets the live file under: one that landed since this open found its
        // file made the live file the open serves (kept for it: `opening`; where the commit left
        // none, a re-encoded document's file it could not open, the open reads the version it
        // found, directly: see `directIO` below). False, counting nothing, for a writer that
        // must not write to this inode: it was left to readers, or readers read it through the
        // page cache (unless `sharing`). Readers who follow writes share their inode with a writer
        // (see `readersFollowWrites`).
        var (live, liveVersion, foundAtCommit) = (found, foundVersion, foundAt)
        func count(sharingWithCachedReaders sharing: Bool) -> Bool {
            node.state.withLock { state -> Bool in
                if writing && (state.superseded || (!sharing && state.cachedReaders > 0 && !state.readersFollowWrites)) { return false }
                var identity = status.identity
                if live != nil, state.commits != foundAtCommit, let committed = state.live, let version = try? committed.status().version {
                    (live, liveVersion, foundAtCommit) = (committed, version, state.commits)
                    // A save that ended a hard link gave the document a number of its own.
                    identity = (try? store.status(ofOpen: committed))?.identity ?? identity
                }
                state.holdIfChangedBeside(found: liveVersion)
                state.shownIdentity = identity
                if let live, state.commits == foundAtCommit { state.live = live }
                if followsWrites { state.readersFollowWrites = true }
                state.openHandles += 1
                if writing {
                    state.writableHandles += 1
                    state.writerThreads.insert(context.processID)
                }
                return true
            }
        }
        if !count(sharingWithCachedReaders: false) {
            // A reader came to read through the page cache since `moveNameOffCachedReaders` looked,
            // or the name moved meanwhile: the writer is sent back to the name (`sendWriterBack`);
            // where the name stays but cannot move off the readers (a lock is held on the inode,
            // another writer came first), it shares the inode with them, and their version is held
            // (see `DocumentFileSystem+HeldVersions`). Never an inode whose name went: its save
            // would have nowhere to go.
            if moveNameOffCachedReaders(node, writer: context.processID) { throw .stale }
            guard nodes.path(of: node.inode) != nil, count(sharingWithCachedReaders: true) else { throw sendWriterBack(context.processID, from: node) }
        }
        // Counted on the inode first: from here the writer keeps readers off the cache itself.
        if writing { nodes.writerArrived(context.processID) }
        // A truncating open replaces the content, so what is stored need not decode (that is how a
        // corrupt document is repaired).
        if case .document(let claim) = role, flags & O_ACCMODE != O_WRONLY, !truncating, let live {
            do {
                try ensureDecoded(node, live: live, version: liveVersion, path: path, claim: claim)
            } catch {
                release(node: node, writable: writing)
                throw error
            }
        }
        if truncating {
            do {
                try dropSetIDBits(of: node, path: path, writer: owner(context), process: context.processID)
                try replaceStageWithEmpty(node, path: path)
            } catch {
                release(node: node, writable: writing)
                throw error
            }
        }
        let writeOnly = flags & O_ACCMODE == O_WRONLY
        TestHook.openBeforeCaching.pause()
        let reply = node.state.withLock { state in
            // While cached readers hold a version that changed beside this mount, the page cache
            // is theirs (see `heldStatus`).
            // A writer's bytes never enter the page cache under readers reading through it. Readers
            // who follow writes keep no version, so only a writer at work keeps them off the cache.
            // A reader whose version a commit replaced since it found it (the commit landed while
            // it opened, as it decoded) reads that version directly: the kernel's one size and
            // cache are the new version's now, and nothing holds them for it. Its view follows
            // only what extends that version: an append after a rewrite it missed would splice the
            // two.
            let directIO = writing
                ? writeOnly || state.cachedReaders > 0 || state.heldStatus != nil
                : (followsWrites ? state.isBeingWritten : state.isBeingWritten || state.commits != foundAtCommit) || state.heldStatus != nil
                    || nodes.keepsReadersOffCache(node.inode, contention: !followsWrites)
            let keepCache = !directIO && state.stagedFile == nil && state.cachedVersion == liveVersion
            // A version that replaced the one the kernel last cached, by a change made elsewhere:
            // the kernel may still hold the old size (the change's invalidation can trail this
            // open), and would cut reads at it. Attributes only; the next read fetches them anew.
            let staleSize = !writing && !keepCache && state.heldStatus == nil && (state.cachedVersion != nil || store.hasChangeFeed)
            if !directIO {
                // A cached reader fills the page cache with this version; a cached writer with its writes.
                state.cachedVersion = writing ? nil : liveVersion
                state.cachedAtCommit = state.commits
                state.pageCacheInUse = true
                if !writing { state.cachedReaders += 1 }
            }
            // A reader without a view reads the stage while there is one, then each committed file.
            let view = writing || followsWrites ? nil : live.map { ReadView($0, commit: foundAtCommit) }
            var file = OpenFile(node: node, access: .staged, flags: flags, view: view)
            file.readsThroughPageCache = !directIO && !writing
            return (register(file, keepCache: keepCache, directIO: directIO), staleSize, file.readsThroughPageCache)
        }
        if reply.1 { notifier.invalidateAttributes(of: node.inode) }
        // A change that arrived while this open found and served `live` (another mount's commit,
        // fetched meanwhile) was dealt with before this reader counted: it is dealt with again
        // now, so that the reader keeps its version's size.
        if reply.2, let path = nodes.path(of: node.inode), (try? store.status(of: path))?.version != liveVersion {
            dropCachedContent(of: node.inode)
        }
        return reply.0
    }

    /// O_TRUNC: the write starts from nothing. Whatever was staged is dropped, as a truncation on a
    /// local disk drops what other writers had written.
    private func replaceStageWithEmpty(_ node: Node, path: String) throws(FUSEError) {
        try node.staging.withLock { (slot: inout StageSlot) throws(FUSEError) in
            if let old = slot.stage {
                if old.failure == nil { store.discard(old.file) }
            }
            slot.stage = nil
            let file = try storeCall { try store.makeStagingFile(seededFrom: nil, for: path) }
            noteBase(of: file, node: node)
            var stage = Stage(file: file, isDirty: true)
            stage.lowestChange = 0
            slot.stage = stage
            node.state.withLock { $0.stagedFile = file }
        }
    }

    func register(_ file: OpenFile, keepCache: Bool = false, directIO: Bool = false) -> OpenReply {
        nodes.opened(file.node.inode)
        return OpenReply(handle: files.insert(file), keepCache: keepCache, directIO: directIO)
    }

    /// Decodes the stored version unless it already decoded, holding no lock while it does; an
    /// empty file is a draft and is served as it is.
    func ensureDecoded(_ node: Node, live: OwnedDescriptor, version: FileVersion, path: String, claim: DocumentClaim) throws(FUSEError) {
        guard version.size > 0, node.state.withLock({ $0.decodedVersion }) != version else { return }
        do {
            _ = try codec.decode(codec.wrapper(for: live, name: StorePath.lastComponent(path)), claim: claim)
        } catch {
            logger.error("cannot open \(path): it does not decode as \(claim.type.name) (\(claim.contentType.identifier)): \(describe(error))")
            throw .ioError
        }
        node.state.withLock { $0.decodedVersion = version }
    }

    func read(inode: Inode, handle: UInt64, offset: Int64, size: Int) throws(FUSEError) -> ReadReply {
        guard let file = files.get(handle) else { throw .badHandle }
        let source: OwnedDescriptor? = file.node.state.withLock { state in
            if let view = file.view { return view.descriptor(commits: state.commits, lastRewrite: state.lastRewrite, live: state.live) }
            // A reader who followed the writes of a raw file renamed to a document's name since reads
            // committed versions only: the stage holds bytes not judged yet.
            if let staged = state.stagedFile, file.flags & O_ACCMODE != O_RDONLY || !file.node.isStaged.load(ordering: .acquiring) {
                return staged.descriptor
            }
            if case .raw(let descriptor) = file.access { return descriptor }
            return state.committed
        }
        guard let source else { throw .badHandle }
        TestHook.readBeforeReply.pause()
        return .fileRegion(descriptor: source.rawValue, offset: offset, size: size, owner: source)
    }
}
