import Foundation
import Testing

/// A large tree does not cost a descriptor per inode.
@Suite(.timeLimit(.minutes(10)))
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
}
