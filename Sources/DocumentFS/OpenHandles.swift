import Glibc
import DocumentStore
import FUSE
import Synchronization
import SystemSupport

/// An open file, as the kernel's file handle refers to it.
struct OpenFile: Sendable {
    enum Access: Sendable {
        /// A document: reads and writes go through the node's live file and stage.
        case document(DocumentClaim)
        /// A file inside a package: staged like a document, committed as a change to the package.
        case packageMember(PackageMember)
        /// Raw data, stored as written: reads and writes go straight to the store file.
        case raw(OwnedDescriptor)
    }

    let node: Node
    let access: Access
    let flags: Int32

    var isWritable: Bool { flags & O_ACCMODE != O_RDONLY }
}

/// An open directory: the listing taken at opendir, so offsets stay valid while it changes.
struct DirectoryListing: Sendable {
    let path: String
    let entries: [StoreDirectoryEntry]
    /// The directory, open while the listing is, so readdirplus stats entries relative to it.
    let descriptor: OwnedDescriptor?
}

/// Handles by number. Numbers are never reused within a mount.
final class HandleTable<Value: Sendable>: Sendable {
    private let handles = Mutex<[UInt64: Value]>([:])
    private let nextHandle = Atomic<UInt64>(1)

    func insert(_ value: Value) -> UInt64 {
        let handle = nextHandle.add(1, ordering: .relaxed).oldValue
        handles.withLock { $0[handle] = value }
        return handle
    }

    func get(_ handle: UInt64) -> Value? { handles.withLock { $0[handle] } }

    @discardableResult
    func remove(_ handle: UInt64) -> Value? { handles.withLock { $0.removeValue(forKey: handle) } }
}
