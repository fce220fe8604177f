import CSystemShims
import Foundation
import Glibc

/// Thin, throwing wrappers over the file system calls used on DocFS's hot paths, where
/// `FileManager` would cost an allocation-heavy detour or hide the errno.
public enum FileIO {
    /// Opens a regular file or a folder, never through a symbolic link as its last name, and never
    /// anything that could make the caller wait or act: a FIFO (whose open waits for a writer), a
    /// socket or a device is refused with ENXIO, found on a descriptor opened with O_NONBLOCK
    /// before anything is read from it. A file made by this call
    /// (O_CREAT | O_EXCL) is regular by construction.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644) throws -> Int32 {
        try FileSystemPath.at(path) { directory, name in
            let safe = flags | O_CLOEXEC | O_NOFOLLOW
            let creating = flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL
            if creating || flags & (O_DIRECTORY | FileSystemPath.openPathOnly) != 0 {
                return try retryingOnInterrupt("open", path: path) { docfs_openat(directory, name, safe, mode) }
            }
            let descriptor = try retryingOnInterrupt("open", path: path) { docfs_openat(directory, name, safe | O_NONBLOCK, mode) }
            var status = stat()
            guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG || status.st_mode & S_IFMT == S_IFDIR else {
                Glibc.close(descriptor)
                throw SystemCallError(errno: ENXIO, operation: "open (only regular files and folders are opened)", path: path)
            }
            // F_SETFL takes only the status flags (O_APPEND, O_DIRECT, O_NOATIME, O_ASYNC,
            // O_NONBLOCK) from its argument: the caller's, which lack O_NONBLOCK here.
            if flags & O_NONBLOCK == 0 { _ = fcntl(descriptor, F_SETFL, flags) }
            return descriptor
        }
    }

    public static func close(_ descriptor: Int32) {
        _ = Glibc.close(descriptor)
    }

    /// Writes every byte, retrying short writes; at `offset` when given, else at the file position.
    public static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, offset: Int64? = nil, path: String? = nil) throws {
        var done = 0
        while done < bytes.count {
            guard let base = bytes.baseAddress else { return }
            let pointer = base + done
            let remaining = bytes.count - done
            let written: Int
            if let offset {
                written = try retryingOnInterrupt("pwrite", path: path) { pwrite(descriptor, pointer, remaining, off_t(offset) + off_t(done)) }
            } else {
                written = try retryingOnInterrupt("write", path: path) { Glibc.write(descriptor, pointer, remaining) }
            }
            done += written
        }
    }

    public static func writeAll(_ descriptor: Int32, _ data: Data, offset: Int64? = nil, path: String? = nil) throws {
        try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) throws in
            try writeAll(descriptor, buffer, offset: offset, path: path)
        }
    }

    /// Files smaller than this are read into memory; larger ones are mapped (see `contents`).
    public static let mappingThreshold = 64 * 1024

    /// The first `size` bytes of the file: a mapping when `mapping` allows and the file is at least
    /// `mappingThreshold` long, so a large file costs address space rather than memory; otherwise
    /// read with `pread`, which leaves the descriptor's position alone (descriptors are shared).
    public static func contents(of descriptor: Int32, size: Int, mapping: Bool = true, path: String? = nil) throws -> Data {
        if mapping && size >= mappingThreshold { return try mapContents(descriptor, size: size, path: path) }
        var data = Data(count: size)
        var done = 0
        try data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) throws in
            guard let base = buffer.baseAddress else { return }
            while done < size {
                let count = try retryingOnInterrupt("pread", path: path) { pread(descriptor, base + done, size - done, off_t(done)) }
                if count == 0 { break }
                done += count
            }
        }
        return data.prefix(done)
    }

    /// The whole file at `path` (its own bytes: Foundation's `Data(contentsOf:)` reads a UTF-8
    /// look-alike of a path that is not UTF-8), read into memory; a link at its end is followed
    /// only with `followingLinks`.
    public static func readFile(_ path: String, followingLinks: Bool = false) throws -> Data {
        // `open` follows no link: a path to follow is resolved first (realpath, by bytes).
        let descriptor = try open(followingLinks ? FileSystemPath.resolved(path) ?? path : path, O_RDONLY)
        defer { close(descriptor) }
        return try contents(of: descriptor, size: Int(try FileStatus.of(descriptor: descriptor, path: path).size), mapping: false, path: path)
    }

    /// Writes `data` as the whole file at `path`, made with `mode` where it is missing.
    public static func writeFile(_ path: String, _ data: Data, mode: mode_t = 0o644) throws {
        let descriptor = try open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode: mode)
        defer { close(descriptor) }
        try writeAll(descriptor, data, path: path)
    }

    /// The file's bytes as a memory mapping owned by the returned `Data`: nothing is copied, and the
    /// pages are only read when touched. The mapping stays valid after `descriptor` is closed.
    public static func mapContents(_ descriptor: Int32, size: Int, path: String? = nil) throws -> Data {
        if size == 0 { return Data() }
        guard let address = mmap(nil, size, PROT_READ, MAP_PRIVATE, descriptor, 0), address != MAP_FAILED else {
            throw SystemCallError.last("mmap", path: path)
        }
        MappedRegions.register(address, length: size)
        return Data(bytesNoCopy: address, count: size, deallocator: .custom { pointer, count in
            MappedRegions.unregister(pointer)
            munmap(pointer, count)
        })
    }

    /// `fsync(2)` (or `fdatasync(2)`) with its error: durability that fails must be reported.
    public static func synchronize(_ descriptor: Int32, dataOnly: Bool = false, path: String? = nil) throws {
        try retryingOnInterrupt(dataOnly ? "fdatasync" : "fsync", path: path) { dataOnly ? fdatasync(descriptor) : fsync(descriptor) }
    }

    /// Makes the directory holding `path` durable: after a rename, the new name is on disk only once
    /// its directory is synced.
    public static func synchronizeDirectory(containing path: String) throws {
        let directory = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[..<$0]) } ?? "."
        let descriptor = try open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY)
        defer { close(descriptor) }
        try synchronize(descriptor, path: directory)
    }

    /// Copies the whole of `source` into `destination` (a new, empty file) without passing bytes
    /// through user space where the kernel can: a reflink (FICLONE) first, else the data only, by
    /// `copy_file_range` or read/write, so a sparse file's holes stay holes (a stage seeded from a
    /// 10 GB file holding one byte at its end wrote 10 GB of zeros and filled the disk: xfstests
    /// generic/130 on a PostgreSQL mirror).
    public static func copyContents(from source: Int32, to destination: Int32, path: String? = nil) throws {
        // An empty source (a file just created, seeding its first write's stage) leaves nothing to do.
        let size = lseek(source, 0, SEEK_END)
        if size == 0 { return }
        if docfs_clone_file(destination, source) == 0 { return }
        guard size > 0 else { return }
        var offset: off_t = 0
        while offset < size {
            guard let data = nextData(source, from: offset) else { break }
            // Without SEEK_HOLE (nor SEEK_DATA), the rest as it is.
            let hole = lseek(source, data, seekHole)
            let end = hole < 0 ? size : min(hole, size)
            try copyRange(from: source, to: destination, data, end, path: path)
            offset = end
        }
        guard ftruncate(destination, size) == 0 else { throw SystemCallError.last("ftruncate", path: path) }
    }

    /// Where the first data at or after `offset` is (lseek SEEK_DATA): nil when nothing but a hole
    /// is left, `offset` itself on a file system that cannot tell holes.
    public static func nextData(_ descriptor: Int32, from offset: off_t) -> off_t? {
        let data = lseek(descriptor, offset, seekData)
        if data >= 0 { return data }
        return errno == ENXIO ? nil : offset
    }

    /// lseek's SEEK_DATA and SEEK_HOLE (Linux's values; Glibc shows them only to _GNU_SOURCE).
    private static let seekData: Int32 = 3
    private static let seekHole: Int32 = 4

    /// Copies the bytes `start..<end` of `source` to the same offsets of `destination`.
    private static func copyRange(from source: Int32, to destination: Int32, _ start: off_t, _ end: off_t, path: String?) throws {
        var sourceOffset = start
        var destinationOffset = start
        while sourceOffset < end {
            let copied = docfs_copy_file_range(source, &sourceOffset, destination, &destinationOffset, Int(min(end - sourceOffset, 1 << 30)))
            if copied == 0 { return }
            if copied > 0 { continue }
            if errno == EINTR { continue }
            if errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP { break }
            throw SystemCallError.last("copy_file_range", path: path)
        }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while sourceOffset < end {
            let wanted = Int(min(end - sourceOffset, off_t(buffer.count)))
            let count = try buffer.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) throws in
                try retryingOnInterrupt("pread", path: path) { pread(source, raw.baseAddress, wanted, sourceOffset) }
            }
            if count == 0 { return }
            try buffer.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws in
                try writeAll(destination, UnsafeRawBufferPointer(rebasing: raw[0..<count]), offset: Int64(destinationOffset), path: path)
            }
            sourceOffset += off_t(count)
            destinationOffset += off_t(count)
        }
    }

    /// The names in a directory, without `.` and `..`, in no particular order.
    public static func directoryEntries(_ path: String) throws -> [String] {
        try directoryEntriesWithTypes(path).map(\.name)
    }

    /// The names in a directory with their `d_type` (DT_REG, DT_DIR, DT_LNK, …; DT_UNKNOWN where the
    /// file system does not say), without `.` and `..`.
    public static func directoryEntriesWithTypes(_ path: String) throws -> [(name: String, type: UInt8)] {
        let descriptor = try open(path, O_RDONLY | O_DIRECTORY)
        defer { close(descriptor) }
        return try listing(of: descriptor, path: path).map { ($0.name, $0.type) }
    }

    /// The entries of an open directory with their `d_type` and inode number, without `.` and `..`.
    /// Reads `descriptor` from the start (its offset is moved, as a duplicate's would be) and
    /// leaves it open. getdents64 directly: opendir on a duplicate made five more system calls a
    /// listing (the duplicate, fdopendir's fstat and two fcntl, closing it), and a package's save
    /// lists several folders.
    public static func listing(of descriptor: Int32, path: String) throws -> [(name: String, type: UInt8, inode: UInt64)] {
        _ = try retryingOnInterrupt("lseek", path: path) { lseek(descriptor, 0, SEEK_SET) }
        var entries: [(name: String, type: UInt8, inode: UInt64)] = []
        try withUnsafeTemporaryAllocation(byteCount: listingBufferSize, alignment: 8) { buffer in
            guard let base = buffer.baseAddress else { return }
            while true {
                let count = try retryingOnInterrupt("getdents64", path: path) { docfs_getdents64(descriptor, base, buffer.count) }
                if count == 0 { return }
                var offset = 0
                // linux_dirent64: d_ino at 0, d_off at 8, d_reclen at 16, d_type at 18, d_name at 19.
                while offset + 19 < count {
                    let record = Int(base.loadUnaligned(fromByteOffset: offset + 16, as: UInt16.self))
                    guard record > 19, offset + record <= count else { break }
                    let inode = base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                    let type = base.load(fromByteOffset: offset + 18, as: UInt8.self)
                    let name = FileSystemPath.string(fromCString: (base + offset + 19).bindMemory(to: CChar.self, capacity: record - 19))
                    // An inode of 0 is no entry (glibc's readdir skips them too).
                    if inode != 0 && name != "." && name != ".." { entries.append((name, type, inode)) }
                    offset += record
                }
            }
        }
        return entries
    }

    /// 32 KiB, what glibc's readdir asks for at a time.
    private static let listingBufferSize = 32 * 1024

    /// Removes a file, a symlink or a whole directory tree; a missing item is not an error.
    public static func removeItem(_ path: String) throws {
        guard let status = try? FileStatus.of(path: path) else { return }
        if status.kind == .directory {
            for name in try directoryEntries(path) { try removeItem(path + "/" + name) }
            try ignoringMissing { try Paths.removeDirectory(path) }
        } else {
            try ignoringMissing { try Paths.removeFile(path) }
        }
    }

    private static func ignoringMissing(_ body: () throws -> Void) throws {
        do { try body() } catch let error as SystemCallError where error.errno == ENOENT {}
    }

    /// `renameat2(RENAME_EXCHANGE)`: both names stay, their items swap, in one atomic step.
    /// `movesFolder`: as for `rename`.
    public static func exchange(_ first: String, _ second: String, movesFolder: Bool? = nil) throws {
        try rename(first, second, flags: 2, movesFolder: movesFolder)
    }

    /// `movesFolder`: whether the item moved may be a folder; false where the caller knows it is a
    /// file, nil to look. Only a folder moved makes every thread resolve its folders again (a file
    /// never replaces a folder), so a save by rename leaves them resolved.
    public static func rename(_ source: String, _ destination: String, flags: UInt32 = 0, movesFolder: Bool? = nil) throws {
        var folderMoved = movesFolder ?? true
        var renamed = false
        // Only a rename made changes what paths lead to (one refused, EEXIST say, changes nothing).
        defer { if folderMoved && renamed { ConfinedTree.foldersChanged(at: source, destination) } }
        try FileSystemPath.at(source) { sourceDirectory, sourceName in
            // An exchange moves both items, either of which may be a folder.
            if movesFolder == nil, flags & 2 == 0, let moved = try? FileStatus.of(name: sourceName, in: sourceDirectory, path: source) {
                folderMoved = moved.kind == .directory
            }
            try FileSystemPath.at(destination) { destinationDirectory, destinationName in
                try retryingOnInterrupt("rename", path: destination) {
                    docfs_renameat2(sourceDirectory, sourceName, destinationDirectory, destinationName, flags)
                }
                renamed = true
            }
        }
    }

    /// Moves the finished item at `temporary` over `destination` atomically, whatever is there:
    /// `rename(2)` where it can; where it cannot (a directory over anything, anything over a
    /// directory) the two are swapped with `RENAME_EXCHANGE` and the old item, now at `temporary`,
    /// removed. A crash in between leaves the complete old item at `temporary`, never a torn one.
    public static func replaceItem(at destination: String, with temporary: String) throws {
        if try swapIn(temporary, at: destination) { try removeItem(temporary) }
    }

    /// `replaceItem`'s one step that changes `destination`: true when it swapped, leaving the old
    /// item at `temporary` for the caller to remove.
    public static func swapIn(_ temporary: String, at destination: String) throws -> Bool {
        let existing = try? FileStatus.of(path: destination)
        let incoming = try FileStatus.of(path: temporary)
        if let existing, existing.kind == .directory || incoming.kind == .directory {
            try exchange(temporary, destination)
            return true
        }
        try rename(temporary, destination, movesFolder: incoming.kind == .directory)
        return false
    }

    /// A name beside `path` that no other writer uses: hidden, tagged, and unique per process and call.
    public static func temporarySibling(of path: String, tag: String = "tmp") -> String {
        // By bytes: a name beginning with a combining mark makes one `Character` of the `/` before it.
        let slash = path.utf8.lastIndex(of: UInt8(ascii: "/"))
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.utf8.index(after: $0)...]) } ?? path
        return "\(directory)/.\(name).docfs-\(tag)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// Sets the modification time (and access time to the same) without following symlinks.
    public static func setModificationTime(_ path: String, _ date: Date) throws {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        let time = timespec(tv_sec: Int(seconds), tv_nsec: Int((date.timeIntervalSince1970 - seconds) * 1_000_000_000))
        var times = [time, time]
        try FileSystemPath.at(path) { directory, name in
            try retryingOnInterrupt("utimensat", path: path) { utimensat(directory, name, &times, AT_SYMLINK_NOFOLLOW) }
        }
    }
}

extension timespec {
    public var date: Date { Date(timeIntervalSince1970: TimeInterval(tv_sec) + TimeInterval(tv_nsec) / 1_000_000_000) }
}

extension FileStatus {
    /// The modification time as a `Date`. Other modules use this rather than `timespec.date`: a
    /// module that also imports a C module including <sys/types.h> may see another `timespec`,
    /// which that extension does not reach (seen as a build failure that depended on file batching).
    public var modificationDate: Date { modificationTime.date }
}
