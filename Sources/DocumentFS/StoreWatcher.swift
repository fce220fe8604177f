import CSystemShims
import Foundation
import FUSE
import Glibc
import Synchronization
import SystemSupport

/// Watches the store's directories that the kernel holds, with fanotify, so the kernel may cache
/// names, attributes and pages for long: a change made beside DocFS — another program writing,
/// renaming or removing directly in the store — drops exactly the entries and inodes it touched.
///
/// fanotify (not inotify) because each event says which process made it: DocFS's own changes, which
/// it already tells the kernel about, are skipped. It needs CAP_SYS_ADMIN; without it (or on a file
/// system that cannot report file handles, such as most network file systems) there is no watcher
/// and the mount falls back to short cache lifetimes.
final class StoreWatcher: Sendable {
    /// What changed: an entry of a watched directory (`name` in `parent`), or everything, when the
    /// kernel's event queue overflowed.
    enum Change: Sendable {
        /// `name` nil: the directory itself (its attributes).
        case entry(parent: Inode, name: FileName?)
        case everything
    }

    private let descriptor: Int32
    private let directories = OrderedMutex<[Data: Inode]>(.leaf, [:])
    /// The stored directory (its inode number) each watched node was marked on: a package commit
    /// swaps a new directory in under the same name, which must be marked anew.
    private let watched = OrderedMutex<[Inode: UInt64]>(.leaf, [:])
    private let ownProcess = getpid()
    /// How long the watcher lets events gather after draining the queue.
    static let gatheringMicroseconds: UInt32 = 10_000

    /// Nil where fanotify is not available to this process.
    init?() {
        let descriptor = docfs_fanotify_open()
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Watches the directory `inode`, stored as the store's inode `storedAs` and opened by `open`
    /// (beneath the store, so a link swapped in is never followed to a directory outside), unless
    /// that one is watched already. Returns false when the directory cannot be watched.
    @discardableResult
    func watch(_ inode: Inode, storedAs: UInt64, open: () throws -> OwnedDescriptor) -> Bool {
        if watched.withLock({ $0[inode] == storedAs }) { return true }
        guard let directory = try? open() else { return false }
        var handle = [UInt8](repeating: 0, count: 160)
        var length = UInt32(handle.count)
        guard docfs_file_handle(directory.rawValue, &handle, &length) == 0,
              docfs_fanotify_watch_directory(descriptor, directory.rawValue) == 0
        else { return false }
        let key = Data(handle[0..<Int(length)])
        directories.withLock { $0[key] = inode }
        watched.withLock { $0[inode] = storedAs }
        return true
    }

    /// Delivers changes made by other processes to `handle`, on a thread of its own, until the
    /// process ends.
    func start(_ handle: @escaping @Sendable (Change) -> Void) {
        let thread = Thread { [self] in
            var events = [docfs_watch_event](repeating: docfs_watch_event(), count: 64)
            while true {
                let count = docfs_fanotify_read(descriptor, &events, Int32(events.count))
                if count < 0 {
                    if errno == EINTR { continue }
                    return
                }
                for event in events[0..<Int(count)] { deliver(event, to: handle) }
                // Events come in bursts — most of them DocFS's own, three or more per file it
                // writes — and waking for each took a context switch from the thread serving the
                // writer (a third of a small file's create on two cores). Once the queue is
                // drained, let the next burst gather: a change beside DocFS shows this much later.
                if Int(count) < events.count { usleep(Self.gatheringMicroseconds) }
            }
        }
        thread.name = "docfs-store-watcher"
        thread.start()
    }

    private func deliver(_ event: docfs_watch_event, to handle: (Change) -> Void) {
        if event.mask & docfs_fanotify_overflow != 0 {
            handle(.everything)
            return
        }
        guard event.pid != ownProcess, event.handle_length > 0 else { return }
        var copy = event
        let key = withUnsafeBytes(of: &copy.handle) { Data($0.prefix(Int(event.handle_length))) }
        guard let parent = directories.withLock({ $0[key] }) else { return }
        let bytes = withUnsafeBytes(of: &copy.name) { Array($0.prefix(while: { $0 != 0 })) }
        // An event about the directory itself (its attributes) has no name, or ".".
        if bytes.isEmpty || bytes == [UInt8(ascii: ".")] {
            handle(.entry(parent: parent, name: nil))
        } else if let name = try? FileName(bytes: bytes) {
            handle(.entry(parent: parent, name: name))
        }
    }
}
