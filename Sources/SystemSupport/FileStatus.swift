import Glibc

/// The parts of `struct stat` DocFS uses, with the kind decoded.
public struct FileStatus: Equatable, Sendable {
    public enum Kind: Sendable { case regular, directory, symbolicLink, other }

    public var device: UInt64
    /// The number the file system gave the item; it changes when a save replaces the file.
    public var inode: UInt64
    /// The number the item is known by in the mount: a store that keeps identities (see
    /// `DirectoryStore`'s) carries it over when a save replaces the file; else the inode number.
    public var identity: UInt64
    /// The device a character or block special file stands for.
    public var specialDevice: UInt64
    public var mode: UInt32
    public var linkCount: UInt64
    public var userID: UInt32
    public var groupID: UInt32
    public var size: Int64
    public var blocks: Int64
    public var accessTime: timespec
    public var modificationTime: timespec
    public var changeTime: timespec

    public init(_ raw: stat) {
        device = UInt64(raw.st_dev)
        inode = UInt64(raw.st_ino)
        identity = UInt64(raw.st_ino)
        specialDevice = UInt64(raw.st_rdev)
        mode = raw.st_mode
        linkCount = UInt64(raw.st_nlink)
        userID = raw.st_uid
        groupID = raw.st_gid
        size = Int64(raw.st_size)
        blocks = Int64(raw.st_blocks)
        accessTime = raw.st_atim
        modificationTime = raw.st_mtim
        changeTime = raw.st_ctim
    }

    public var kind: Kind {
        switch mode & S_IFMT {
        case S_IFREG: .regular
        case S_IFDIR: .directory
        case S_IFLNK: .symbolicLink
        default: .other
        }
    }

    public var permissions: UInt32 { mode & 0o7777 }

    /// Identifies one stored version of a file: any write or replacement changes it.
    public var version: FileVersion {
        FileVersion(device: device, inode: inode, size: size, modificationTime: modificationTime, changeTime: changeTime)
    }

    /// `lstat(2)`: the link itself, not its target.
    public static func of(path: String) throws -> FileStatus {
        var raw = stat()
        try FileSystemPath.at(path) { directory, name in
            try retryingOnInterrupt("lstat", path: path) { fstatat(directory, name, &raw, AT_SYMLINK_NOFOLLOW) }
        }
        return FileStatus(raw)
    }

    public static func of(descriptor: Int32, path: String? = nil) throws -> FileStatus {
        var raw = stat()
        try retryingOnInterrupt("fstat", path: path) { fstat(descriptor, &raw) }
        return FileStatus(raw)
    }

    /// `fstatat` relative to a directory descriptor, not following a final symlink.
    /// `fstatat` of a name already a C string (as `FileSystemPath.at` gives); `path` names it in errors.
    public static func of(name: UnsafePointer<CChar>, in directory: Int32, path: String) throws -> FileStatus {
        var raw = stat()
        try retryingOnInterrupt("lstat", path: path) { fstatat(directory, name, &raw, AT_SYMLINK_NOFOLLOW) }
        return FileStatus(raw)
    }

    public static func of(name: String, in directory: Int32) throws -> FileStatus {
        try FileSystemPath.withCString(name) { try of(name: $0, in: directory, path: name) }
    }

    public static func == (lhs: FileStatus, rhs: FileStatus) -> Bool {
        lhs.version == rhs.version && lhs.mode == rhs.mode && lhs.linkCount == rhs.linkCount
            && lhs.userID == rhs.userID && lhs.groupID == rhs.groupID
    }
}

/// What distinguishes one stored version of a file from the next.
public struct FileVersion: Hashable, Sendable {
    public var device: UInt64
    public var inode: UInt64
    public var size: Int64
    public var modificationSeconds: Int
    public var modificationNanoseconds: Int
    public var changeSeconds: Int
    public var changeNanoseconds: Int

    public init(device: UInt64, inode: UInt64, size: Int64, modificationTime: timespec, changeTime: timespec) {
        self.device = device
        self.inode = inode
        self.size = size
        modificationSeconds = modificationTime.tv_sec
        modificationNanoseconds = modificationTime.tv_nsec
        changeSeconds = changeTime.tv_sec
        changeNanoseconds = changeTime.tv_nsec
    }
}
