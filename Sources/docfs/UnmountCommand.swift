import ArgumentParser
import Foundation

struct UnmountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unmount",
        abstract: "Unmount a DocFS mount; the daemon commits open writes and exits.")

    @Argument(help: "The mount point.")
    var mountPoint: String

    @Flag(name: .customShort("z"), help: "Lazy: detach now even if the mount is busy.")
    var lazy = false

    func run() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/fusermount3")
        process.arguments = ["-u"] + (lazy ? ["-z"] : []) + [mountPoint]
        do {
            try process.run()
        } catch {
            FileHandle.standardError.write(Data("docfs: cannot run fusermount3 (Debian package fuse3): \(error)\n".utf8))
            throw ExitStatus.noFUSE
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ExitStatus.failure }
    }
}
