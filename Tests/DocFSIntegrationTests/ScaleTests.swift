import Foundation
import Testing

/// A large tree does not cost a descriptor per inode.
@Suite(.timeLimit(.minutes(5)))
struct ScaleTests {
    @Test func findAndStatOverManyDocumentsUnderALowDescriptorLimit() throws {
        let mount = try MountedStore(texts: [:], launcher: ["prlimit", "--nofile=256:256"])
        defer { mount.unmount() }
        // 5,000 documents, 20 times the daemon's descriptor limit, made in the store directly.
        try MountedStore.run(["python3", "-c", """
            import os
            for d in range(50):
                os.makedirs('\(mount.store)/dir%d' % d, exist_ok=True)
                for f in range(100):
                    with open('\(mount.store)/dir%d/note%d.txt' % (d, f), 'w') as out: out.write('note %d %d\\n' % (d, f))
            """], timeout: 120)
        let found = try mount.shell("find . -type f -exec stat -c '%s %i' {} + | wc -l", timeout: 240)
        #expect(found.output == "5000\n", "\(found.error)")
        let read = try mount.shell("cat dir*/note1*.txt | wc -l", timeout: 120)
        #expect(read.output == "550\n", "\(read.error)")
        #expect(!mount.log.contains("Too many open files"))
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
