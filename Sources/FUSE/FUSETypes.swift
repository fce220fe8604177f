import CFUSE
import Glibc

/// The kernel's inode number for a file in the mount; 1 is the root.
public typealias Inode = UInt64

public extension Inode {
    static let root: Inode = 1
}

/// The two names every directory has, which LOOKUP may ask for.
public enum RelativeEntry: Sendable {
    /// `.`: the directory itself.
    case current
    /// `..`: its parent.
    case parent
}

/// Who sent a request.
public struct RequestContext: Sendable {
    public let userID: uid_t
    public let groupID: gid_t
    public let processID: pid_t
    public let umask: mode_t

    public init(userID: uid_t, groupID: gid_t, processID: pid_t, umask: mode_t) {
        self.userID = userID
        self.groupID = groupID
        self.processID = processID
        self.umask = umask
    }
}

/// A name the kernel may cache, with its attributes: the reply to lookup, mkdir, create, and friends.
/// Every entry replied increments the inode's lookup count by one, until `forget`.
public struct Entry: Sendable {
    public var inode: Inode
    public var generation: UInt64 = 0
    public var attributes: stat
    /// Seconds the kernel may trust the name and the attributes without asking again.
    public var entryTimeout: Double
    public var attributeTimeout: Double

    public init(inode: Inode, attributes: stat, entryTimeout: Double, attributeTimeout: Double) {
        self.inode = inode
        self.attributes = attributes
        self.entryTimeout = entryTimeout
        self.attributeTimeout = attributeTimeout
    }

    /// "No such name", which the kernel may remember for `timeout` seconds instead of asking again
    /// (inode 0 is FUSE's negative entry; it takes no lookup reference).
    public static func negative(timeout: Double) -> Entry {
        Entry(inode: 0, attributes: stat(), entryTimeout: timeout, attributeTimeout: 0)
    }
}

/// Attributes with how long the kernel may cache them.
public struct AttributesReply: Sendable {
    public var attributes: stat
    public var timeout: Double
    public init(attributes: stat, timeout: Double) {
        self.attributes = attributes
        self.timeout = timeout
    }
}

/// The reply to open, opendir and create: the handle and the kernel's caching instructions.
public struct OpenReply: Sendable {
    public var handle: UInt64
    /// Keep the kernel's page cache of this file from the last open (its content is unchanged).
    public var keepCache: Bool
    public var directIO: Bool
    public var cacheDirectory: Bool
    public init(handle: UInt64, keepCache: Bool = false, directIO: Bool = false, cacheDirectory: Bool = false) {
        self.handle = handle
        self.keepCache = keepCache
        self.directIO = directIO
        self.cacheDirectory = cacheDirectory
    }
}

/// The reply to read: bytes, or a region of a file that libfuse splices to the kernel without
/// copying it through the process. `owner` keeps the descriptor open until the reply is sent.
public enum ReadReply {
    case bytes([UInt8])
    case fileRegion(descriptor: Int32, offset: Int64, size: Int, owner: AnyObject)
}

/// One entry of a directory listing; `nextOffset` is the cookie the kernel passes back to continue after it.
public struct DirectoryEntry {
    public var name: String
    public var nextOffset: Int64
    /// The number `readdir` shows (`d_ino`), which `stat` shows as `st_ino`; not the kernel's
    /// inode (readdirplus carries that in `entry`).
    public var number: UInt64
    /// For plain readdir only the type bits matter; readdirplus carries a full entry.
    public var mode: mode_t
    public var entry: Entry?

    public init(name: String, nextOffset: Int64, number: UInt64, mode: mode_t, entry: Entry? = nil) {
        self.name = name
        self.nextOffset = nextOffset
        self.number = number
        self.mode = mode
        self.entry = entry
    }
}

/// What a setattr asks to change; nil fields stay as they are.
public struct AttributeChanges: Sendable {
    public var mode: mode_t?
    public var userID: uid_t?
    public var groupID: gid_t?
    public var size: Int64?
    /// `nil`: unchanged; `.now`: the current time; `.time`: that time.
    public var accessTime: TimeChange?
    public var modificationTime: TimeChange?

    public enum TimeChange: Sendable {
        case now
        case time(timespec)
    }

    public init() {}
}

/// File system statistics (`statvfs`).
public typealias FileSystemStatistics = statvfs

/// The capabilities the kernel offers and the ones the file system wants, negotiated in `init`.
public struct ConnectionSettings {
    public let capable: UInt32
    public var want: UInt32
    public var maxWrite: UInt32
    /// The largest read the kernel sends; 0 for no limit. Must equal a `max_read=` mount option
    /// when one is given (libfuse refuses the session otherwise).
    public var maxRead: UInt32
    public var maxReadahead: UInt32
    public var maxBackground: UInt32
    public var congestionThreshold: UInt32
    public var timeGranularity: UInt32

    /// Asks for `capability` if the kernel offers it; returns whether it was granted.
    @discardableResult
    public mutating func request(_ capability: UInt32) -> Bool {
        guard capable & capability != 0 else { return false }
        want |= capability
        return true
    }

    public mutating func decline(_ capability: UInt32) { want &= ~capability }
}

/// FUSE's capability bits, for `ConnectionSettings.request`.
public enum Capability {
    public static let asyncRead = UInt32(FUSE_CAP_ASYNC_READ)
    public static let posixLocks = UInt32(FUSE_CAP_POSIX_LOCKS)
    public static let atomicOpenTruncate = UInt32(FUSE_CAP_ATOMIC_O_TRUNC)
    public static let exportSupport = UInt32(FUSE_CAP_EXPORT_SUPPORT)
    public static let dontMask = UInt32(FUSE_CAP_DONT_MASK)
    public static let spliceWrite = UInt32(FUSE_CAP_SPLICE_WRITE)
    public static let spliceMove = UInt32(FUSE_CAP_SPLICE_MOVE)
    public static let spliceRead = UInt32(FUSE_CAP_SPLICE_READ)
    public static let flockLocks = UInt32(FUSE_CAP_FLOCK_LOCKS)
    public static let ioctlDirectory = UInt32(FUSE_CAP_IOCTL_DIR)
    public static let autoInvalidateData = UInt32(FUSE_CAP_AUTO_INVAL_DATA)
    public static let readdirPlus = UInt32(FUSE_CAP_READDIRPLUS)
    public static let readdirPlusAuto = UInt32(FUSE_CAP_READDIRPLUS_AUTO)
    public static let asyncDirectIO = UInt32(FUSE_CAP_ASYNC_DIO)
    public static let writebackCache = UInt32(FUSE_CAP_WRITEBACK_CACHE)
    public static let noOpenSupport = UInt32(FUSE_CAP_NO_OPEN_SUPPORT)
    public static let parallelDirectoryOperations = UInt32(FUSE_CAP_PARALLEL_DIROPS)
    public static let posixACL = UInt32(FUSE_CAP_POSIX_ACL)
    public static let handleKillPrivileges = UInt32(FUSE_CAP_HANDLE_KILLPRIV)
    public static let cacheSymlinks = UInt32(FUSE_CAP_CACHE_SYMLINKS)
    public static let noOpendirSupport = UInt32(FUSE_CAP_NO_OPENDIR_SUPPORT)
    public static let explicitInvalidateData = UInt32(FUSE_CAP_EXPLICIT_INVAL_DATA)
}
