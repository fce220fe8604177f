import DocumentStore
import FUSE
import Glibc
import SystemSupport

/// Readers that read a document through the kernel's page cache while its version changes — a
/// writer on this mount, another mount's commit, a program replacing it in the store. The kernel
/// keeps one size and one page cache per inode: any other size told to it, or a writer's bytes
/// let into the cache, would end those readers' reads early, run them on past their version's
/// end, or splice another version into theirs. So the document's name gets a new inode and the
/// readers keep theirs, with their version's size, until they close. Where the name cannot move
/// (a lock held on the inode, a writer already on it) their version is held instead:
/// no attribute reply shows a size below its size, everyone else who opens meanwhile bypasses the
/// cache, and the kernel is told the truth when the last of those readers closes.
extension DocumentFileSystem {
    /// A commit of `node` that only appended to `previous`: the inodes its name moved off, whose
    /// readers read `previous`, move on to `live` as well, and the kernel asks for their new size.
    /// Those inodes have no writer, so their size is only ever one of their versions'.
    func carryAppend(of node: Node, from previous: OwnedDescriptor?, to live: OwnedDescriptor?) {
        guard let live, let previousVersion = try? previous?.status().version else { return }
        for follower in nodes.leftBehind(by: node.inode) {
            let moved = follower.state.withLock { state -> Bool in
                guard state.cachedReaders > 0, let current = state.live, (try? current.status().version) == previousVersion else {
                    return false
                }
                state.live = live
                state.commits += 1
                return true
            }
            if moved { notifier.invalidateAttributes(of: follower.inode) }
        }
    }

    /// A writer that opens a document (or truncates it by name) while readers read it through the
    /// page cache would share their inode, whose one size the kernel grows with every write: a
    /// reader at the end of its version would read on into zeros that are in no version. A change
    /// beside the mount would show them another version's size. So the document's name moves to
    /// a new inode, and `node` stays with those readers, holding their version whole with its own
    /// size (and its inode number), as a file replaced by a rename does. A writer's request then
    /// fails with ESTALE, on which the kernel looks the name up again (LOOKUP_REVAL) and repeats
    /// the request on whatever inode the name leads to then; readers of that name bypass the page
    /// cache until `writer` (the thread whose request this is) has come back, so it is never sent
    /// on twice (see `NodeTable.keepsReadersOffCache`).
    /// Appends committed under the name reach the readers left behind (`carryAppend`).
    ///
    /// Not while anyone holds a lock on the inode: the kernel keeps locks per inode, and the next
    /// locker would get the new one. Not for a writer of a file whose readers follow its writes
    /// (`readersFollowWrites`): they read what it writes, on their inode. Whether the name moved.
    func moveNameOffCachedReaders(_ node: Node, writer: pid_t?) -> Bool {
        // Looked at first without a lock of the namespace: every writing open comes here.
        guard let shown = node.state.withLock({ $0.mayMoveNameOff ? $0.shownIdentity : nil }),
              let path = nodes.path(of: node.inode), let status = try? store.status(of: path),
              !(writer != nil && readersFollowWrites(classifier.role(forPath: path))),
              !KernelLocks.anyHeld(onInodesNumbered: [shown, status.identity])
        else { return false }
        let moved = namespace.writing { () -> (parent: Inode, name: FileName)? in
            // Decided under the node's lock, where writers attach: one that attached meanwhile
            // keeps this inode (its save would have no name to go to), and one that comes later
            // finds it left to the readers and looks again.
            let claimed = node.state.withLock { state -> Bool in
                guard state.mayMoveNameOff else { return false }
                state.superseded = true
                state.formerIdentity = shown
                return true
            }
            guard claimed else { return nil }
            guard let moved = nodes.supersede(node, writer: writer) else {
                node.state.withLock { state in
                    state.superseded = false
                    state.formerIdentity = nil
                }
                return nil
            }
            return moved
        }
        guard let moved else { return false }
        logger.debug("\(path) left inode \(node.inode) to its cached readers")
        notifier.invalidateEntry(parent: moved.parent, name: moved.name)
        return true
    }

    /// Answers a writer's request for `node` with ESTALE, on which the kernel looks the name up
    /// again and repeats the request there, once: `node` has no name any more, or readers read it
    /// through the page cache. That retry must find an inode no reader reads through the cache,
    /// or it would be sent on a second time, and that ESTALE reaches its program. So the name is
    /// contended until `thread` comes back (`NodeTable.keepsReadersOffCache`), and the inode it leads to
    /// now is left to its cached readers, if it has any.
    func sendWriterBack(_ thread: pid_t, from node: Node) -> FUSEError {
        if let current = nodes.expectWriter(thread, backAt: node), current != node.inode, let currentNode = nodes.existingNode(current),
           let path = nodes.path(of: current), !readersFollowWrites(classifier.role(forPath: path))
        {
            _ = moveNameOffCachedReaders(currentNode, writer: nil)
        }
        return .stale
    }

    /// After a change made beside the mount: drops what the kernel caches of `inode`'s content and
    /// attributes. Cached readers of a version the change replaced keep their inode, and the name
    /// gets a new one; where it cannot move, their version is held until they close.
    func dropCachedContent(of inode: Inode) {
        if let node = nodes.existingNode(inode) {
            if storedVersionDiffers(fromCachedReadersOf: node), moveNameOffCachedReaders(node, writer: nil) { return }
            if node.state.withLock({ $0.holdForCachedReaders() }) { return }
        }
        notifier.invalidateContent(of: inode)
    }

    /// Whether cached readers of `node` read a version other than the stored one (not only its
    /// attributes changed, or this mount's own commit echoed back).
    private func storedVersionDiffers(fromCachedReadersOf node: Node) -> Bool {
        let (readers, cached) = node.state.withLock { ($0.cachedReaders, $0.cachedVersion) }
        guard readers > 0, let path = nodes.path(of: node.inode), let status = try? store.status(of: path) else { return false }
        return cached != status.version
    }

    /// Drops the kernel's pages and attributes of `node` after a commit here, unless a version is
    /// held (then that waits for its readers to close). An append is not held: readers read on
    /// into it.
    func invalidateContentUnlessHeld(_ node: Node) {
        guard node.state.withLock({ $0.heldStatus }) == nil else { return }
        notifier.invalidateContent(of: node.inode)
    }

    /// A cached reader closed; the last one lets the kernel see a version held for them.
    func releaseCachedReader(of node: Node) {
        let released = node.state.withLock { state -> Bool in
            state.cachedReaders = max(0, state.cachedReaders - 1)
            guard state.cachedReaders == 0, state.heldStatus != nil else { return false }
            state.heldStatus = nil
            state.cachedVersion = nil
            return true
        }
        if released { notifier.invalidateContent(of: node.inode) }
    }

    /// What attribute replies show for `node` while a version is held: the current status, with
    /// a size never below the held one (every size told to the kernel becomes the inode's one
    /// size, under the held readers too). Times are the current ones, so backup tools and `make`
    /// see the change.
    func shownStatus(_ status: FileStatus, staged: FileStatus?, of node: Node?) -> (FileStatus, FileStatus?) {
        // A change beside the mount shows in the store before its notice arrives (another mount's
        // commit is in the mirror a moment before it is delivered): held as the notice would.
        guard let held = node?.state.withLock({ state in
            state.holdIfChangedBeside(found: status.version)
            return state.heldStatus
        }) else { return (status, staged) }
        var shown = status
        shown.size = max(status.size, held.size)
        shown.blocks = max(status.blocks, held.blocks)
        guard var staged else { return (shown, nil) }
        staged.size = max(staged.size, held.size)
        return (shown, staged)
    }
}

extension NodeState {
    /// Whether the name may move off this inode (see `moveNameOffCachedReaders`): readers read it
    /// through the page cache, and no writer or stage is on it.
    var mayMoveNameOff: Bool {
        cachedReaders > 0 && !superseded && writableHandles == 0 && stagedFile == nil
    }

    /// Holds the version the cached readers read, if any are open (see `heldStatus`): before
    /// anything shows the kernel a size below theirs — a truncation, a commit that rewrote the
    /// document (appends are not held: readers follow them, as `tail -f` does), a change made
    /// beside the mount. Call before `live` is replaced. Whether a version is held.
    @discardableResult
    mutating func holdForCachedReaders() -> Bool {
        guard cachedReaders > 0, !readersFollowWrites else { return false }
        if heldStatus == nil { heldStatus = try? live?.status() }
        return heldStatus != nil
    }

    /// An open or an attribute reply finds a stored version other than the one cached readers read,
    /// changed beside this mount (no commit through it since they opened), before any notice of the
    /// change arrived: their version is held, as the notice would.
    mutating func holdIfChangedBeside(found version: FileVersion) {
        guard let cached = cachedVersion, cached != version, cachedAtCommit == commits else { return }
        holdForCachedReaders()
    }
}
