import Foundation
import Glibc
import Testing

/// Tests that empty the kernel's caches (`/proc/sys/vm/drop_caches`), which is global: run one at a
/// time, so one's drop does not pull the ground from under the other's expectations.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct KernelCacheTests {
    @Test func forgottenInodesAreDropped() throws {
        var files: [String: String] = [:]
        for index in 0..<300 { files["dir/f\(index).txt"] = "\(index)" }
        let mount = try MountedStore(texts: files)
        defer { mount.unmount() }
        #expect(try mount.run(["ls", "-lR"]).succeeded)
        let before = try #require(Int(try mount.run(["getfattr", "--only-values", "-n", "user.docfs.inodes", "."]).output))
        #expect(before > 300)
        // Evicting the kernel's dentries and inodes sends FORGET for every one of them.
        try MountedStore.run(["bash", "-c", "sync; echo 2 > /proc/sys/vm/drop_caches"], timeout: 30)
        // The FORGETs are queued to the daemon as drop_caches returns; under load they take a moment.
        var after = before
        for _ in 0..<50 where after >= 10 {
            after = try #require(Int(try mount.run(["getfattr", "--only-values", "-n", "user.docfs.inodes", "."]).output))
            if after >= 10 { usleep(100_000) }
        }
        #expect(after < 10, "\(before) inodes before the kernel forgot them, \(after) after")
    }

    @Test func aLargeAssetIsNeitherReadNorRewrittenWhenTheTextIsEdited() throws {
        // A second package, edited first: the caches dropped take the daemon's own code too, and
        // the pages of a release binary faulted back in count as storage reads.
        var files = PackageTests.bundle
        for (path, text) in PackageTests.bundle { files["Warm.textbundle" + path.dropFirst("Doc.textbundle".count)] = text }
        let mount = try MountedStore(texts: files)
        defer { mount.unmount() }
        let asset = mount.inStore("Doc.textbundle/assets/movie.bin")
        try MountedStore.run(["bash", "-c", "head -c 200000000 /dev/urandom > \(asset)"], timeout: 120)
        let before = try #require(FileStatusProbe(asset))
        let daemon = try #require(mount.daemon?.pid)
        try MountedStore.run(["bash", "-c", "sync; echo 3 > /proc/sys/vm/drop_caches"], timeout: 60)
        #expect(try mount.run(["sed", "-i", "s/body/warm/", "Warm.textbundle/text.md"]).succeeded)
        #expect(try mount.read("Warm.textbundle/text.md") == "# Title\n\nwarm\n")
        let ioBefore = try #require(ProcessIO(pid: daemon))
        #expect(try mount.run(["sed", "-i", "s/body/edited/", "Doc.textbundle/text.md"]).succeeded)
        #expect(try mount.read("Doc.textbundle/text.md") == "# Title\n\nedited\n")
        let ioAfter = try #require(ProcessIO(pid: daemon))
        let after = try #require(FileStatusProbe(asset))
        #expect(after.inode == before.inode && after.modification == before.modification, "the asset's stored file is the same file")
        let bytesRead = ioAfter.storageBytesRead - ioBefore.storageBytesRead
        let bytesCopied = ioAfter.bytesReadBySyscalls - ioBefore.bytesReadBySyscalls
        #expect(bytesRead < 8_000_000, "the daemon read \(bytesRead) bytes from storage for a one-line edit")
        #expect(bytesCopied < 8_000_000, "the daemon read \(bytesCopied) bytes through read calls")
        #expect(ioAfter.storageBytesWritten - ioBefore.storageBytesWritten < 8_000_000)
    }

    @Test func theDaemonGivesMemoryBackWhenTheKernelForgetsItsInodes() throws {
        let mount = try MountedStore(texts: [:])
        defer { mount.unmount() }
        try MountedStore.run(["python3", "-c", """
            import os
            for d in range(40):
                os.makedirs('\(mount.store)/dir%d' % d, exist_ok=True)
                for f in range(500):
                    with open('\(mount.store)/dir%d/note%d.txt' % (d, f), 'w') as out: out.write('note\\n')
            """], timeout: 120)
        let before = try #require(mount.daemonResidentKiB)
        #expect(try mount.shell("find . -printf '%s\\n' | wc -l", timeout: 240).output == "20041\n", "every file stat-ed")
        let held = try #require(Int(try mount.run(["getfattr", "--only-values", "-n", "user.docfs.inodes", "."]).output))
        let grown = try #require(mount.daemonResidentKiB)
        #expect(held > 20_000, "the walk made the kernel hold every inode: \(held)")

        // Evicting dentries and inodes makes the kernel FORGET them; the daemon drops its records.
        var remaining = held
        for _ in 0..<50 where remaining > 100 {
            try "2\n".write(toFile: "/proc/sys/vm/drop_caches", atomically: false, encoding: .utf8)
            usleep(200_000)
            remaining = Int(try mount.run(["getfattr", "--only-values", "-n", "user.docfs.inodes", "."]).output) ?? remaining
        }
        #expect(remaining <= 100, "the kernel forgot the walk's inodes: \(remaining) held")
        let after = try #require(mount.daemonResidentKiB)
        #expect(after < before + (grown - before) / 2, "resident \(before) KiB before, \(grown) KiB after the walk, \(after) KiB once forgotten")
    }
}
