import Glibc
import Logging

/// How a store is served.
public struct DocumentFSOptions: Sendable {
    /// Mount read-only: every document's `isEditable` is false and writes fail with EROFS.
    public var readOnly = false
    /// Refuse files that no registered type claims (raw data) instead of storing them as written.
    public var strict = false
    /// Let users other than the mounting one see the mount (FUSE's `allow_other`).
    public var allowOther = false
    /// Worker threads of the FUSE loop.
    public var threads = 8
    /// Seconds the kernel may cache names and attributes; nil (the default) chooses: a day when
    /// the store can be watched for changes made beside DocFS (each then drops exactly what it
    /// touched, at once), else one second, which is how late such a change may show.
    public var cacheTimeout: Double?
    /// Extra `-o` options passed to FUSE as given.
    public var extraMountOptions: [String] = []
    /// FUSE's `max_read=` option: the largest read the kernel sends (nil: no limit).
    public var maxRead: UInt32?
    /// The mount's source as `mount`, `findmnt` and `df` show it (the store's path, for docfs).
    public var fileSystemName = "docfs"
    /// bindfs/sshfs `uid=` and `gid=`: the owner every file shows (the store keeps its own).
    public var shownOwner: (userID: uid_t?, groupID: gid_t?) = (nil, nil)
    /// bindfs/sshfs `umask=`: permission bits every file shows without.
    public var shownUmask: mode_t?
    public var logger = Logger(label: "docfs")

    public init() {}
}
