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
    /// Seconds the kernel may cache names and attributes. Changes made behind the mount's back
    /// show up after at most this long.
    public var cacheTimeout = 1.0
    /// Extra `-o` options passed to FUSE as given.
    public var extraMountOptions: [String] = []
    public var logger = Logger(label: "docfs")

    public init() {}
}
