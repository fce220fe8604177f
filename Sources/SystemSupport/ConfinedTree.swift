import CSystemShims
import Glibc
import Synchronization

/// A directory that paths inside it can never lead out of. While a tree is open, every system call
/// `SystemSupport` makes on a path below it (`Paths`, `FileIO`, `FileStatus`, and through them
/// `FileWrapper` and the stores) resolves that path from a descriptor of the tree held since it was
/// opened, not from `/`: the directories on the way are opened with `openat2(RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`, and the call itself is made on the last name
/// relative to them (`*at`, with no symbolic link followed). So a symbolic link swapped into the
/// tree, a folder renamed under a call, or a name such as `..` fails the call (ELOOP, ENOENT,
/// EINVAL) instead of reaching anything outside.
///
/// A store opens its root and its private area as trees: the private area is then reached through
/// its own descriptor, so a store writer who renames it away and puts another folder or a link in
/// its place changes nothing the daemon stages, quarantines or installs. A folder moved within the
/// private area (a package's version renamed into the archive, at every save) changes what no path
/// of the store's root tree leads to, so it leaves that tree's folders resolved (see
/// `foldersChanged(at:)`).
///
/// Trees are registered process-wide because the calls that must honour them are everywhere a path
/// is used (a lazily read `FileWrapper`, a package written by `FileWrapperWriter`); the longest
/// tree containing a path wins. The tree's own path (the root itself) is resolved as any path is.
public final class ConfinedTree: Sendable {
    /// The tree's absolute path, as given (no trailing slash).
    public let path: String
    /// The bytes `path` stands for, to match paths below it.
    let pathBytes: [UInt8]
    let descriptor: OwnedDescriptor
    /// What names this tree's folders in the thread's folder cache: unlike a descriptor's number,
    /// never the same for two trees.
    let serial: UInt
    /// A store's private area (or a folder in it), reached by no path of the mount.
    let isPrivateArea: Bool
    /// The device and inode numbers of the directory opened (a private area's, to see whether it is
    /// still at its path).
    private let opened: (device: UInt64, inode: UInt64)?
    /// Whether a folder moved within the private areas may change what a path below this tree
    /// leads to: for the private areas themselves, and for a tree opened on a descriptor (which may
    /// be a folder inside one).
    let followsPrivateChanges: Bool
    private static let serials = Atomic<UInt>(1)

    /// Opens the directory at `path` (which must be one; a symbolic link as its last name is
    /// refused) and confines every path below it until this tree is released. A tree inside
    /// another (a store's private area, its staging folder) is opened beneath that one.
    /// `isPrivateArea`: the tree is a store's private area, or a folder in it.
    public init(path: String, isPrivateArea: Bool = false) throws {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        let raw = try FileSystemPath.at(trimmed) { directory, name in
            try retryingOnInterrupt("open", path: trimmed) {
                docfs_openat(directory, name, FileSystemPath.openPathOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
            }
        }
        self.path = trimmed
        pathBytes = FileSystemPath.bytes(of: trimmed)
        descriptor = OwnedDescriptor(raw)
        serial = Self.serials.add(1, ordering: .relaxed).oldValue
        self.isPrivateArea = isPrivateArea
        followsPrivateChanges = isPrivateArea
        opened = (try? FileStatus.of(descriptor: raw, path: trimmed)).map { ($0.device, $0.inode) }
        ConfinedTrees.register(self)
    }

    /// Confines every path below `path`, a name the caller chose for the directory open as
    /// `descriptor` (`/proc/self/fd/N/.`, which the kernel resolves to that directory itself): each
    /// is resolved beneath that directory, wherever it has moved since it was opened. The caller
    /// ends it with `release()`: the table holds every tree until then.
    public init(descriptor: OwnedDescriptor, path: String) {
        self.path = path
        pathBytes = FileSystemPath.bytes(of: path)
        self.descriptor = descriptor
        serial = Self.serials.add(1, ordering: .relaxed).oldValue
        isPrivateArea = false
        followsPrivateChanges = true
        opened = nil
        ConfinedTrees.register(self)
    }

    /// Leaves the process's table of trees (which holds each tree, so a tree never ends by
    /// itself): paths below it are resolved as any path again, and its descriptor closes once no
    /// thread holds the table as it was (each lets it go at its next call on an absolute path while
    /// a tree is open, or as it ends: an idle worker may hold it until then).
    public func release() { ConfinedTrees.unregister(self) }

    /// Runs `body` (one request's work, on the calling thread) keeping each folder it resolves
    /// beneath a tree, handed out again, in this request or the thread's next ones, only within a
    /// millisecond of its opening: a save or an rm names the document's folder six to eight times
    /// within that, and each time it was opened again (`openat2`) and closed. Nothing is handed out
    /// past the millisecond: a folder moved beside the mount while a request waits (on a
    /// validator, say) is resolved again and found gone, as before. A folder renamed or removed on
    /// any thread makes every thread resolve its folders again (see `foldersChanged(at:)`).
    public static func keepingFoldersResolved<T>(_ body: () throws -> T) rethrows -> T {
        docfs_folder_cache_begin()
        defer { docfs_folder_cache_end() }
        return try body()
    }

    /// Makes every thread resolve its folders again: a folder moved where the caller could not say
    /// beforehand that none would (see `FileIO.rename`'s `movesFolder`).
    public static func resolveFoldersAgain() { docfs_folder_cache_clear() }

    /// Makes the threads resolve again the folders that a folder moved or removed at `paths` (its
    /// old and new paths) may have changed: when every path lies in a private area that is still
    /// where its path says, only the folders of the trees that follow those; otherwise every folder
    /// (an exchange between the private area and the store changes both, and a private area that a
    /// store writer moved into the store beside the mount is reached by the store's paths too).
    public static func foldersChanged(at paths: String...) {
        // Each tree looked at once: both paths of a move in the archive are in one.
        var checked: [ObjectIdentifier] = []
        let inPrivateAreas = paths.allSatisfy { path in
            guard let (tree, _) = ConfinedTrees.containing(path), tree.isPrivateArea else { return false }
            if checked.contains(ObjectIdentifier(tree)) { return true }
            checked.append(ObjectIdentifier(tree))
            return tree.isAtItsPath
        }
        if inPrivateAreas { docfs_folder_cache_clear_private() } else { docfs_folder_cache_clear() }
    }

    /// Whether the tree's path (resolved as any path is) still leads to the directory it opened,
    /// and so does that of each private area it is in (a staging folder is found through its
    /// private area's descriptor, wherever that went).
    private var isAtItsPath: Bool {
        guard let opened, let now = try? FileStatus.of(path: path), now.device == opened.device, now.inode == opened.inode else { return false }
        guard let (outer, _) = ConfinedTrees.containing(path), outer.isPrivateArea else { return true }
        return outer.isAtItsPath
    }

    /// The tree's own status, from its descriptor (the directory opened, wherever it is now).
    public func status() throws -> FileStatus { try FileStatus.of(descriptor: descriptor.rawValue, path: path) }

    /// Calls `body` with the descriptor of the directory holding the item at `relative` (a path
    /// below the tree, checked name by name) and that item's name.
    func resolve<T>(_ relative: [UInt8], fullPath: String, _ body: (Int32, UnsafePointer<CChar>) throws -> T) throws -> T {
        var bytes = relative
        try Self.checkComponents(bytes, fullPath: fullPath)
        let slash = bytes.lastIndex(of: UInt8(ascii: "/"))
        bytes.append(0)
        return try bytes.withUnsafeMutableBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { characters -> T in
                guard let base = characters.baseAddress else { throw SystemCallError(errno: EINVAL, operation: "resolve", path: fullPath) }
                guard let slash else { return try body(descriptor.rawValue, base) }
                base[slash] = 0
                // Within a millisecond, a folder resolved once is used again (see docfs_folder_cache_find).
                var parent = docfs_folder_cache_find(serial, base, slash)
                if parent < 0 {
                    // Read first: a rename elsewhere while the folder opens makes it stale at once.
                    let follows: Int32 = followsPrivateChanges ? 1 : 0
                    let generation = docfs_folder_cache_generation(follows)
                    parent = try openDirectory(base, length: slash, fullPath: fullPath)
                    if docfs_folder_cache_add(serial, base, slash, parent, generation, follows) == 0 {
                        defer { close(parent) }
                        return try body(parent, base + slash + 1)
                    }
                }
                defer { docfs_folder_cache_release(parent) }
                return try body(parent, base + slash + 1)
            }
        }
    }

    /// Opens the directory at the first `length` bytes of `relative` (NUL-terminated there) beneath
    /// the tree, without following any link. A path longer than one system call takes is opened a
    /// run of whole names at a time, each beneath the last.
    private func openDirectory(_ relative: UnsafeMutablePointer<CChar>, length: Int, fullPath: String) throws -> Int32 {
        var directory = descriptor.rawValue
        var start = 0
        while true {
            var end = length
            if end - start > FileSystemPath.longestPath {
                end = start + FileSystemPath.longestPath
                while end > start, relative[end] != CChar(UInt8(ascii: "/")) { end -= 1 }
            }
            let saved = relative[end]
            relative[end] = 0
            let opened = docfs_open_beneath(directory, relative + start, FileSystemPath.openPathOnly | O_DIRECTORY)
            let failure = errno
            relative[end] = saved
            if directory != descriptor.rawValue { close(directory) }
            guard opened >= 0 else { throw SystemCallError(errno: failure, operation: "resolve", path: fullPath) }
            directory = opened
            if end >= length { return directory }
            start = end + 1
        }
    }

    /// Every name on the way must be a `FileName`: no empty name (`a//b`), no `.` or `..`, none
    /// longer than 255 bytes.
    private static func checkComponents(_ bytes: [UInt8], fullPath: String) throws {
        var start = 0
        for index in 0...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: "/") {
            do {
                try FileName.check(bytes[start..<index])
            } catch {
                throw SystemCallError(errno: error.errno, operation: "resolve (\(error))", path: fullPath)
            }
            start = index + 1
        }
    }
}

/// The open trees, longest path first. Asked on every path-based system call, by every thread, and
/// changed only as trees open and close: each thread asks its own copy, taken again only when a
/// tree opened or closed since (one atomic load on the way, no lock shared by the threads).
enum ConfinedTrees {
    private static let trees = OrderedMutex<[ConfinedTree]>(.innermost, [])
    /// How many trees are open: paths outside every tree (nearly all in a process without one)
    /// skip the rest.
    private static let count = Atomic<Int>(0)
    /// Advanced, holding `trees`' lock, each time a tree opens or closes.
    private static let generation = Atomic<UInt64>(1)

    /// One thread's copy of `trees`, as of `generation`. A tree closed since stays in a copy (its
    /// descriptor open) until that thread takes a new one, or ends.
    private final class ThreadCopy {
        var generation: UInt64 = 0
        var trees: [ConfinedTree] = []
    }

    private static let copyKey: pthread_key_t = {
        var key = pthread_key_t()
        // A thread's copy goes as the thread ends.
        pthread_key_create(&key) { copy in
            guard let copy else { return }
            Unmanaged<ThreadCopy>.fromOpaque(copy).release()
        }
        return key
    }()

    private static var threadCopy: ThreadCopy {
        if let existing = pthread_getspecific(copyKey) { return Unmanaged<ThreadCopy>.fromOpaque(existing).takeUnretainedValue() }
        let made = ThreadCopy()
        pthread_setspecific(copyKey, Unmanaged.passRetained(made).toOpaque())
        return made
    }

    static func register(_ tree: ConfinedTree) {
        trees.withLock { trees in
            trees.append(tree)
            trees.sort { $0.pathBytes.count > $1.pathBytes.count }
            count.store(trees.count, ordering: .releasing)
            generation.add(1, ordering: .releasing)
        }
    }

    static func unregister(_ tree: ConfinedTree) {
        trees.withLock { trees in
            trees.removeAll { $0 === tree }
            count.store(trees.count, ordering: .releasing)
            generation.add(1, ordering: .releasing)
        }
    }

    /// The tree strictly containing `path`, and the part of the path below it.
    static func containing(_ path: String) -> (ConfinedTree, [UInt8])? {
        guard count.load(ordering: .acquiring) > 0, path.utf8.first == UInt8(ascii: "/") else { return nil }
        let copy = threadCopy
        if copy.generation != generation.load(ordering: .acquiring) {
            (copy.trees, copy.generation) = trees.withLock { ($0, generation.load(ordering: .relaxed)) }
        }
        let bytes = FileSystemPath.bytes(of: path)
        let found = copy.trees.first { tree in
            let root = tree.pathBytes
            return bytes.count > root.count + 1 && bytes[root.count] == UInt8(ascii: "/") && bytes.starts(with: root)
        }
        guard let found else { return nil }
        return (found, Array(bytes[(found.pathBytes.count + 1)...]))
    }
}
