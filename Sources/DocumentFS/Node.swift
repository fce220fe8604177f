import DocumentStore
import FUSE
import Glibc
import Synchronization
import SystemSupport

/// What DocFS knows of one inode while the kernel holds it. Open-file state lives here, not per
/// handle: every writable handle of a document writes the same staged bytes, and the kernel may
/// send a write through any of them (mmap write-back).
///
/// Two locks, at their levels of the hierarchy (`LockLevel`): `staging`, the outermost, is held
/// while a write lands in the stage and while a commit judges it (decoding may take seconds for a
/// large document); `state` is held only for short bookkeeping, so `stat`, `lookup` and reads never
/// wait for a decode.
final class Node: Sendable {
    let inode: Inode
    let staging: OrderedMutex<StageSlot>
    let state = OrderedMutex(.nodeState, NodeState())
    /// Set when a raw file, open in place, is renamed to a name a document type claims: its
    /// handles' writes are staged and judged from then on.
    let isStaged = Atomic<Bool>(false)
    /// The name the inode had when its record went (see `NodeTable.expectWriter`).
    let lastName = OrderedMutex<(parent: Inode, name: FileName)?>(.leaf, nil)

    init(inode: Inode) {
        self.inode = inode
        staging = OrderedMutex(.staging, key: inode, StageSlot())
    }
}

/// A node known without keeping it (and its open files) alive.
struct WeakNode {
    weak var node: Node?
}

struct StageSlot {
    var stage: Stage?
}

struct NodeState {
    /// Open handles of the inode, and how many of them may write. Counted under the same lock that
    /// sets up and tears down `live`, so a release racing with an open can never drop what the open
    /// just set up (a shell's RELEASE arrives after its close returns, while the next program opens).
    var openHandles = 0
    var writableHandles = 0
    /// Opens between finding the committed file and counting their handle: `live` stays for them.
    var opening = 0
    /// The document's name was taken off this inode while its readers read through the page cache
    /// (the kernel's next lookup makes a new one, see `DocumentFileSystem.moveNameOffCachedReaders`);
    /// this one serves them only.
    var superseded = false
    /// The inode number the kernel was last shown for this inode when it was opened (locks are
    /// listed under it).
    var shownIdentity: UInt64?
    /// The committed file, open while any handle of the document is.
    var live: OwnedDescriptor?
    /// The inode of `live` kept as a version after a change beside DocFS replaced it (so a second
    /// notice of that change keeps it no second time).
    var keptBesideInode: UInt64?
    /// The file this inode named when a rename replaced it or an unlink removed it while the kernel
    /// still held it: an open racing with a save-by-rename gets this old version, whole.
    var retained: OwnedDescriptor?
    /// The number the file was known by when its name went while it was open or held: what
    /// `fstat` still shows.
    var formerIdentity: UInt64?
    /// The stage's file while there is one (a mirror of `StageSlot.stage`), for attributes.
    var stagedFile: StagingFile?
    /// Threads that opened the document for writing or wrote to it; they see the staged size and
    /// times, everyone else the committed ones.
    var writerThreads: Set<pid_t> = []
    /// The last stored version known to decode, so an unchanged document is decoded once.
    var decodedVersion: FileVersion?
    /// The stored version whose bytes the kernel's page cache holds (from the last cached open),
    /// and how many commits through this mount the node had seen then.
    var cachedVersion: FileVersion?
    var cachedAtCommit: UInt64 = 0
    /// Whether any handle used the kernel's page cache since the last commit: only then must a
    /// commit drop the cached pages.
    var pageCacheInUse = false
    /// Reading handles open through the kernel's page cache.
    var cachedReaders = 0
    /// Opened as a file whose readers follow its writes (`DocumentFileSystem.readersFollowWrites`):
    /// they keep no version, so none is held for them, and a writer shares their inode.
    var readersFollowWrites = false
    /// The version cached readers read, held while a writer is at work or the stored version
    /// changed (see `DocumentFileSystem+HeldVersions`), until the last of them closes.
    var heldStatus: FileStatus?
    /// Counts commits; `lastRewrite` is the last one that was not a pure append. A reader keeps the
    /// version it opened and follows later versions only while they extend it (`tail -f`).
    var commits: UInt64 = 0
    var lastRewrite: UInt64 = 0

    /// The file committed readers see: the live one, or the one kept after a replacement.
    var committed: OwnedDescriptor? { live ?? retained }

    /// The live file goes with the last handle, unless an open is on its way to one.
    mutating func dropLiveIfUnused() {
        if openHandles == 0 && opening == 0 { live = nil }
    }

    /// An open counted its handle, or failed.
    mutating func finishedOpening() {
        opening = max(0, opening - 1)
        dropLiveIfUnused()
    }

    /// Whether a writer is at work on the inode: readers that open it bypass the kernel's page
    /// cache. The cache and the file size the kernel keeps are shared by every handle of the
    /// inode, and a writer changes both (an O_TRUNC open sets the size to 0, its attributes and
    /// writes move it); a reader that reads the committed file directly sees none of that. (So do
    /// readers of a contended name: `NodeTable.keepsReadersOffCache`.)
    var isBeingWritten: Bool { writableHandles > 0 || stagedFile != nil }
}

/// A write in progress.
struct Stage {
    let file: StagingFile
    /// Whether it differs from what was stored (a commit is due).
    var isDirty: Bool
    /// Threads whose writes it holds. A close by any other process (a child that inherited the
    /// descriptor, another opener) does not judge it: the writer is not done.
    var writers: Set<pid_t> = []
    /// Who wrote last: a commit judges the stage with that user's rights (its validator runs as
    /// them), whoever's request the commit happens in (the kernel sends the last release as root).
    var writer: Ownership?
    /// Counts changes, so a refused version is neither quarantined twice nor judged twice.
    var generation: UInt64 = 0
    /// The last refusal: of which generation (that version is in the quarantine), at which path,
    /// why. The same bytes at the same name are refused again without decoding them again (a close
    /// that was refused is followed by the last release, which would otherwise run a large decode,
    /// or a slow validator, twice).
    var refusal: (generation: UInt64, path: String, reason: String)?
    /// The generation a close or fsync answered with an error of the store's (a database that did
    /// not come back within its wait): the writer was told those bytes are not stored, so they are
    /// never committed later, unless written to again (see `settleStage`).
    var answeredUnstored: UInt64?
    /// The lowest offset written or truncated to since the stage was seeded: a stage that changed
    /// nothing below `baseSize` only appends.
    var lowestChange: Int64 = .max
    /// The size of the committed version the stage was seeded from; nil for one that started empty
    /// (O_TRUNC, a new file), which is a rewrite.
    var baseSize: Int64?
    /// Made without a seed (O_TRUNC, a new file): until its first change its file holds nothing.
    var startedEmpty = false

    /// Whether the stage's file is still empty as made: no change reached it yet.
    var isUntouchedEmpty: Bool { startedEmpty && generation == 0 }
    /// Whether committing the stage only appends to the version it was seeded from.
    var onlyAppends: Bool { baseSize.map { lowestChange >= $0 } ?? false }
    /// The errno of a write that failed (ENOSPC, EIO, …): nothing of this stage is ever committed;
    /// every later write, flush and fsync returns it until the last writable handle closes.
    var failure: Int32?
}
