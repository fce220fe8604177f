import SystemSupport
import Dispatch
import FUSE
import Synchronization

/// Sends cache invalidations to the kernel from a queue of its own: an invalidation sent from
/// inside a request handler for the same inode deadlocks (the kernel waits for the handler).
final class KernelNotifier: Sendable {
    private let session = OrderedMutex<FUSESession?>(.leaf, nil)
    private let queue = DispatchQueue(label: "docfs.kernel-notifier")

    func attach(_ session: FUSESession?) { self.session.withLock { $0 = session } }

    /// The kernel's cached pages and attributes of `inode` no longer match the store.
    func invalidateContent(of inode: Inode) {
        queue.async { [self] in
            _ = session.withLock { $0 }?.invalidateInode(inode)
        }
    }

    /// The kernel's cached entry `name` in `parent` (a name, or the absence of one) is stale.
    func invalidateEntry(parent: Inode, name: FileName) {
        queue.async { [self] in
            _ = session.withLock { $0 }?.invalidateEntry(parent: parent, name: name)
        }
    }

    /// The kernel's cached attributes of `inode` are stale (a commit replaced the stored file, whose
    /// ctime moved). Attribute-only invalidation takes no inode or page lock in the kernel, so unlike
    /// content invalidation it is sent at once, before the reply to the request that committed.
    func invalidateAttributes(of inode: Inode) {
        _ = session.withLock { $0 }?.invalidateInode(inode, offset: -1)
    }
}
