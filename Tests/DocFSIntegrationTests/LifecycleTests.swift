import Foundation
import Glibc
import Testing

/// Mounting, unmounting and the command's errors.
@Suite(.timeLimit(.minutes(10)))
struct LifecycleTests {
    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalUnmountsCleanly(signal: Int32) throws {
        let mount = try MountedStore(texts: ["a.txt": "a"])
        defer { mount.unmount() }
        let daemon = try #require(mount.daemon)
        kill(daemon.pid, signal)
        #expect(daemon.wait(seconds: 10) && daemon.exitStatus == 0)
        #expect(!mount.isMounted)
        #expect(mount.log.contains("unmounted"))
    }

    @Test func fusermountStopsTheDaemon() throws {
        let mount = try MountedStore(texts: ["a.txt": "a"])
        defer { mount.unmount() }
        // Limits that catch a hang, not a loaded machine: CI failed this once (on 19e4afd)
        // with every suite running beside it.
        let unmount = try MountedStore.run(["fusermount3", "-u", mount.mountPoint], timeout: 60)
        #expect(unmount.succeeded, "\(unmount.error)")
        let daemon = try #require(mount.daemon)
        #expect(daemon.wait(seconds: 60) && daemon.exitStatus == 0)
    }

    @Test func daemonizedMountReturnsWhenReadyAndUnmounts() throws {
        let mount = try MountedStore(texts: ["a.txt": "a"])
        mount.unmount()
        let result = try MountedStore.run([MountedStore.binary, "mount", mount.store, mount.mountPoint, "--log-file", mount.logFile], timeout: 30)
        #expect(result.succeeded, "\(result.error)")
        #expect(mount.isMounted, "mounted by the time the command returned")
        #expect(try MountedStore.run(["cat", mount.inMount("a.txt")], timeout: 10).output == "a")
        #expect(try MountedStore.run([MountedStore.binary, "unmount", mount.mountPoint], timeout: 30).succeeded)
        let deadline = Date().addingTimeInterval(10)
        while mount.isMounted && Date() < deadline { usleep(20_000) }
        #expect(!mount.isMounted)
    }

    @Test func clearErrorsAndExitStatuses() throws {
        let mount = try MountedStore(texts: ["a.txt": "a"])
        defer { mount.unmount() }
        let missingStore = try MountedStore.run([MountedStore.binary, "mount", mount.root.path + "/nope", mount.root.path], timeout: 10)
        #expect(missingStore.status == 3 && missingStore.error.contains("store") && missingStore.error.contains("No such file"))
        let busy = try MountedStore.run([MountedStore.binary, "mount", mount.store, mount.mountPoint], timeout: 10)
        #expect(busy.status == 4 && busy.error.contains("busy"))
        let missingMountPoint = try MountedStore.run([MountedStore.binary, "mount", mount.store, mount.root.path + "/nope"], timeout: 10)
        #expect(missingMountPoint.status == 4)
        let usage = try MountedStore.run([MountedStore.binary, "mount", mount.store], timeout: 10)
        #expect(usage.status == 64)
        #expect(try MountedStore.run([MountedStore.binary, "--version"], timeout: 10).output.hasPrefix("docfs 0.2.0 (libfuse 3."))
        #expect(try MountedStore.run([MountedStore.binary, "mount", "--help"], timeout: 10).output.contains("--strict"))
    }

    @Test func uidGidAndUmaskOptionsSetWhatEveryFileShows() throws {
        let mount = try MountedStore(texts: ["a.txt": "a", "sub/b.json": "{}"], arguments: ["-o", "uid=1234,gid=5678,umask=027"])
        defer { mount.unmount() }
        let shown = try mount.run(["stat", "-c", "%u:%g %a", "a.txt", "sub", "sub/b.json"]).output
        #expect(shown == "1234:5678 640\n1234:5678 750\n1234:5678 640\n", "\(shown)")
        let stored = try MountedStore.run(["stat", "-c", "%u:%g", mount.inStore("a.txt")], timeout: 10).output
        #expect(stored == "0:0\n", "the store keeps its own owner")
        let bad = try MountedStore.run([MountedStore.binary, "mount", mount.store, mount.root.path, "-o", "umask=9x"], timeout: 10)
        #expect(bad.status == 64 && bad.error.contains("umask=9x: needs a number in octal"), "\(bad.error)")
    }
}
