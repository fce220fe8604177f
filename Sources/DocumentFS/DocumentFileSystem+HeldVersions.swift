import DocumentStore
import FUSE
import SystemSupport

/// Readers that read a document through the kernel's page cache while its version changes — a
/// writer on this mount, another mount's commit, a program replacing it in the store. The kernel
/// keeps one size and one page cache per inode: telling it a smaller size, or letting a writer's
/// bytes into the cache, would end those readers' reads early or splice another version into
/// theirs. So their version is held: no attribute reply shows a size below its size, and everyone
/// else who opens meanwhile, writers included, bypasses the cache; the kernel is told the truth
/// when the last of those readers closes.
extension DocumentFileSystem {
    /// After a change made beside the mount: drops what the kernel caches of `inode`'s content and
    /// attributes, or, while cached readers are open, holds their version until they close.
    func dropCachedContent(of inode: Inode) {
        if let node = nodes.existingNode(inode) {
            if node.state.withLock({ $0.holdForCachedReaders() }) { return }
        }
        notifier.invalidateContent(of: inode)
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
        guard let held = node?.state.withLock({ $0.heldStatus }) else { return (status, staged) }
        var shown = status
        shown.size = max(status.size, held.size)
        shown.blocks = max(status.blocks, held.blocks)
        guard var staged else { return (shown, nil) }
        staged.size = max(staged.size, held.size)
        return (shown, staged)
    }
}

extension NodeState {
    /// Holds the version the cached readers read, if any are open (see `heldStatus`): before
    /// anything shows the kernel a size below theirs — a truncation, a commit that rewrote the
    /// document (appends are not held: readers follow them, as `tail -f` does), a change made
    /// beside the mount. Call before `live` is replaced. Whether a version is held.
    @discardableResult
    mutating func holdForCachedReaders() -> Bool {
        guard cachedReaders > 0 else { return false }
        if heldStatus == nil { heldStatus = try? live?.status() }
        return heldStatus != nil
    }

    /// An open finds a stored version other than the one cached readers read, changed beside this
    /// mount (no commit through it since they opened), before any notice of the change arrived:
    /// their version is held, as the notice would.
    mutating func holdIfChangedBeside(opening version: FileVersion) {
        guard let cached = cachedVersion, cached != version, cachedAtCommit == commits else { return }
        holdForCachedReaders()
    }
}
