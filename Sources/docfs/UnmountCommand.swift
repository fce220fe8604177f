import ArgumentParser
import Foundation
import Glibc
import SystemSupport

struct UnmountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount",
        abstract: "Unmount a DocFS mount; the daemon commits open writes and exits.")

    @Argument(help: "The mount point.")
    var mountPoint: String

    @Flag(name: .customShort("z"), help: "Lazy: detach now even if the mount is busy.")
    var lazy = false

    func run() throws {
        // fusermount3 gets the mount point's own bytes (`Process` would pass its UTF-8 look-alike).
        let cArguments = FileSystemPath.cStringArray(["fusermount3", "-u"] + (lazy ? ["-z"] : []) + [mountPoint])
        defer { cArguments.forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, "/usr/bin/fusermount3", nil, nil, cArguments, environ)
        guard spawned == 0 else {
            FileHandle.standardError.write(Data("docfs: cannot run fusermount3 (Debian package fuse3): \(String(cString: strerror(spawned)))\n".utf8))
            throw ExitStatus.noFUSE
        }
        // Exited (the low 7 bits 0) with status 0.
        guard let status = try? ChildProcesses.waitStatus(of: pid), status & 0x7f == 0, (status >> 8) & 0xff == 0 else { throw ExitStatus.failure }
    }
}
