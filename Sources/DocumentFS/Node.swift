import DocumentStore
import FUSE
import Synchronization
import SystemSupport

/// What DocFS knows of one inode while the kernel holds it. Open-file state lives here, not per
/// handle: every handle of a document reads the same staged bytes, and the kernel may send a
/// write through any of them (mmap write-back).
final class Node: Sendable {
    let inode: Inode
    let state = Mutex(NodeState())

    init(inode: Inode) { self.inode = inode }
}

struct NodeState {
    /// Open handles of the inode. Counted under the same lock that sets up and tears down `live`
    /// and `stage`, so a release racing with an open can never drop what the open just set up
    /// (a shell's RELEASE arrives after its close returns, while the next program already opens).
    var openHandles = 0
    /// The stored file, open while any handle of the document is.
    var live: OwnedDescriptor?
    /// Writes not yet committed; reads see them.
    var stage: Stage?
    /// The last stored version known to decode, so an unchanged document is decoded once.
    var decodedVersion: FileVersion?
    /// The stored version whose bytes the kernel's page cache holds (from the last open or commit).
    var cachedVersion: FileVersion?
}

/// A write in progress.
struct Stage {
    let file: StagingFile
    /// Whether it differs from what was stored (a commit is due).
    var isDirty: Bool
    /// Made by an O_TRUNC open and not written since. A shell opening `> file` dups the descriptor
    /// and closes the original before the command writes; committing at that flush would store
    /// (or refuse) an empty document. Such a stage is committed at release or fsync instead.
    var isOnlyTruncated = false
}
