import ArgumentParser

/// docfs's exit statuses, as documented in docfs(1).
enum ExitStatus {
    /// The mount (or unmount) failed for a reason not listed below.
    static let failure = ExitCode(1)
    /// The store is missing, not a directory, or cannot be opened.
    static let badStore = ExitCode(3)
    /// The mount point is missing, not a directory, or already a mount point.
    static let badMountPoint = ExitCode(4)
    /// The machine has no FUSE (/dev/fuse or fusermount3 missing).
    static let noFUSE = ExitCode(5)
    /// The type configuration file cannot be read or used (a syntax error, an unknown type, a
    /// validator that does not exist, a file others may write).
    static let badConfiguration = ExitCode(6)
}

/// An error to print as `docfs: message` before exiting with `status`.
struct CommandFailure: Error, CustomStringConvertible {
    let message: String
    let status: ExitCode
    var description: String { message }
}
