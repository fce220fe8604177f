import Foundation
import Testing

/// The store never holds an invalid document, and nothing a user wrote is lost.
@Suite(.timeLimit(.minutes(10)))
struct ValidationTests {
    static let sample = ["hello.txt": "Hello.\n", "settings.json": "{\"theme\": \"dark\"}\n"]

    @Test(arguments: [
        ("hello.txt", "import sys; sys.stdout.buffer.write(b'bad \\xff\\xfe bytes')", "Hello.\n"),
        ("settings.json", "print('{\"theme\": ')", "{\"theme\": \"dark\"}\n"),
    ])
    func anInvalidWriteFailsAtCloseWithEIO(file: String, producer: String, original: String) throws {
        let mount = try MountedStore(texts: Self.sample)
        defer { mount.unmount() }
        // cat reports a failed close of its output; the shell's own redirection would not.
        let result = try mount.shell("python3 -c \"\(producer.replacingOccurrences(of: "\"", with: "\\\""))\" | cat > \(file)")
        #expect(!result.succeeded && result.error.contains("Input/output error"), "\(result.error)")
        #expect(mount.storeContents(file) == original, "the stored document is exactly as it was")
        #expect(try mount.read(file) == original, "and reads through the mount show it, not the refused bytes")
        let quarantined = try #require(mount.quarantined.first { $0.hasSuffix(file) })
        let kept = try Data(contentsOf: URL(fileURLWithPath: mount.inStore(".docfs/quarantine/" + quarantined)))
        #expect(!kept.isEmpty && kept != Data(original.utf8), "the refused bytes are kept")
        #expect(mount.log.contains("refused a write to \(file)"))
    }

    @Test func anOpenRightAfterACloseSeesTheCommittedDocument() throws {
        // Read after write through separate opens, many times over, from four processes at once: a
        // close returns before the kernel's RELEASE reaches the daemon, so each open races with the
        // release of the handle before it. (That race once dropped the open's descriptor; under
        // load vim reported "[READ ERRORS]" on a file the shell had just written.)
        let mount = try MountedStore(texts: Self.sample)
        defer { mount.unmount() }
        let result = try mount.python("""
            import os, multiprocessing
            def work(name):
                for i in range(1500):
                    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                    os.write(fd, b'version %d' % i)
                    os.close(fd)
                    fd = os.open(name, os.O_RDONLY)
                    data = os.read(fd, 100)
                    os.close(fd)
                    if data != b'version %d' % i:
                        return 'read after write %d of %s: %r' % (i, name, data)
                return ''
            with multiprocessing.Pool(4) as pool:
                errors = [e for e in pool.map(work, ['w%d.txt' % n for n in range(4)]) if e]
            raise SystemExit('; '.join(errors) if errors else 0)
            """, timeout: 120)
        #expect(result.succeeded, "\(result.output)\(result.error)")
    }

    @Test func closeFsyncAndPythonReportTheRefusal() throws {
        let mount = try MountedStore(texts: Self.sample)
        defer { mount.unmount() }
        let result = try mount.python("""
            import os
            fd = os.open('settings.json', os.O_WRONLY | os.O_TRUNC)
            os.write(fd, b'not json')
            try:
                os.fsync(fd); print('fsync ok')
            except OSError as error: print('fsync', error.errno)
            os.write(fd, b'{"still": "bad"')
            try:
                os.close(fd); print('close ok')
            except OSError as error: print('close', error.errno)
            with open('settings.json', 'w') as f: f.write('{"theme": "light"}')
            print(open('settings.json').read())
            """)
        #expect(result.output == "fsync 5\nclose 5\n{\"theme\": \"light\"}\n", "\(result.error)")
    }

    @Test func aCorruptStoredDocumentCannotBeReadButCanBeReplaced() throws {
        let mount = try MountedStore(files: ["broken.json": Data("{\"unterminated\": ".utf8), "bad.txt": Data([0x61, 0xFF])])
        defer { mount.unmount() }
        let read = try mount.run(["cat", "broken.json"])
        #expect(!read.succeeded && read.error.contains("Input/output error"))
        #expect(!(try mount.run(["cat", "bad.txt"])).succeeded)
        #expect(mount.log.contains("cannot open broken.json") && mount.log.contains("as json (public.json)"))
        #expect(try mount.shell("printf '{\"fixed\": true}' | cat > broken.json").succeeded)
        #expect(try mount.read("broken.json") == "{\"fixed\": true}")
    }

    @Test func emptyDraftsAndEmptying() throws {
        let mount = try MountedStore(texts: Self.sample)
        defer { mount.unmount() }
        #expect(try mount.run(["touch", "new.json"]).succeeded, "a new empty file is a draft")
        #expect(try mount.read("new.json") == "")
        #expect(!(try mount.shell("printf '{' | cat > new.json")).succeeded, "its first non-empty commit is validated")
        #expect(try mount.shell("printf '{}' | cat > new.json").succeeded)
        #expect(!(try mount.run(["truncate", "-s", "0", "settings.json"])).succeeded, "emptying a JSON document must decode")
        #expect(mount.storeContents("settings.json") == "{\"theme\": \"dark\"}\n")
        #expect(try mount.run(["truncate", "-s", "0", "hello.txt"]).succeeded, "an empty text is valid text")
    }

    @Test func readOnlyMountRefusesWritesAndServesReads() throws {
        let mount = try MountedStore(texts: Self.sample, arguments: ["-o", "ro"])
        defer { mount.unmount() }
        #expect(try mount.read("hello.txt") == "Hello.\n")
        let write = try mount.shell("printf x >> hello.txt")
        #expect(!write.succeeded && write.error.contains("Read-only file system"))
        #expect(!(try mount.run(["touch", "new.txt"])).succeeded)
        #expect(!(try mount.run(["rm", "hello.txt"])).succeeded)
        #expect(try mount.run(["stat", "-c", "%A", "hello.txt"]).output == "-r--r--r--\n")
        #expect(try mount.run(["getfattr", "--only-values", "-n", "user.docfs.editable", "hello.txt"]).output == "false")
        #expect(mount.storeContents("hello.txt") == "Hello.\n")
    }

    @Test func aStoreFileWithoutWritePermissionIsNotEditable() throws {
        let mount = try MountedStore(texts: Self.sample)
        defer { mount.unmount() }
        #expect(try mount.run(["chmod", "a-w", "hello.txt"]).succeeded)
        #expect(try mount.run(["getfattr", "--only-values", "-n", "user.docfs.editable", "hello.txt"]).output == "false")
        // Even root, whom the kernel lets past mode bits, cannot write a read-only document.
        let write = try mount.shell("printf x >> hello.txt")
        #expect(!write.succeeded && write.error.contains("Permission denied"), "\(write.error)")
        #expect(try mount.run(["getfattr", "--only-values", "-n", "user.docfs.editable", "settings.json"]).output == "true")
    }

    @Test func unclaimedFilesAreRawDataUnlessStrict() throws {
        let relaxed = try MountedStore(texts: [:])
        defer { relaxed.unmount() }
        #expect(try relaxed.shell("head -c 1000 /dev/urandom > blob.bin && printf '\\xff' > .hello.txt.swp && printf x > noextension").succeeded)
        #expect(try relaxed.run(["cmp", "blob.bin", relaxed.inStore("blob.bin")]).succeeded)

        let strict = try MountedStore(texts: Self.sample, arguments: ["--strict"])
        defer { strict.unmount() }
        let refused = try strict.shell("printf data > blob.bin")
        #expect(!refused.succeeded && refused.error.contains("Operation not permitted"))
        #expect(strict.log.contains("refused blob.bin: no document type claims it"))
        #expect(try strict.shell("printf 'text' > fine.txt").succeeded)
    }

    @Test func changesInTheStoreShowUpInTheMount() throws {
        let mount = try MountedStore(texts: Self.sample, arguments: ["--cache-timeout", "0"])
        defer { mount.unmount() }
        #expect(try mount.read("hello.txt") == "Hello.\n")
        try mount.writeToStore("hello.txt", Data("Changed behind the mount.\n".utf8))
        try mount.writeToStore("added.md", Data("# Added\n".utf8))
        #expect(try mount.read("hello.txt") == "Changed behind the mount.\n")
        #expect(try mount.read("added.md") == "# Added\n")
        try FileManager.default.removeItem(atPath: mount.inStore("added.md"))
        #expect(try mount.read("added.md") == nil)
    }

    @Test func statSizeIsExactAndReadsDoNotChangeTimes() throws {
        let mount = try MountedStore(texts: Self.sample)
        defer { mount.unmount() }
        let result = try mount.python("""
            import os
            fd = os.open('hello.txt', os.O_WRONLY | os.O_APPEND)
            os.write(fd, b'12345')
            print(os.stat('hello.txt').st_size)
            os.close(fd)
            before = os.stat('hello.txt')
            open('hello.txt').read()
            after = os.stat('hello.txt')
            print(before.st_mtime_ns == after.st_mtime_ns, before.st_ctime_ns == after.st_ctime_ns, before.st_ino == after.st_ino)
            """)
        #expect(result.output == "12\nTrue True True\n", "\(result.error)")
    }
}
