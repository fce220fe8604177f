import Foundation
import Glibc
import Testing

/// Versions are purgeable space (issue 36, items 6 and 8): on a store whose file system is nearly
/// full, every save and removal that a plain file system of the same size takes succeeds through
/// DocFS too — the oldest versions make room, first those beyond each document's newest — and
/// what was given up is said by `docfs status` and `docfs versions`. Before, with versions on,
/// 15 of 18 saves failed with ENOSPC on a 91% full store and an `rm` gave back nothing.
@Suite(.timeLimit(.minutes(10)))
struct FullStoreTests {
    /// 46 documents of 1 MiB on a 48 MiB file system (96% full), each rewritten once as `cp` does,
    /// then half of them removed and as many new ones written: prints each step's outcome ("ok" or
    /// the errno name), one a line. (A save needs room for its new content beside the old until it
    /// commits, so DocFS cannot rewrite a document larger than what is free once every version is
    /// dropped, where a plain file system's truncation frees the old first: the man page says so.)
    static let workload = """
        import errno, os, sys
        os.chdir(sys.argv[1])
        def attempt(what, action):
            try:
                action(); print(what, "ok")
            except OSError as e:
                print(what, errno.errorcode.get(e.errno, e.errno))
        def write(name, byte):
            with open(name, "wb") as f: f.write(byte * ((1 << 20) - 1) + b"\\n")
        if sys.argv[2] == "fill":
            for i in range(46): attempt(f"create {i}", lambda: write(f"doc{i}.txt", b"a"))
        else:
            for i in range(46): attempt(f"rewrite {i}", lambda: write(f"doc{i}.txt", b"b"))
            for i in range(23): attempt(f"remove {i}", lambda: os.unlink(f"doc{i}.txt"))
            for i in range(23): attempt(f"new {i}", lambda: write(f"new{i}.txt", b"c"))
        """

    private static func outcomes(_ output: String) -> [String] { output.split(separator: "\n").map(String.init) }

    @Test func savesAndRemovalsThatAPlainFileSystemTakesSucceedOnAFullStore() throws {
        // The same workload on a plain tmpfs of the same size: what a file system alone takes.
        let plain = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-plain-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: plain, withIntermediateDirectories: true)
        defer {
            _ = try? MountedStore.run(["umount", "-l", plain], timeout: 10)
            try? FileManager.default.removeItem(atPath: plain)
        }
        #expect(try MountedStore.run(["mount", "-t", "tmpfs", "-o", "size=48m", "docfs-plain", plain], timeout: 10).succeeded)
        for step in ["fill", "change"] {
            let native = try MountedStore.run(["python3", "-c", Self.workload, plain, step], timeout: 60)
            #expect(Self.outcomes(native.output).allSatisfy { $0.hasSuffix(" ok") }, "the plain file system takes it all: \(native.output)")
        }

        let mount = try MountedStore(texts: [:], tmpfsSize: "48m")
        defer { mount.unmount() }
        let filled = try mount.python(Self.workload, arguments: [mount.mountPoint, "fill"], timeout: 60)
        #expect(Self.outcomes(filled.output).allSatisfy { $0.hasSuffix(" ok") }, "\(filled.output)")
        let changed = try mount.python(Self.workload, arguments: [mount.mountPoint, "change"], timeout: 120)
        let failed = Self.outcomes(changed.output).filter { !$0.hasSuffix(" ok") }
        #expect(failed.isEmpty, "every step a plain file system of the same size takes: \(failed)")
        #expect(try mount.run(["head", "-c", "1", "doc45.txt"]).output == "b")
        #expect(try mount.run(["head", "-c", "1", "new22.txt"]).output == "c")

        // What went is said: docfs status counts the versions dropped for room, docfs versions
        // names them for their document.
        let status = try mount.run([MountedStore.binary, "status", mount.mountPoint])
        #expect(status.output.contains("versions dropped to make room on a full store: "), "\(status.output)\(status.error)")
        let json = try mount.run([MountedStore.binary, "status", "--json", mount.mountPoint])
        let counted = (try? JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]) ?? [:]
        #expect((counted["versionsDroppedForSpace"] as? Int ?? 0) > 0, "\(json.output)")
        let versions = try mount.run([MountedStore.binary, "versions", mount.inMount("doc0.txt")])
        #expect(versions.output.contains("dropped to make room on a full store"), "\(versions.output)\(versions.error)")
        try mount.remount()
        #expect(try mount.run(["head", "-c", "1", "new0.txt"]).output == "c")
    }

    /// Out of inodes, with no version left to give back: a save in place and a removal, which a
    /// plain file system takes with no new inode, succeed through DocFS and keep no version, and
    /// the document's owner is told so by `docfs versions` — before, only root was (the record is
    /// in the store's private area), so a user's save looked as if it had never been kept. Another
    /// user who may read the document is told nothing of the owner's.
    @Test func aChangeThatCouldKeepNoVersionIsToldToTheDocumentsOwner() throws {
        let mount = try MountedStore(texts: [:], arguments: ["-o", "allow_other"], tmpfsSize: "16m,nr_inodes=300")
        defer { mount.unmount() }
        chmod(mount.mountPoint, 0o755)
        #expect(try mount.shell("mkdir d && chown daemon d").succeeded)
        let filled = try mount.shell(as: "daemon", """
            python3 -c '
            import errno, os
            made = 0
            while True:
                try:
                    with open("d/doc%d.txt" % made, "w") as f: f.write("one\\n")
                except OSError as e:
                    print("full after", made, errno.errorcode.get(e.errno)); break
                made += 1
            os.unlink("d/doc1.txt"); print("removed")
            with open("d/doc0.txt", "w") as f: f.write("two\\n")
            print("saved")
            '
            """, timeout: 120)
        #expect(filled.output.contains("ENOSPC") && filled.output.contains("removed\nsaved\n"), "\(filled.output)\(filled.error)")
        #expect(try mount.read("d/doc0.txt") == "two\n")

        let owner = try mount.shell(as: "daemon", "'\(MountedStore.binary)' versions d/doc0.txt")
        #expect(owner.output.contains("not kept: the store was full"), "\(owner.output)\(owner.error)")
        let other = try mount.shell(as: "nobody", "cat d/doc0.txt && '\(MountedStore.binary)' versions d/doc0.txt")
        #expect(other.output.hasPrefix("two\n") && !other.output.contains("not kept"), "\(other.output)\(other.error)")
        let status = try mount.run([MountedStore.binary, "status", mount.mountPoint])
        #expect(status.output.contains("versions not kept, the store being full: ") && status.output.contains("d/doc0.txt"), "\(status.output)\(status.error)")
    }
}
