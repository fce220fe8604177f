import DocumentStore
import FUSE
import SystemSupport

/// A version changed beside this mount (another mount's commit, a program writing in the store)
/// while readers here read an older one through the kernel's page cache. The kernel keeps one size
/// and one page cache per inode: dropping them, or telling it the new size, would end those
/// readers' reads early or splice the new version into the old. So the old version is held, its
/// size and times shown, until the last of those readers closes; then the kernel is told. Readers
/// that open meanwhile read the new version past the cache.
extension DocumentFileSystem {
    /// Drops what the kernel caches of `inode`'s content and attributes, or, while cached readers
    /// are open, holds their version until they close.
    func dropCachedContent(of inode: Inode) {
        if let node = nodes.existingNode(inode) {
            let held = node.state.withLock { state -> Bool in
                guard state.cachedReaders > 0 else { return false }
                if state.heldStatus == nil { state.heldStatus = try? state.live?.status() }
                return state.heldStatus != nil
            }
            if held { return }
        }
        notifier.invalidateContent(of: inode)
    }

    /// An open finds a stored version other than the one cached readers read, changed beside this
    /// mount (no commit through it since they opened), before any notice of the change arrived:
    /// their version is held, as `dropCachedContent` would. Call with the node's state locked,
    /// before `live` is replaced.
    func holdCachedVersionIfChangedBeside(_ state: inout NodeState, opening version: FileVersion) {
        guard state.cachedReaders > 0, state.heldStatus == nil, let cached = state.cachedVersion, cached != version,
              state.cachedAtCommit == state.commits
        else { return }
        state.heldStatus = try? state.live?.status()
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

    /// The status attribute replies show for `node`: the held version's size and times while one
    /// is held.
    func shownStatus(_ status: FileStatus, of node: Node?) -> FileStatus {
        guard let held = node?.state.withLock({ $0.heldStatus }) else { return status }
        var shown = status
        shown.size = held.size
        shown.blocks = held.blocks
        shown.modificationTime = held.modificationTime
        shown.changeTime = held.changeTime
        return shown
    }
}
