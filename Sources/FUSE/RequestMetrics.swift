import CoreMetrics
import SystemSupport

/// How long the file system takes to answer each kind of request, from the callback's start to its
/// reply: `docfs_fuse_request_seconds{operation="lookup"}`, a histogram. Timed only where metrics
/// are on (see `MetricsSwitch`).
public enum RequestMetrics {
    /// The operations timed, by the name the histogram's label gives them.
    enum Operation: Int, CaseIterable {
        case lookup, forget, forgetMulti, getattr, setattr, readlink, mknod, mkdir, unlink, rmdir, symlink, rename, link, open, create, read, write
        case flush, release, fsync, fallocate, opendir, readdir, readdirplus, releasedir, fsyncdir, statfs, access, setxattr, getxattr, listxattr, removexattr

        var label: String {
            switch self {
            case .forgetMulti: "forget_multi"
            default: String(describing: self)
            }
        }
    }

    /// The histogram's name, for the backend's bucket table.
    public static let name = "docfs_fuse_request_seconds"

    /// One timer an operation, made at first use: after the backend is bootstrapped (a metric made
    /// before stays the no-op one).
    private static let timers: [Timer] = Operation.allCases.map { Timer(label: name, dimensions: [("operation", $0.label)]) }

    /// Runs a callback's body, timing it where metrics are on.
    @inline(__always)
    static func time(_ operation: Operation, _ body: () -> Void) {
        ConfinedTree.keepingFoldersResolved {
            guard let start = MetricsSwitch.start() else { return body() }
            body()
            timers[operation.rawValue].recordNanoseconds(MetricsSwitch.nanoseconds(since: start))
        }
    }
}
