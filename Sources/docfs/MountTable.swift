import Foundation
import PostgresDocumentStore
import SystemSupport

/// The system's mount table, to tell a busy mount point before trying to mount on it.
enum MountTable {
    static func isMountPoint(_ path: String) -> Bool {
        guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return false }
        return table.split(separator: "\n").contains { line in
            // Field 5 is the mount point, with spaces and backslashes octal-escaped.
            let fields = line.split(separator: " ")
            return fields.count > 4 && FileSystemPath.same(unescape(fields[4]), path)
        }
    }

    /// The store a DocFS mount at `path` serves: the mount's source (its fsname), when the file
    /// system there is `fuse.docfs`.
    static func docfsStore(mountedAt path: String) -> String? {
        docfsMounts().first { FileSystemPath.same($0.mountPoint, path) }?.store
    }

    /// Whether what `path` shows is a DocFS mount: the topmost mount there (the last listed) is
    /// `fuse.docfs`, and its device is the one `path` is on.
    static func isDocFSMountShown(at path: String) -> Bool {
        guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return false }
        let topmost = table.split(separator: "\n").last { line in
            let fields = line.split(separator: " ")
            return fields.count > 4 && FileSystemPath.same(unescape(fields[4]), path)
        }
        guard let fields = topmost?.split(separator: " "), let separator = fields.firstIndex(of: "-"), separator + 1 < fields.count,
              fields[separator + 1] == "fuse.docfs"
        else { return false }
        // Field 3 is the device, MAJOR:MINOR.
        let device = fields[2].split(separator: ":").compactMap { UInt32($0) }
        var status = stat()
        guard device.count == 2, FileSystemPath.withCString(path, { stat($0, &status) }) == 0 else { return false }
        // Linux's dev_t: the major number in bits 8-19 and 32-43, the minor in 0-7 and 20-31.
        let major = UInt32(truncatingIfNeeded: ((status.st_dev >> 8) & 0xfff) | ((status.st_dev >> 32) & ~0xfff))
        let minor = UInt32(truncatingIfNeeded: (status.st_dev & 0xff) | ((status.st_dev >> 12) & ~0xff))
        return major == device[0] && minor == device[1]
    }

    /// The DocFS mount points on this machine serving `store` (its fsname).
    static func docfsMountPoints(serving store: String) -> [String] {
        docfsMounts().filter { $0.store == store }.map(\.mountPoint)
    }

    /// The DocFS mount points on this machine serving the PostgreSQL store `location` names: those
    /// that spelled it the same way first, then those that spelled it otherwise.
    static func docfsMountPoints(serving location: PostgresLocation) -> [String] {
        let mounts = docfsMounts().filter { mount in
            PostgresLocation.isPostgresLocation(mount.store) && (try? PostgresLocation(mount.store))?.identity == location.identity
        }
        return (mounts.filter { $0.store == location.description } + mounts.filter { $0.store != location.description }).map(\.mountPoint)
    }

    /// The DocFS mount that `path` (absolute, resolved) is in: the deepest mount point above it.
    static func docfsMount(containing path: String) -> (mountPoint: String, store: String)? {
        docfsMounts().filter { StorePath.isWithin(path, $0.mountPoint == "/" ? "" : $0.mountPoint) }
            .max { $0.mountPoint.utf8.count < $1.mountPoint.utf8.count }
    }

    /// Every `fuse.docfs` mount: its mount point and its source.
    private static func docfsMounts() -> [(mountPoint: String, store: String)] {
        guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return [] }
        return table.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count > 4, let separator = fields.firstIndex(of: "-"), separator + 2 < fields.count,
                  fields[separator + 1] == "fuse.docfs"
            else { return nil }
            return (unescape(fields[4]), unescape(fields[separator + 2]))
        }
    }

    private static func unescape(_ field: Substring) -> String {
        var result = ""
        var index = field.startIndex
        while index < field.endIndex {
            if field[index] == "\\", let end = field.index(index, offsetBy: 4, limitedBy: field.endIndex),
               let code = UInt8(field[field.index(after: index)..<end], radix: 8)
            {
                result.append(Character(Unicode.Scalar(code)))
                index = end
            } else {
                result.append(field[index])
                index = field.index(after: index)
            }
        }
        return result
    }
}
