import SystemSupport
import FUSE
import Glibc
import Synchronization

/// The inodes of a read-only view the mount shows beside its documents (the quarantine, the
/// versions): one a path, numbered from `first` up, counted as the kernel looks them up and
/// dropped when it forgets them all.
final class ViewInodes: Sendable {
    private struct Known {
        var pathsByInode: [Inode: String] = [:]
        /// Keyed by the path's bytes: Swift compares strings by canonical equivalence, so "café"
        /// spelled NFC and NFD would be one key for two files.
        var inodesByPath: [[UInt8]: Inode] = [:]
        var lookups: [Inode: UInt64] = [:]
        var next: Inode
    }
    private let known: OrderedMutex<Known>

    init(first: Inode) {
        known = OrderedMutex(.leaf, Known(next: first))
    }

    /// The path of a view inode the kernel holds; ESTALE for one it forgot.
    func path(of inode: Inode) throws(FUSEError) -> String {
        guard let path = known.withLock({ $0.pathsByInode[inode] }) else { throw .stale }
        return path
    }

    /// The inode for `path`, counting the kernel's new reference to it.
    func lookedUp(_ path: String) -> Inode {
        known.withLock { known in
            let key = Array(path.utf8)
            let inode = known.inodesByPath[key] ?? {
                let new = known.next
                known.next += 1
                known.inodesByPath[key] = new
                known.pathsByInode[new] = path
                return new
            }()
            known.lookups[inode, default: 0] += 1
            return inode
        }
    }

    /// Whether the kernel holds any inode of the view.
    var isEmpty: Bool { known.withLock { $0.pathsByInode.isEmpty } }

    /// The inode the kernel holds for `path`, if it holds one.
    func heldInode(for path: String) -> Inode? {
        known.withLock { $0.inodesByPath[Array(path.utf8)] }
    }

    func forget(_ inode: Inode, count: UInt64) {
        known.withLock { known in
            guard let held = known.lookups[inode] else { return }
            guard held > count else {
                known.lookups[inode] = nil
                if let path = known.pathsByInode.removeValue(forKey: inode) { known.inodesByPath[Array(path.utf8)] = nil }
                return
            }
            known.lookups[inode] = held - count
        }
    }
}

/// One name of a view's folder, as listed when the folder was opened.
struct ViewEntry: Sendable {
    var name: String
    var number: UInt64
    var mode: mode_t
}

extension HandleTable where Value == [ViewEntry] {
    /// Plain entries, also for readdirplus (the quarantine view's): an entry without attributes
    /// makes the kernel look the name up when it is used, with that user's rights. The versions
    /// view gives readdirplus its entries (`VersionsView.readDirectory`).
    func readDirectory(handle: UInt64, offset: Int64, add: (DirectoryEntry) -> Bool) throws(FUSEError) {
        guard let entries = get(handle) else { throw .badHandle }
        var position = Int(max(0, offset))
        while position < entries.count {
            let listed = entries[position]
            position += 1
            if !add(DirectoryEntry(name: listed.name, nextOffset: Int64(position), number: listed.number, mode: listed.mode)) { return }
        }
    }
}
