import Glibc
@_exported import struct SystemSupport.FileName

/// A file system served through FUSE's low-level (inode) API.
///
/// Names arrive as `FileName`s: the binding checks every name the kernel sends (1 to 255 bytes, no
/// `/`, no NUL, not `.` or `..`) and fails the request with EINVAL or ENAMETOOLONG itself when one
/// is not, so a conformer never sees a name that could climb out of its directory. LOOKUP of `.`
/// and `..` (which an exported file system receives) goes to `lookup(_:in:context:)`.
///
/// libfuse calls these on its worker threads, several at once, so conformers must be thread-safe.
/// Each method returns its reply or throws a `FUSEError`; the binding turns either into the reply.
/// Every method has a default that fails with ENOSYS (or, for `forget`, does nothing), so a file
/// system implements only what it supports. Where the kernel can do without an operation (locks,
/// `access` under `default_permissions`), ENOSYS makes it do the work itself.
public protocol FileSystemOperations: AnyObject, Sendable {
    /// Capability negotiation, before the first request.
    func initialize(connection: inout ConnectionSettings)
    /// After the last request, at unmount.
    func destroy()

    func lookup(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) -> Entry
    /// LOOKUP of `.` (the directory itself) or `..` (its parent), which the kernel sends to resolve
    /// an NFS file handle of an exported mount. Default: ENOENT.
    func lookup(_ entry: RelativeEntry, in directory: Inode, context: RequestContext) throws(FUSEError) -> Entry
    /// The kernel dropped `count` references (one per entry replied) to `inode`.
    func forget(inode: Inode, count: UInt64)
    func getAttributes(inode: Inode, handle: UInt64?, context: RequestContext) throws(FUSEError) -> AttributesReply
    func setAttributes(inode: Inode, changes: AttributeChanges, handle: UInt64?, context: RequestContext) throws(FUSEError) -> AttributesReply
    func readLink(inode: Inode) throws(FUSEError) -> String
    func makeNode(parent: Inode, name: FileName, mode: mode_t, device: dev_t, context: RequestContext) throws(FUSEError) -> Entry
    func makeDirectory(parent: Inode, name: FileName, mode: mode_t, context: RequestContext) throws(FUSEError) -> Entry
    func unlink(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError)
    func removeDirectory(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError)
    func symlink(target: String, parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) -> Entry
    /// `flags` are renameat2's: RENAME_NOREPLACE (1), RENAME_EXCHANGE (2).
    func rename(parent: Inode, name: FileName, newParent: Inode, newName: FileName, flags: UInt32, context: RequestContext) throws(FUSEError)
    func link(inode: Inode, newParent: Inode, newName: FileName, context: RequestContext) throws(FUSEError) -> Entry

    func open(inode: Inode, flags: Int32, context: RequestContext) throws(FUSEError) -> OpenReply
    func create(parent: Inode, name: FileName, mode: mode_t, flags: Int32, context: RequestContext) throws(FUSEError) -> (Entry, OpenReply)
    func read(inode: Inode, handle: UInt64, offset: Int64, size: Int) throws(FUSEError) -> ReadReply
    /// Returns the number of bytes written.
    func write(inode: Inode, handle: UInt64, bytes: UnsafeRawBufferPointer, offset: Int64, context: RequestContext) throws(FUSEError) -> Int
    /// Every `close(2)` of a descriptor of the open file (there may be several, after `dup`).
    func flush(inode: Inode, handle: UInt64, context: RequestContext) throws(FUSEError)
    /// The last close of the open file; its errors reach no one.
    func release(inode: Inode, handle: UInt64, flags: Int32)
    func fsync(inode: Inode, handle: UInt64, dataOnly: Bool) throws(FUSEError)
    func allocate(inode: Inode, handle: UInt64, mode: Int32, offset: Int64, length: Int64, context: RequestContext) throws(FUSEError)

    func openDirectory(inode: Inode, flags: Int32, context: RequestContext) throws(FUSEError) -> OpenReply
    /// Lists entries after `offset`, handing each to `add` until it returns false (the reply is full).
    /// With `plus`, each entry must carry `entry`, and each one `add` accepted counts as a lookup.
    func readDirectory(inode: Inode, handle: UInt64, offset: Int64, plus: Bool, add: (DirectoryEntry) -> Bool) throws(FUSEError)
    func releaseDirectory(inode: Inode, handle: UInt64)
    func fsyncDirectory(inode: Inode, handle: UInt64, dataOnly: Bool) throws(FUSEError)

    func statistics(inode: Inode) throws(FUSEError) -> FileSystemStatistics
    func access(inode: Inode, mask: Int32, context: RequestContext) throws(FUSEError)

    func setExtendedAttribute(inode: Inode, name: String, value: UnsafeRawBufferPointer, flags: Int32, context: RequestContext) throws(FUSEError)
    func extendedAttribute(inode: Inode, name: String, context: RequestContext) throws(FUSEError) -> [UInt8]
    /// The names, each followed by a NUL byte, as listxattr(2) returns them.
    func extendedAttributeNames(inode: Inode, context: RequestContext) throws(FUSEError) -> [UInt8]
    func removeExtendedAttribute(inode: Inode, name: String, context: RequestContext) throws(FUSEError)
}

extension FileSystemOperations {
    public func initialize(connection: inout ConnectionSettings) {}
    public func destroy() {}
    public func lookup(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) -> Entry { throw .notSupported }
    public func lookup(_ entry: RelativeEntry, in directory: Inode, context: RequestContext) throws(FUSEError) -> Entry { throw .noEntry }
    public func forget(inode: Inode, count: UInt64) {}
    public func getAttributes(inode: Inode, handle: UInt64?, context: RequestContext) throws(FUSEError) -> AttributesReply { throw .notSupported }
    public func setAttributes(inode: Inode, changes: AttributeChanges, handle: UInt64?, context: RequestContext) throws(FUSEError) -> AttributesReply { throw .notSupported }
    public func readLink(inode: Inode) throws(FUSEError) -> String { throw .notSupported }
    public func makeNode(parent: Inode, name: FileName, mode: mode_t, device: dev_t, context: RequestContext) throws(FUSEError) -> Entry { throw .notSupported }
    public func makeDirectory(parent: Inode, name: FileName, mode: mode_t, context: RequestContext) throws(FUSEError) -> Entry { throw .notSupported }
    public func unlink(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) { throw .notSupported }
    public func removeDirectory(parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) { throw .notSupported }
    public func symlink(target: String, parent: Inode, name: FileName, context: RequestContext) throws(FUSEError) -> Entry { throw .notSupported }
    public func rename(parent: Inode, name: FileName, newParent: Inode, newName: FileName, flags: UInt32, context: RequestContext) throws(FUSEError) { throw .notSupported }
    public func link(inode: Inode, newParent: Inode, newName: FileName, context: RequestContext) throws(FUSEError) -> Entry { throw .notSupported }
    public func open(inode: Inode, flags: Int32, context: RequestContext) throws(FUSEError) -> OpenReply { OpenReply(handle: 0) }
    public func create(parent: Inode, name: FileName, mode: mode_t, flags: Int32, context: RequestContext) throws(FUSEError) -> (Entry, OpenReply) { throw .notSupported }
    public func read(inode: Inode, handle: UInt64, offset: Int64, size: Int) throws(FUSEError) -> ReadReply { throw .notSupported }
    public func write(inode: Inode, handle: UInt64, bytes: UnsafeRawBufferPointer, offset: Int64, context: RequestContext) throws(FUSEError) -> Int { throw .notSupported }
    public func flush(inode: Inode, handle: UInt64, context: RequestContext) throws(FUSEError) {}
    public func release(inode: Inode, handle: UInt64, flags: Int32) {}
    public func fsync(inode: Inode, handle: UInt64, dataOnly: Bool) throws(FUSEError) {}
    public func allocate(inode: Inode, handle: UInt64, mode: Int32, offset: Int64, length: Int64, context: RequestContext) throws(FUSEError) {
        throw .notSupported
    }
    public func openDirectory(inode: Inode, flags: Int32, context: RequestContext) throws(FUSEError) -> OpenReply { OpenReply(handle: 0) }
    public func readDirectory(inode: Inode, handle: UInt64, offset: Int64, plus: Bool, add: (DirectoryEntry) -> Bool) throws(FUSEError) { throw .notSupported }
    public func releaseDirectory(inode: Inode, handle: UInt64) {}
    public func fsyncDirectory(inode: Inode, handle: UInt64, dataOnly: Bool) throws(FUSEError) {}
    public func statistics(inode: Inode) throws(FUSEError) -> FileSystemStatistics { throw .notSupported }
    public func access(inode: Inode, mask: Int32, context: RequestContext) throws(FUSEError) { throw .notSupported }
    public func setExtendedAttribute(inode: Inode, name: String, value: UnsafeRawBufferPointer, flags: Int32, context: RequestContext) throws(FUSEError) { throw .notSupported }
    public func extendedAttribute(inode: Inode, name: String, context: RequestContext) throws(FUSEError) -> [UInt8] { throw .notSupported }
    public func extendedAttributeNames(inode: Inode, context: RequestContext) throws(FUSEError) -> [UInt8] { throw .notSupported }
    public func removeExtendedAttribute(inode: Inode, name: String, context: RequestContext) throws(FUSEError) { throw .notSupported }
}
