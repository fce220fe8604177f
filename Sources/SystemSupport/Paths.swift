import CSystemShims
import Glibc

/// System calls on paths of any length and any bytes: each goes through `FileSystemPath.at`, so the
/// path is the bytes its string stands for, and one longer than PATH_MAX is resolved a piece at a
/// time. None follows a symbolic link in the last component.
public enum Paths {
    public static func makeDirectory(_ path: String, mode: mode_t) throws {
        try FileSystemPath.at(path) { directory, name in
            try retryingOnInterrupt("mkdir", path: path) { mkdirat(directory, name, mode) }
        }
    }

    /// `mkdir -p`: every missing folder on the way to `path`, each named by its own bytes.
    public static func makeDirectories(_ path: String, mode: mode_t) throws {
        let bytes = FileSystemPath.bytes(of: path)
        for end in bytes.indices where bytes[end] == UInt8(ascii: "/") || end == bytes.count - 1 {
            // Each folder on the way: the bytes before a slash, and the whole path.
            let prefix = bytes[..<(bytes[end] == UInt8(ascii: "/") ? end : end + 1)]
            guard let last = prefix.last, last != UInt8(ascii: "/") else { continue }  // "/", "a//b"
            do {
                try makeDirectory(FileSystemPath.string(fromBytes: prefix), mode: mode)
            } catch let error as SystemCallError where error.errno == EEXIST {}
        }
    }

    /// `mknod(2)`: a FIFO, a socket, or a character or block device.
    public static func makeNode(_ path: String, mode: mode_t, device: dev_t) throws {
        try FileSystemPath.at(path) { directory, name in
            try retryingOnInterrupt("mknod", path: path) { mknodat(directory, name, mode, device) }
        }
    }

    public static func removeFile(_ path: String) throws {
        try FileSystemPath.at(path) { directory, name in
            try retryingOnInterrupt("unlink", path: path) { unlinkat(directory, name, 0) }
        }
    }

    public static func removeDirectory(_ path: String) throws {
        defer { ConfinedTree.foldersChanged(at: path) }
        try FileSystemPath.at(path) { directory, name in
            try retryingOnInterrupt("rmdir", path: path) { unlinkat(directory, name, AT_REMOVEDIR) }
        }
    }

    /// `access(2)` for reading, on the item itself (a symbolic link is not followed).
    public static func isReadable(_ path: String) -> Bool {
        (try? FileSystemPath.at(path) { directory, name in faccessat(directory, name, R_OK, AT_SYMLINK_NOFOLLOW) == 0 }) ?? false
    }

    /// Removes a file if it is there; for cleanup that has nothing to report.
    public static func remove(_ path: String) {
        try? removeFile(path)
    }

    public static func makeSymbolicLink(_ path: String, target: String) throws {
        try FileSystemPath.withCString(target) { targetBytes in
            try FileSystemPath.at(path) { directory, name in
                try retryingOnInterrupt("symlink", path: path) { symlinkat(targetBytes, directory, name) }
            }
        }
    }

    /// The link's target, as bytes in a string (see `FileSystemPath`).
    public static func symbolicLinkTarget(_ path: String) throws -> String {
        try FileSystemPath.at(path) { directory, name in
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let length = try retryingOnInterrupt("readlink", path: path) { readlinkat(directory, name, &buffer, buffer.count - 1) }
            return FileSystemPath.string(fromBytes: buffer[0..<length].map { UInt8(bitPattern: $0) })
        }
    }

    public static func makeHardLink(_ path: String, to existing: String) throws {
        try FileSystemPath.at(existing) { existingDirectory, existingName in
            try FileSystemPath.at(path) { directory, name in
                try retryingOnInterrupt("link", path: path) { linkat(existingDirectory, existingName, directory, name, 0) }
            }
        }
    }

    public static func setPermissions(_ path: String, _ mode: mode_t) throws {
        try FileSystemPath.at(path) { directory, name in
            // Never through a symbolic link: glibc changes the item itself (EOPNOTSUPP for a link,
            // whose mode Linux cannot change).
            try retryingOnInterrupt("chmod", path: path) { fchmodat(directory, name, mode, AT_SYMLINK_NOFOLLOW) }
        }
    }

    public static func setOwner(_ path: String, userID: uid_t, groupID: gid_t) throws {
        try FileSystemPath.at(path) { directory, name in
            try retryingOnInterrupt("chown", path: path) { fchownat(directory, name, userID, groupID, AT_SYMLINK_NOFOLLOW) }
        }
    }

    /// `utimensat(2)` with two times (access, modification); UTIME_NOW and UTIME_OMIT work.
    public static func setTimes(_ path: String, _ times: inout [timespec]) throws {
        _ = try times.withUnsafeBufferPointer { pointer in
            try FileSystemPath.at(path) { directory, name in
                try retryingOnInterrupt("utimensat", path: path) { utimensat(directory, name, pointer.baseAddress, AT_SYMLINK_NOFOLLOW) }
            }
        }
    }

    // MARK: Extended attributes

    public static func extendedAttribute(_ path: String, name: String) throws -> [UInt8] {
        try AttributeTarget.at(path) { target in
            try FileSystemPath.withCString(name) { attribute in
                try ExtendedAttributeRead.bytes("getxattr", path: path) { target.read(attribute, into: $0, size: $1) }
            }
        }
    }

    public static func setExtendedAttribute(_ path: String, name: String, value: UnsafeRawBufferPointer, flags: Int32) throws {
        try AttributeTarget.at(path) { target in
            try FileSystemPath.withCString(name) { attribute in
                try retryingOnInterrupt("setxattr", path: path) { target.write(attribute, from: value.baseAddress, size: value.count, flags: flags) }
            }
        }
    }

    public static func extendedAttributeNames(_ path: String) throws -> [String] {
        try AttributeTarget.at(path) { target in
            ExtendedAttributeRead.names(try ExtendedAttributeRead.bytes("listxattr", path: path) { target.list(into: $0, size: $1) })
        }
    }

    public static func removeExtendedAttribute(_ path: String, name: String) throws {
        try AttributeTarget.at(path) { target in
            try FileSystemPath.withCString(name) { attribute in
                try retryingOnInterrupt("removexattr", path: path) { target.remove(attribute) }
            }
        }
    }
}
