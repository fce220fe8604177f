import Foundation
import Testing

/// Two programs working in one package at once, as in one folder on ext4: nothing acknowledged is
/// lost, and no two names share an inode.
@Suite(.timeLimit(.minutes(10)))
struct PackageConcurrencyTests {
    /// One loop creates files in the package's root, another in `assets/`, a third saves `text.md`
    /// with `sed -i`, while two busy loops keep both cores loaded (the race needed a loaded CPU).
    /// Before the fix, 3 to 92 of 600 new files held another file's bytes or none, two names
    /// showed one inode number, and `text.md` ended empty with mode 0600: a package's clone gives
    /// every member a second link for a moment, the mount took that for a hard link and kept the
    /// file's number as its identity, and once a save replaced the file, the file system gave the
    /// number to a new file, which the mount then served as the old one's other name.
    @Test(arguments: 1...3) func creationsAndSavesInOnePackageUnderLoadKeepEveryByte(trial: Int) throws {
        let mount = try MountedStore(texts: PackageTests.bundle)
        defer { mount.unmount() }
        let files = 200, saves = 60
        let script = """
            busy() { while :; do :; done; }
            busy & b1=$!; busy & b2=$!
            trap 'kill $b1 $b2 2>/dev/null' EXIT
            P=Doc.textbundle
            ( for i in $(seq 1 \(files)); do echo A$i > $P/a$i.txt || echo "create failed: a$i"; done ) &
            ( for i in $(seq 1 \(files)); do echo B$i > $P/assets/b$i.txt || echo "create failed: b$i"; done ) &
            ( for j in $(seq 1 \(saves)); do sed -i "\\$a S$j" $P/text.md || echo "save failed: $j"; done ) &
            wait %3 %4 %5
            for i in $(seq 1 \(files)); do
                [ "$(cat $P/a$i.txt)" = "A$i" ] || echo "wrong: a$i.txt"
                [ "$(cat $P/assets/b$i.txt)" = "B$i" ] || echo "wrong: assets/b$i.txt"
            done
            echo "lines $(wc -l < $P/text.md) mode $(stat -c %a $P/text.md)"
            echo "shared inodes: $(stat -c %i $P/* $P/assets/* | sort | uniq -d | wc -l)"
            """
        let result = try mount.shell(script, timeout: 240)
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.hasPrefix("wrong") || $0.hasSuffix("failed") || $0.contains("failed:") }.isEmpty, "\(result.output)\(result.error)")
        // text.md held 3 lines and gained one per save.
        #expect(lines.contains("lines \(3 + saves) mode 644"), "\(result.output)")
        #expect(lines.contains("shared inodes: 0"), "\(result.output)")
        #expect(mount.storeContents("Doc.textbundle/text.md")?.hasSuffix("S\(saves)\n") == true)
    }

    /// Appends to `A.textbundle/text.md` (each an open, a write and a close) in one thread while the
    /// main thread renames packages: `exchange` swaps A and B with RENAME_EXCHANGE, `pingpong`
    /// renames A to B and back. Prints what was appended and what the packages hold after.
    static let renamesDuringAppends = #"""
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
mode = sys.argv[1]; rounds = int(sys.argv[2])
appended = 0; open_failed = 0; close_failed = []
done = False
def appender():
    global appended, open_failed
    i = 0
    while not done:
        i += 1
        try:
            f = open("A.textbundle/text.md", "a")
        except OSError:
            open_failed += 1; continue
        try:
            f.write("x%d\n" % i); f.close(); appended += 1
        except OSError as e:
            close_failed.append(str(e))
t = threading.Thread(target=appender); t.start()
for r in range(rounds):
    if mode == "exchange":
        if libc.renameat2(-100, b"A.textbundle", -100, b"B.textbundle", 2) != 0:
            print("exchange failed", os.strerror(ctypes.get_errno()))
    else:
        os.rename("A.textbundle", "B.textbundle"); os.rename("B.textbundle", "A.textbundle")
done = True; t.join()
def lines(p):
    try: return open(p).read().split("\n")
    except OSError: return None
a, b = lines("A.textbundle/text.md"), lines("B.textbundle/text.md")
firsts = sorted(x[0] for x in (a, b) if x)
xs = sum(sum(1 for l in x if l.startswith("x")) for x in (a, b) if x)
print("appended", appended, "open failed", open_failed, "close failed", len(close_failed), close_failed[:2])
print("firsts", firsts, "x lines", xs, "modes", [oct(os.stat(p).st_mode & 0o777) for p in ("A.textbundle/text.md", "B.textbundle/text.md") if os.path.exists(p)])
"""#

    static let textBundleInfo = #"{"version": 2}"#

    /// Before the fix, after 300 exchanges both packages held the same document and the other was
    /// gone, unquarantined: a commit took the package's lock by its name, and the exchange moved
    /// another package under that name before the commit replaced it.
    @Test func exchangingTwoPackagesDuringAppendsKeepsBothWhole() throws {
        let mount = try MountedStore(texts: [
            "A.textbundle/info.json": Self.textBundleInfo, "A.textbundle/text.md": "A\n",
            "B.textbundle/info.json": Self.textBundleInfo, "B.textbundle/text.md": "B\n",
        ])
        defer { mount.unmount() }
        let result = try mount.python(Self.renamesDuringAppends, arguments: ["exchange", "300"], timeout: 180)
        let lines = result.output.split(separator: "\n").map(String.init)
        let appended = lines.first?.split(separator: " ").dropFirst().first.map(String.init)
        #expect(lines.first?.contains("close failed 0") == true, "\(result.output)\(result.error)")
        #expect(lines.last?.hasPrefix("firsts ['A', 'B'] x lines \(appended ?? "?") modes ['0o644', '0o644']") == true, "\(result.output)\(result.error)")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: mount.inStore(".docfs/staging"))) ?? ["?"]).isEmpty)
    }

    /// Before the fix, a package renamed back and forth during appends came back twice (A and B,
    /// one a stale copy), text.md became mode 0600, closes failed with ENOENT and stages piled up.
    @Test func renamingAPackageBackAndForthDuringAppendsKeepsOnePackage() throws {
        let mount = try MountedStore(texts: ["A.textbundle/info.json": Self.textBundleInfo, "A.textbundle/text.md": "A\n"])
        defer { mount.unmount() }
        let result = try mount.python(Self.renamesDuringAppends, arguments: ["pingpong", "300"], timeout: 180)
        let lines = result.output.split(separator: "\n").map(String.init)
        let appended = lines.first?.split(separator: " ").dropFirst().first.map(String.init)
        #expect(lines.first?.contains("close failed 0") == true, "\(result.output)\(result.error)")
        #expect(lines.last == "firsts ['A'] x lines \(appended ?? "?") modes ['0o644']", "\(result.output)\(result.error)")
        #expect(try mount.run(["ls"]).output == "A.textbundle\n")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: mount.inStore(".docfs/staging"))) ?? ["?"]).isEmpty)
    }

    /// Issue 40: read-opens of a member got EIO while packages were renamed back and forth (3 to 7
    /// of about 22,000 in 10 s here, and the log called the intact package broken: "info.json is
    /// missing"): the package was decoded by its path, which led into the other folder, or
    /// nowhere, half-way through. Now and then one got ESTALE: a member replaced by a save by
    /// rename kept no file for the open the kernel had already resolved to it. On ext4 such an
    /// open finds the file or ENOENT. `swap` exchanges the two packages' names through a third;
    /// `pingpong` moves each away and back; `text.md` of both is saved by rename meanwhile.
    @Test(arguments: ["swap", "pingpong"]) func opensInsideAPackageBeingRenamedFindItOrNothing(mode: String) throws {
        let mount = try MountedStore(texts: [
            "P1.textbundle/info.json": Self.textBundleInfo, "P1.textbundle/text.md": "one\n",
            "P2.textbundle/info.json": Self.textBundleInfo, "P2.textbundle/text.md": "two\n",
        ])
        defer { mount.unmount() }
        let result = try mount.python(#"""
            import errno, os, sys, threading, time
            mode = sys.argv[1]
            done = False
            opened = 0; missing = 0; others = {}; saves = 0
            def read():
                global opened, missing
                while not done:
                    for p in ("P1.textbundle/text.md", "P2.textbundle/text.md"):
                        try:
                            with open(p) as f: f.read()
                            opened += 1
                        except OSError as e:
                            if e.errno == errno.ENOENT: missing += 1
                            else:
                                name = errno.errorcode.get(e.errno, str(e.errno)); others[name] = others.get(name, 0) + 1
            def save():
                global saves
                i = 0
                while not done:
                    i += 1
                    for p in ("P1.textbundle/text.md", "P2.textbundle/text.md"):
                        try:
                            with open(p + ".tmp", "w") as f: f.write("save %d\n" % i)
                            os.rename(p + ".tmp", p)
                            saves += 1
                        except OSError:
                            pass
            threads = [threading.Thread(target=read), threading.Thread(target=read), threading.Thread(target=save)]
            for t in threads: t.start()
            end = time.time() + 12
            while time.time() < end:
                if mode == "swap":
                    os.rename("P1.textbundle", "T.textbundle"); os.rename("P2.textbundle", "P1.textbundle"); os.rename("T.textbundle", "P2.textbundle")
                else:
                    os.rename("P1.textbundle", "P3.textbundle"); os.rename("P3.textbundle", "P1.textbundle")
                    os.rename("P2.textbundle", "P4.textbundle"); os.rename("P4.textbundle", "P2.textbundle")
            done = True
            for t in threads: t.join()
            print("opened", opened, "missing", missing, "saves", saves, "other errors", sorted(others.items()))
            """#, arguments: [mode], timeout: 120)
        print("\(mode): \(result.output)", terminator: "")
        #expect(result.output.contains("other errors []"), "\(result.output)\(result.error)")
        #expect(!result.output.hasPrefix("opened 0 "), "\(result.output)")
        #expect(!mount.log.contains("does not decode"), "the log called an intact package broken")
    }

    /// Before the fix, a chmod, a time or an extended attribute set on `assets/` while `sed -i`
    /// saved `text.md` went back to its previous value in about 3 of 100 cases: the save swapped in a
    /// clone of the package taken before. Each change here is checked after a save that began
    /// after it has finished.
    @Test func metadataOfAPackageFolderSurvivesMemberSaves() throws {
        let mount = try MountedStore(texts: PackageTests.bundle)
        defer { mount.unmount() }
        let result = try mount.python(#"""
            import os, subprocess, threading
            P = "Doc.textbundle"
            done = False
            saves = 0
            def save():
                global saves
                while not done:
                    subprocess.run(["sed", "-i", "$a line", P + "/text.md"], check=True)
                    saves += 1
            saver = threading.Thread(target=save)
            saver.start()
            lost = []
            for i in range(1, 61):
                mode = 0o750 if i % 2 else 0o755
                os.chmod(P + "/assets", mode)
                os.utime(P + "/assets", (i, i))
                os.setxattr(P + "/assets", "user.n", str(i).encode())
                os.chmod(P, mode)
                # Two saves later, one of them began after these changes were made.
                target = saves + 2
                while saves < target: pass
                status = os.stat(P + "/assets")
                if status.st_mode & 0o777 != mode: lost.append(f"mode {i}")
                if int(status.st_mtime) != i: lost.append(f"time {i}")
                if os.getxattr(P + "/assets", "user.n") != str(i).encode(): lost.append(f"xattr {i}")
                if os.stat(P).st_mode & 0o777 != mode: lost.append(f"package mode {i}")
            done = True
            saver.join()
            print("lost:", lost, "saves:", saves)
            """#, timeout: 180)
        #expect(result.output.hasPrefix("lost: [] saves:"), "\(result.output)\(result.error)")
    }

    /// Issue 40: a rename or removal inside a package changed the store under the package's lock,
    /// and the node table only afterwards, in a second critical section. In between, the member's
    /// inode still named its old path: `fstat` of a descriptor open on it (asked of the daemon, as
    /// it is while the member has a write in progress) failed with ENOENT, which ext4 never
    /// answers for an open file. The hook holds the request just after its change is made.
    @Test(arguments: ["rename", "plain rename", "remove"]) func anOpenMemberKeepsItsAttributesWhileItMovesOrGoes(change: String) throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let mount = try MountedStore(
            texts: ["P.textbundle/info.json": Self.textBundleInfo, "P.textbundle/text.md": "text\n", "P.textbundle/assets/one.txt": "one\n"],
            launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        defer { mount.unmount() }
        try Self.checkOpenMemberWhileItMovesOrGoes(in: mount, hooks: hooks, change: change)
    }

    /// `anOpenMemberKeepsItsAttributesWhileItMovesOrGoes` on `mount` (either store), whose daemon
    /// runs with `hooks` and holds `P.textbundle/assets/one.txt` ("one"). `change`: `mv` (which
    /// asks for RENAME_NOREPLACE, so the package is changed through a clone swapped in), a plain
    /// rename(2) (made in place), or `rm`.
    static func checkOpenMemberWhileItMovesOrGoes(in mount: MountedStore, hooks: String, change: String) throws {
        let result = try mount.python(#"""
            import os, subprocess, sys, time
            mnt, hooks, change = sys.argv[1:4]
            one = os.path.join(mnt, 'P.textbundle', 'assets', 'one.txt')
            two = os.path.join(mnt, 'P.textbundle', 'assets', 'two.txt')
            writer = os.open(one, os.O_WRONLY)
            os.write(writer, b'changed\n')
            reader = os.open(one, os.O_RDONLY)
            point = os.path.join(hooks, 'package-change-made')
            open(point, 'w').close()
            command = {
                'rename': ['mv', one, two],
                'plain rename': [sys.executable, '-c', 'import os, sys; os.rename(sys.argv[1], sys.argv[2])', one, two],
                'remove': ['rm', one],
            }[change]
            other = subprocess.Popen(['timeout', '30'] + command)
            deadline = time.time() + 20
            while not os.path.exists(point + '.reached') and other.poll() is None and time.time() < deadline:
                time.sleep(0.005)
            print('held', os.path.exists(point + '.reached'))
            for label, fd in (('reader', reader), ('writer', writer)):
                try:
                    os.fstat(fd); print(label, 'fstat ok')
                except OSError as error:
                    print(label, 'fstat', error.errno)
            # Disarmed first: a request that reaches the point late then passes it, never waits there.
            for name in (point, point + '.reached'):
                try: os.remove(name)
                except FileNotFoundError: pass
            print('changed', other.wait())
            os.close(writer)
            os.close(reader)
            print('one', os.path.exists(one), 'two', open(two).read() if os.path.exists(two) else None)
            """#, arguments: [mount.mountPoint, hooks, change])
        let moved = change == "remove" ? "None" : "changed\n"
        #expect(
            result.output == "held True\nreader fstat ok\nwriter fstat ok\nchanged 0\none False two \(moved)\n", "\(change): \(result.output)\(result.error)\(mount.log.suffix(2000))")
    }
}
