import Glibc
import DocumentStore
import FUSE
import Glibc
import Synchronization
import SystemSupport

/// An open file, as the kernel's file handle refers to it.
struct OpenFile: Sendable {
    enum Access: Sendable {
        /// A document or a package member: writes go to the node's stage, committed as a whole
        /// version judged by what the file is (its name, its package) when it is committed.
        case staged
        /// Raw data, stored as written: reads and writes go straight to the store file (until a
        /// rename makes it a document: then its writes are staged too).
        case raw(OwnedDescriptor)
    }

    let node: Node
    let access: Access
    let flags: Int32
    /// For a handle that cannot write: the committed version it reads.
    let view: ReadView?
    /// A reading handle served through the kernel's page cache.
    var readsThroughPageCache = false

    var isWritable: Bool { flags & O_ACCMODE != O_RDONLY }
    var appends: Bool { flags & O_APPEND != 0 }
}

/// The committed version a reading handle serves: the one current when it opened, so a reader never
/// mixes two versions, and later ones only where they extend it (appends), so `tail -f` follows.
final class ReadView: Sendable {
    private struct Version {
        var descriptor: OwnedDescriptor
        var commit: UInt64
    }

    private let version: OrderedMutex<Version>

    init(_ descriptor: OwnedDescriptor, commit: UInt64) {
        version = OrderedMutex(.leaf, Version(descriptor: descriptor, commit: commit))
    }

    /// The descriptor to read from, moved on to the node's current version when every commit since
    /// the one this view holds only appended.
    func descriptor(commits: UInt64, lastRewrite: UInt64, live: OwnedDescriptor?) -> OwnedDescriptor {
        version.withLock { version in
            if version.commit < commits, lastRewrite <= version.commit, let live {
                version = Version(descriptor: live, commit: commits)
            }
            return version.descriptor
        }
    }
}

/// An open directory: the listing taken at the last read from offset 0, so the offsets of the reads
/// that continue it stay valid while the directory changes.
struct DirectoryListing: Sendable {
    /// Where the directory was when its listing was taken (see `readDirectory`).
    var path: String
    var entries: [StoreDirectoryEntry]
    /// The directory, opened with each listing (readdirplus only) and kept for the reads that
    /// continue it, so they stat entries relative to it. An open whose listing the kernel has cached
    /// never opens it.
    var descriptor: OwnedDescriptor?
    /// The numbers `.` and `..` are listed with, taken with the listing.
    var ownIdentity: UInt64 = 0
    var parentIdentity: UInt64 = 0
}

/// Handles by number. Numbers are never reused within a mount.
final class HandleTable<Value: Sendable>: Sendable {
    private let handles = OrderedMutex<[UInt64: Value]>(.leaf, [:])
    private let nextHandle = Atomic<UInt64>(1)

    func insert(_ value: Value) -> UInt64 {
        let handle = nextHandle.add(1, ordering: .relaxed).oldValue
        handles.withLock { $0[handle] = value }
        return handle
    }

    func get(_ handle: UInt64) -> Value? { handles.withLock { $0[handle] } }

    /// How many are open.
    var count: Int { handles.withLock { $0.count } }

    /// Replaces the value of a handle that is still open.
    func replace(_ handle: UInt64, with value: Value) {
        handles.withLock { handles in
            if handles[handle] != nil { handles[handle] = value }
        }
    }

    @discardableResult
    func remove(_ handle: UInt64) -> Value? { handles.withLock { $0.removeValue(forKey: handle) } }
}
