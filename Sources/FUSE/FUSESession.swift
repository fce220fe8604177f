import CFUSE
import Glibc
import SystemSupport

/// A mounted FUSE session serving one `FileSystemOperations`.
///
/// Create it (which mounts), `run` the multi-threaded loop until an unmount or a signal, and let it
/// go (which unmounts and tears the session down). The invalidation calls are safe from any thread
/// but must not be made from inside a request handler for the same inode: the kernel waits for the
/// handler, the handler waits for the kernel.
public final class FUSESession: @unchecked Sendable {
    public enum MountError: Error, CustomStringConvertible {
        case invalidOptions([String])
        case mountFailed(mountPoint: String)

        public var description: String {
            switch self {
            case .invalidOptions(let options): "invalid FUSE options: \(options.joined(separator: " "))"
            case .mountFailed(let mountPoint): "cannot mount on \(mountPoint)"
            }
        }
    }

    /// The libfuse this binding runs on ("3.14.0").
    public static var libraryVersion: String { fuse_pkgversion().map { String(cString: $0) } ?? "unknown" }

    private let session: OpaquePointer
    private let box: Unmanaged<OperationsBox>
    public let mountPoint: String
    private var mounted = true
    /// `auto_unmount` was asked and its socket to fusermount3 was not found (see
    /// `AutoUnmountSocket`): a daemon killed may leave its mount behind, now and then.
    public let autoUnmountMayLeaveTheMount: Bool

    /// Mounts `operations` at `mountPoint`. `options` are `-o` mount options (`ro`, `allow_other`,
    /// `default_permissions`, `fsname=…`, `subtype=…`).
    public init(operations: any FileSystemOperations, mountPoint: String, options: [String]) throws {
        var arguments = ["docfs"]
        if !options.isEmpty { arguments += ["-o", options.joined(separator: ",")] }
        // The bytes each stands for (`FileSystemPath`): a store path that is not UTF-8 is its fsname.
        let cStrings = arguments.map { argument in FileSystemPath.withCString(argument) { strdup($0) } }
        defer { cStrings.forEach { free($0) } }
        var argv = cStrings
        let box = Unmanaged.passRetained(OperationsBox(operations))
        var table = makeOperationTable()
        let created: OpaquePointer? = argv.withUnsafeMutableBufferPointer { buffer in
            var args = docfs_make_args(Int32(buffer.count), buffer.baseAddress)
            defer { fuse_opt_free_args(&args) }
            return fuse_session_new(&args, &table, MemoryLayout<fuse_lowlevel_ops>.size, box.toOpaque())
        }
        guard let created else {
            box.release()
            throw MountError.invalidOptions(options)
        }
        // Handlers before the mount: a stop signal arriving between mounting and serving must end
        // the session cleanly (the loop then returns at once), not kill the process and leave a
        // dead mount behind.
        guard Self.installSignalHandlers(created) else {
            fuse_session_destroy(created)
            box.release()
            throw MountError.mountFailed(mountPoint: mountPoint)
        }
        let autoUnmount = options.contains { $0.split(separator: ",").contains("auto_unmount") }
        let openBeforeMount = autoUnmount ? AutoUnmountSocket.openDescriptors() : []
        // The mount point's own bytes: its encoding's would be a look-alike path, or none.
        guard FileSystemPath.withCString(mountPoint, { fuse_session_mount(created, $0) }) == 0 else {
            fuse_remove_signal_handlers(created)
            fuse_session_destroy(created)
            box.release()
            throw MountError.mountFailed(mountPoint: mountPoint)
        }
        autoUnmountMayLeaveTheMount = autoUnmount && !AutoUnmountSocket.releaseLast(openedSince: openBeforeMount)
        self.session = created
        self.box = box
        self.mountPoint = mountPoint
    }

    /// Serves requests on up to `threads` workers until the file system is unmounted
    /// (`fusermount3 -u`) or the process gets SIGINT, SIGTERM or SIGHUP. Returns 0 after an
    /// unmount, the signal number after a signal.
    public func run(threads: Int) -> Int32 {
        docfs_session_loop_mt(session, UInt32(max(1, threads)))
    }

    private static func installSignalHandlers(_ session: OpaquePointer) -> Bool {
        // A daemon started in the background by a non-interactive shell inherits SIGINT as
        // ignored, and libfuse installs its handlers only over default ones.
        signal(SIGINT, SIG_DFL)
        // A parent may have started us with these blocked (a spawn from a thread that blocks them
        // passes its mask on); the loop's workers inherit this thread's mask.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        for stop in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&stopSignals, stop) }
        pthread_sigmask(SIG_UNBLOCK, &stopSignals, nil)
        return fuse_set_signal_handlers(session) == 0
    }

    /// Drops the kernel's cached data (and attributes) of `inode`; `length` 0 means to the end.
    @discardableResult
    public func invalidateInode(_ inode: Inode, offset: Int64 = 0, length: Int64 = 0) -> Int32 {
        fuse_lowlevel_notify_inval_inode(session, inode, off_t(offset), off_t(length))
    }

    /// Drops the kernel's cached name `name` in `parent`.
    @discardableResult
    public func invalidateEntry(parent: Inode, name: FileName) -> Int32 {
        let bytes = name.bytes
        return FileSystemPath.withCString(name.string) { fuse_lowlevel_notify_inval_entry(session, parent, $0, bytes.count) }
    }

    /// Tells the kernel that `name` in `parent`, which was `child`, is gone.
    @discardableResult
    public func notifyDeleted(parent: Inode, child: Inode, name: FileName) -> Int32 {
        let bytes = name.bytes
        return FileSystemPath.withCString(name.string) { fuse_lowlevel_notify_delete(session, parent, child, $0, bytes.count) }
    }

    /// Stops the loop from another thread (the loop returns after its current requests).
    public func exit() { fuse_session_exit(session) }

    public func unmount() {
        guard mounted else { return }
        mounted = false
        fuse_session_unmount(session)
    }

    deinit {
        unmount()
        fuse_remove_signal_handlers(session)
        fuse_session_destroy(session)
        box.release()
    }
}
