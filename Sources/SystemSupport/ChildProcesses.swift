import Glibc

/// Waiting for the processes DocFS starts (validator commands, parser helpers) against a deadline.
public enum ChildProcesses {
    /// The wait status of child `pid` once it has exited; nil while it runs (when not blocking).
    /// A wait that fails (no such child: reaped already, or never ours) throws: a caller deciding on
    /// the exit status must not take a failure for a success.
    public static func waitStatus(of pid: pid_t, blocking: Bool = true) throws(SystemCallError) -> Int32? {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, blocking ? 0 : WNOHANG)
            if result == pid { return status }
            if result == 0 { return nil }
            if errno != EINTR { throw SystemCallError.last("waitpid") }
        }
    }

    /// Seconds on the monotonic clock, for deadlines that a change of the wall clock cannot move.
    public static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
