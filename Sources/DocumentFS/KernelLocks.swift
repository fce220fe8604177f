import Foundation

/// The advisory locks the kernel holds (flock, fcntl, OFD locks), from `/proc/locks`. DocFS leaves
/// locking to the kernel, which keeps one set of locks per inode.
enum KernelLocks {
    /// Whether any lock is held on an inode numbered one of `numbers` (on any file system: a lock
    /// on another one only makes the caller more careful than it needs to be). Locks whose owner
    /// is outside this process's PID namespace are not listed.
    static func anyHeld(onInodesNumbered numbers: Set<UInt64>) -> Bool {
        // A line: "1: FLOCK  ADVISORY  WRITE 1234 00:2e:5678 0 EOF"; blocked waiters ("1: -> ...")
        // wait on a lock that is listed too.
        guard let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else { return true }
        return table.split(separator: "\n").contains { line in
            line.split(separator: " ").contains { field in
                let parts = field.split(separator: ":")
                return parts.count == 3 && UInt64(parts[2]).map(numbers.contains) == true
            }
        }
    }
}
