import Foundation
import PostgresDocumentStore
import SystemSupport

/// The system's mount table, to tell a busy mount point before trying to mount on it.
enum MountTable {
    static func isMountPoint(_ path: String) -> Bool {
        entries().contains { FileSystemPath.same($0.mountPoint, path) }
    }

    /// The store a DocFS mount at `path` serves: the mount's source (its fsname), when the file
    /// system there is `fuse.docfs`.
    static func docfsStore(mountedAt path: String) -> String? {
        docfsMounts().first { FileSystemPath.same($0.mountPoint, path) }?.store
    }

    /// Whether what `path` shows is a DocFS mount: the topmost mount there (the last listed) is
    /// `fuse.docfs`, and its device is the one `path` is on.
    static func isDocFSMountShown(at path: String) -> Bool {
        guard let topmost = entries().last(where: { FileSystemPath.same($0.mountPoint, path) }), topmost.type == "fuse.docfs" else { return false }
        // MAJOR:MINOR.
        let device = topmost.device.split(separator: ":").compactMap { UInt32($0) }
        var status = stat()
        guard device.count == 2, FileSystemPath.withCString(path, { stat($0, &status) }) == 0 else { return false }
        // Linux's dev_t: the major number in bits 8-19 and 32-43, the minor in 0-7 and 20-31.
        let major = UInt32(truncatingIfNeeded: ((status.st_dev >> 8) & 0xfff) | ((status.st_dev >> 32) & ~0xfff))
        let minor = UInt32(truncatingIfNeeded: (status.st_dev & 0xff) | ((status.st_dev >> 12) & ~0xff))
        return major == device[0] && minor == device[1]
    }

    /// The DocFS mount points on this machine serving `store` (its fsname).
    static func docfsMountPoints(serving store: String) -> [String] {
        docfsMounts().filter { FileSystemPath.same($0.store, store) }.map(\.mountPoint)
    }

    /// The DocFS mount points on this machine serving the PostgreSQL store `location` names: those
    /// that spelled it the same way first, then those that spelled it otherwise.
    static func docfsMountPoints(serving location: PostgresLocation) -> [String] {
        let mounts = docfsMounts().filter { mount in
            // By bytes: a store named `café` in NFC is not the one named in NFD (the database's
            // `name = $1` tells them apart), though a `String` holds the two equal.
            guard PostgresLocation.isPostgresLocation(mount.store), let identity = (try? PostgresLocation(mount.store))?.identity else { return false }
            return FileSystemPath.same(identity, location.identity)
        }
        let sameSpelling = mounts.filter { FileSystemPath.same($0.store, location.description) }
        return (sameSpelling + mounts.filter { !FileSystemPath.same($0.store, location.description) }).map(\.mountPoint)
    }

    /// The DocFS mount that `path` (absolute, resolved) is in: the deepest mount point above it.
    static func docfsMount(containing path: String) -> (mountPoint: String, store: String)? {
        docfsMounts().filter { StorePath.isWithin(path, $0.mountPoint == "/" ? "" : $0.mountPoint) }
            .max { $0.mountPoint.utf8.count < $1.mountPoint.utf8.count }
    }

    /// Every `fuse.docfs` mount: its mount point and its source.
    private static func docfsMounts() -> [(mountPoint: String, store: String)] {
        entries().filter { $0.type == "fuse.docfs" }.map { ($0.mountPoint, $0.source) }
    }

    /// One line of `/proc/self/mountinfo`: the device (MAJOR:MINOR), the mount point, the file
    /// system type and the source.
    private struct Entry {
        var device: String
        var mountPoint: String
        var type: String
        var source: String
    }

    /// The mount table, read as bytes: a mount point anywhere on the machine whose name is not
    /// UTF-8 must not hide the others (a read as UTF-8 text fails whole), and names are compared
    /// as the bytes they are.
    private static func entries() -> [Entry] {
        guard let descriptor = try? FileIO.open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC) else { return [] }
        defer { FileIO.close(descriptor) }
        var table: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            table += chunk[0..<count]
        }
        return table.split(separator: UInt8(ascii: "\n")).compactMap { line in
            // Fields 3 and 5: the device and the mount point; after the "-": the type and the source.
            let fields = line.split(separator: UInt8(ascii: " "))
            guard fields.count > 4, let separator = fields.firstIndex(where: { $0.elementsEqual([UInt8(ascii: "-")]) }), separator + 2 < fields.count
            else { return nil }
            return Entry(
                device: String(decoding: fields[2], as: UTF8.self), mountPoint: unescape(fields[4]),
                type: String(decoding: fields[separator + 1], as: UTF8.self), source: unescape(fields[separator + 2]))
        }
    }

    /// A field with its spaces, tabs, newlines and backslashes octal-escaped (`\040`), as bytes.
    private static func unescape(_ field: ArraySlice<UInt8>) -> String {
        var bytes: [UInt8] = []
        var index = field.startIndex
        while index < field.endIndex {
            if field[index] == UInt8(ascii: "\\"), index + 4 <= field.endIndex,
               let code = UInt8(String(decoding: field[index + 1..<index + 4], as: UTF8.self), radix: 8)
            {
                bytes.append(code)
                index += 4
            } else {
                bytes.append(field[index])
                index += 1
            }
        }
        return FileSystemPath.string(fromBytes: bytes)
    }
}
