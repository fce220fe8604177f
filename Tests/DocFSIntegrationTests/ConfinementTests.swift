import Foundation
import Glibc
import Testing

/// A root daemon serving other people: names it did not make never take it out of its store, never
/// block it, and never forge its records (issue 20).
@Suite(.timeLimit(.minutes(10)))
struct ConfinementTests {
    /// A folder outside the store holding a root-only file, as an attacker's target.
    private func secretFolder(in mount: MountedStore) throws -> String {
        let secret = mount.root.appendingPathComponent("secret").path
        try FileManager.default.createDirectory(atPath: secret, withIntermediateDirectories: true)
        try Data("SECRET\n".utf8).write(to: URL(fileURLWithPath: secret + "/a.txt"))
        chmod(secret + "/a.txt", 0o600)
        return secret
    }

    @Test func aFolderSwappedForALinkInTheStoreIsNeverFollowed() throws {
        // A process holds a folder of the mount open; someone who can write the store renames the
        // folder away and puts a link to another folder in its place. Reading, creating and
        // renaming through the held descriptor used to act on the link's target: the daemon built
        // `store/d/a.txt` and resolved it from /, following `d`.
        let mount = try MountedStore(texts: ["d/a.txt": "inside\n"])
        defer { mount.unmount() }
        let secret = try secretFolder(in: mount)
        let result = try mount.python("""
            import os, sys
            mnt, store, secret = sys.argv[1:4]
            fd = os.open(os.path.join(mnt, 'd'), os.O_RDONLY | os.O_DIRECTORY)
            os.rename(os.path.join(store, 'd'), os.path.join(store, 'd-moved'))
            os.symlink(secret, os.path.join(store, 'd'))
            def attempt(label, action):
                try:
                    print(label, action())
                except OSError as error:
                    print(label, 'errno', error.errno)
            def read():
                f = os.open('a.txt', os.O_RDONLY, dir_fd=fd)
                try: return os.read(f, 100)
                finally: os.close(f)
            def create():
                f = os.open('planted.txt', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                os.write(f, b'planted\\n'); os.close(f); return 'created'
            def rename():
                os.rename('a.txt', 'renamed.txt', src_dir_fd=fd, dst_dir_fd=fd); return 'renamed'
            attempt('read', read)
            attempt('create', create)
            attempt('rename', rename)
            """ , arguments: [mount.mountPoint, mount.store, secret])
        #expect(result.succeeded, "\(result.error)")
        #expect(!result.output.contains("SECRET"), "the daemon read a file outside its store: \(result.output)")
        let left = try FileManager.default.contentsOfDirectory(atPath: secret).sorted()
        #expect(left == ["a.txt"], "the daemon created or renamed outside its store: \(left)")
        #expect(try String(contentsOfFile: secret + "/a.txt", encoding: .utf8) == "SECRET\n")
        // The store itself is still served.
        #expect(try mount.read("d-moved/a.txt") == "inside\n")
    }

    @Test func aRenameOverAFIFOReturns() throws {
        // The daemon kept the item a rename replaces open for readers of the old version, and
        // opening a FIFO for reading waits for a writer: `mv f.txt p` never returned.
        let mount = try MountedStore(texts: ["doc.txt": "one\n", "new.txt": "two\n"])
        defer { mount.unmount() }
        #expect(try mount.run(["mkfifo", "p"]).succeeded)
        #expect(try mount.shell("echo x > f.txt").succeeded)
        let renamed = try mount.run(["timeout", "-k", "1", "5", "mv", "f.txt", "p"])
        #expect(renamed.succeeded, "mv over a FIFO did not return: \(renamed.status) \(renamed.error)")
        #expect(try mount.read("p") == "x\n")
        // A FIFO put in the store beside DocFS under a document's name, then replaced through the
        // mount.
        #expect(try mount.read("doc.txt") == "one\n")
        try FileManager.default.removeItem(atPath: mount.inStore("doc.txt"))
        #expect(mkfifo(mount.inStore("doc.txt"), 0o644) == 0)
        let replaced = try mount.run(["timeout", "-k", "1", "5", "mv", "new.txt", "doc.txt"])
        #expect(replaced.succeeded, "mv over a FIFO made in the store did not return: \(replaced.status) \(replaced.error)")
        #expect(try mount.read("doc.txt") == "two\n")
        #expect(try mount.run(["ls", "-A"]).output == "doc.txt\np\n")
    }

    @Test func aRefusedSaveOfANameWithANewlineIsKeptUnderItsRealName() throws {
        // The quarantine note was `key: value` lines and its parser kept the last value of a key:
        // a name holding "\ndocument: forged.json.json" put the refused bytes under another name.
        let mount = try MountedStore(texts: ["readme.txt": "hi\n"])
        defer { mount.unmount() }
        let name = "x\ndocument: forged.json.json"
        #expect(try mount.save(name, Data("{bad".utf8)) == "EIO")
        let listing = try mount.run([MountedStore.binary, "quarantine", "list", "--json", mount.store])
        #expect(listing.succeeded, "\(listing.error)")
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(listing.output.utf8)) as? [[String: Any]])
        #expect(entries.count == 1)
        #expect(entries.first?["document"] as? String == name, "\(listing.output)")
        let text = try mount.run([MountedStore.binary, "quarantine", "list", mount.store])
        #expect(text.output.contains("x\\ndocument: forged.json.json"), "\(text.output)")
        #expect(!text.output.split(separator: "\n").contains { $0.hasPrefix("document: forged") || $0.hasPrefix("  document: forged") })
        #expect(!mount.log.split(separator: "\n").contains { $0.hasPrefix("document: forged") }, "a name split a log line: \(mount.log)")
        #expect(mount.log.contains("refused a write to x\\ndocument: forged.json.json"))
    }

    @Test func anOpenThatRacesACommitServesTheCommittedVersion() throws {
        // An open found the committed file under the namespace lock, let go of it, then stored it
        // as the live version unconditionally. A commit landing in between was undone for readers,
        // and the next write was seeded from the old version, losing the commit.
        let hooks = try MountedStore.makeHookFolder()
        let mount = try MountedStore(texts: ["doc.txt": "zero\n"], launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        defer { mount.unmount() }
        let read = hooks + "/reader-read"
        let mayClose = hooks + "/reader-may-close"
        _ = FileManager.default.createFile(atPath: hooks + "/open-before-install", contents: nil)
        let reader = try ChildProcess(["timeout", "60", "python3", "-c", """
            import os, sys, time
            fd = os.open(sys.argv[1], os.O_RDONLY)
            with open(sys.argv[2] + '.new', 'wb') as out: out.write(os.read(fd, 100))
            os.rename(sys.argv[2] + '.new', sys.argv[2])
            while not os.path.exists(sys.argv[3]): time.sleep(0.01)
            os.close(fd)
            """, mount.inMount("doc.txt"), read, mayClose], capture: true)
        #expect(waitForFile(hooks + "/open-before-install.reached"), "the reader's open never reached the hook")
        #expect(try mount.shell("printf 'one\\n' > doc.txt").succeeded)
        try FileManager.default.removeItem(atPath: hooks + "/open-before-install.reached")
        // The reader holds its descriptor once it has written down what it read.
        #expect(waitForFile(read))
        #expect(try mount.shell("printf 'two\\n' >> doc.txt").succeeded)
        _ = FileManager.default.createFile(atPath: mayClose, contents: nil)
        reader.wait()
        #expect((try? String(contentsOfFile: read, encoding: .utf8)) == "one\n", "the open served the version the commit replaced")
        #expect(mount.storeContents("doc.txt") == "one\ntwo\n", "the commit was lost")
    }

    @Test func fsyncOfAFolderReachesTheStore() throws {
        // fsyncdir was not implemented, and the protocol's default answered success.
        let mount = try MountedStore(texts: ["sub/a.txt": "a\n"])
        defer { mount.unmount() }
        let daemon = try #require(mount.daemon)
        let trace = mount.root.appendingPathComponent("strace.txt").path
        let tracer = try ChildProcess(["strace", "-f", "-y", "-qq", "-p", String(daemon.pid), "-o", trace, "-e", "trace=fsync,newfstatat,statx,lstat"], capture: true)
        defer {
            kill(tracer.pid, SIGINT)
            tracer.wait()
        }
        // strace has attached once it traces a request.
        var attached = false
        for attempt in 0..<100 where !attached {
            _ = try? mount.run(["stat", "attach-probe-\(attempt)"])
            attached = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").contains("attach-probe-\(attempt)")
            if !attached { usleep(50_000) }
        }
        #expect(try mount.python("import os; fd = os.open('sub', os.O_RDONLY); os.fsync(fd); os.close(fd); os.path.exists('after-fsyncdir')").succeeded)
        let lines = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n")
        let synced = lines.firstIndex { $0.contains("fsync(") && $0.contains("<\(mount.store)/sub>") }
        let after = lines.firstIndex { $0.contains("after-fsyncdir") }
        #expect(synced != nil && after != nil, "\(lines.joined(separator: "\n"))")
        if let synced, let after { #expect(synced < after) }
    }

    @Test func namesAreBytesAndNeverLeaveTheirFolder() throws {
        // Random byte strings (with /, newlines, dots, bytes that are not UTF-8, 255 and 256 bytes)
        // through open, mkdir, rename and setxattr, in the mount and in a folder on ext4 side by
        // side: every call gives ext4's answer, and both folders end up holding the same names.
        let mount = try MountedStore(texts: [:])
        defer { mount.unmount() }
        let reference = mount.root.appendingPathComponent("reference").path
        try FileManager.default.createDirectory(atPath: reference, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: mount.inMount("names"), withIntermediateDirectories: true)
        let result = try mount.python("""
            import os, random, sys
            mnt, ref = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
            random.seed(20)
            alphabet = b'ab.-/\\n\\t \\\\:' + bytes([0xff, 0xc3, 0xa9, 0x80, 0xe2, 0x28, 0x01, 0x7f])
            names = [b'.', b'..', b'a' * 255, b'a' * 256, b'\\xff\\xfe', b'caf\\xc3\\xa9', b'cafe\\xcc\\x81', b'x\\ndocument: y', b'/abs', b'a/../../b']
            names += [bytes(random.choice(alphabet) for _ in range(random.randint(1, 12))) for _ in range(250)]
            def outcome(call):
                try:
                    call(); return 'ok'
                except OSError as error:
                    return 'errno %d' % error.errno
            def run(base):
                results = []
                for index, name in enumerate(names):
                    # Joined by hand: os.path.join drops the folder before a name starting with /.
                    path = base + b'/' + name
                    moved = base + b'/' + b'%d-' % index + name
                    def create():
                        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                        os.write(fd, b'plain text\\n'); os.close(fd)
                    results.append(outcome(create))
                    results.append(outcome(lambda: os.mkdir(path + b'.d')))
                    results.append(outcome(lambda: os.rename(path, moved)))
                    results.append(outcome(lambda: os.setxattr(moved, b'user.name', name)))
                return results
            here, there = run(os.path.join(mnt, b'names')), run(ref)
            differences = [(names[i // 4], 'create mkdir rename setxattr'.split()[i % 4], a, b) for i, (a, b) in enumerate(zip(here, there)) if a != b]
            for difference in differences[:20]: print('differs', difference)
            listed, expected = sorted(os.listdir(os.path.join(mnt, b'names'))), sorted(os.listdir(ref))
            if listed != expected: print('listings differ', set(listed) ^ set(expected))
            for name in expected:
                path = os.path.join(mnt, b'names', name)
                if os.path.isfile(path) and open(path, 'rb').read() != b'plain text\\n': print('content differs', name)
            print('done', len(names), sum(r == 'ok' for r in here))
            """, arguments: [mount.mountPoint, reference])
        #expect(result.succeeded && result.output.hasPrefix("done"), "\(result.output)\(result.error)")
        // Nothing reached the mount's parent or the store's.
        let besideStore = try FileManager.default.contentsOfDirectory(atPath: mount.root.path).sorted()
        #expect(besideStore == ["docfs.log", "mnt", "reference", "store"], "\(besideStore)")
        let storeTop = try FileManager.default.contentsOfDirectory(atPath: mount.store).sorted()
        #expect(storeTop == [".docfs", "names"], "\(storeTop)")
    }

    // MARK: Helpers

    /// Waits (up to 20 s) for a file the daemon makes when a request reaches a hook.
    private func waitForFile(_ path: String) -> Bool { MountedStore.waitUntil { FileManager.default.fileExists(atPath: path) } }
}
