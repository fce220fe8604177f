import Foundation
import Testing

/// A file keeps its inode number for as long as it exists (issue 21): across remounts, the kernel
/// forgetting it, renames and saves, so backup tools and git do not read everything again. Runs on
/// directory stores and, in `scripts/test`, on PostgreSQL stores too.
///
/// Before the fix every number here was the daemon's own counter, handed out afresh whenever the
/// kernel looked a name up again: each of these tests failed on 7d310cf.
@Suite(.timeLimit(.minutes(10)))
struct IdentityTests {
    /// 2,000 documents in 40 folders, made beside the mount (through it on PostgreSQL).
    static let tree: [String: String] = Dictionary(uniqueKeysWithValues: (0..<2000).map { ("folder\($0 % 40)/note\($0).txt", "note \($0)\n") })

    /// Every entry's number, looked up in sorted order or in reverse.
    private static let numbersScript = """
        import os, sys
        paths = []
        for folder, folders, files in os.walk("."):
            paths += [os.path.join(folder, name) for name in folders + files]
        paths.sort(reverse=sys.argv[1] == "reverse")
        for path in paths: print(os.lstat(path).st_ino, path)
        """

    private static func numbers(_ mount: MountedStore, order: String) throws -> [String: String] {
        let result = try mount.python(numbersScript, arguments: [order], timeout: 120)
        #expect(result.succeeded, "\(result.error)")
        return Dictionary(uniqueKeysWithValues: result.output.split(separator: "\n").map { line in
            let parts = line.split(separator: " ", maxSplits: 1)
            return (String(parts[1]), String(parts[0]))
        })
    }

    private static func dropCaches() throws {
        try "3".write(toFile: "/proc/sys/vm/drop_caches", atomically: false, encoding: .utf8)
    }

    @Test func numbersOfATreeSurviveARemountAndTheKernelForgetting() throws {
        let mount = try MountedStore(texts: Self.tree)
        defer { mount.unmount() }
        let first = try Self.numbers(mount, order: "sorted")
        #expect(first.count == 2040)
        #expect(Set(first.values).count == first.count, "no two items share a number")
        try Self.dropCaches()
        #expect(try Self.numbers(mount, order: "reverse") == first, "after drop_caches")
        try mount.remount()
        #expect(try Self.numbers(mount, order: "reverse") == first, "after a remount")
        // `ls -i` takes numbers from readdir: they are the same.
        let listing = try mount.run(["ls", "-i", "-a", "folder7"])
        for line in listing.output.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 2, parts[1] != "." && parts[1] != ".." else { continue }
            #expect(first["./folder7/\(parts[1])"] == String(parts[0]), "\(line)")
        }
        #expect(listing.output.contains("\(first["./folder7"] ?? "?") ."), "readdir's . is the folder: \(listing.output.prefix(200))")
    }

    /// The number of each item at `paths`, by `stat -c %i`.
    private static func stat(_ mount: MountedStore, _ paths: [String]) throws -> [String] {
        try mount.run(["stat", "-c", "%i"] + paths).output.split(separator: "\n").map(String.init)
    }

    /// rename(2) moves the file: its number goes with it, for every kind of item, and stays its
    /// number after a remount.
    @Test func aRenameKeepsTheNumber() throws {
        let mount = try MountedStore(texts: ["doc.txt": "a document\n"])
        defer { mount.unmount() }
        let names = ["doc.txt", "folder", "link", "fifo", "raw.bin"]
        let made = try mount.shell("mkdir folder into && ln -s doc.txt link && mkfifo fifo && printf raw > raw.bin")
        #expect(made.succeeded, "\(made.error)")
        let before = try Self.stat(mount, names)
        for name in names { #expect(try mount.run(["mv", name, "into/renamed-" + name]).succeeded) }
        let renamed = names.map { "into/renamed-" + $0 }
        #expect(try Self.stat(mount, renamed) == before)
        try Self.dropCaches()
        #expect(try Self.stat(mount, renamed) == before, "after drop_caches")
        try mount.remount()
        #expect(try Self.stat(mount, renamed) == before, "after a remount")
    }

    /// A save in place (O_TRUNC, then write) keeps the document's number, as ext4 does; a save by
    /// rename (sed -i) gives the new file its own; hard links share one. The numbers stay after a
    /// remount.
    @Test func aSaveInPlaceKeepsTheNumberAndASaveByRenameMakesANewOne() throws {
        let mount = try MountedStore(texts: ["beside.txt": "made beside DocFS\n", "other.txt": "other\n"])
        defer { mount.unmount() }
        #expect(try mount.shell("printf 'made through DocFS\\n' > made.txt").succeeded)
        let documents = ["beside.txt", "made.txt", "other.txt"]
        let before = try Self.stat(mount, documents)
        for round in 0..<3 {
            #expect(try mount.shell("printf 'saved \(round)\\n' > beside.txt && printf 'saved \(round)\\n' > made.txt").succeeded)
        }
        #expect(try mount.run(["sed", "-i", "s/other/edited/", "other.txt"]).succeeded)
        let after = try Self.stat(mount, documents)
        #expect(after[0] == before[0] && after[1] == before[1], "a save in place keeps the number")
        #expect(after[2] != before[2], "sed -i made a new file")
        #expect(Set(after).count == 3)
        let link = try mount.shell("printf raw > raw.bin && ln raw.bin raw-link.bin")
        if MountedStore.backendIsPostgres {
            #expect(!link.succeeded, "a PostgreSQL store has no hard links")
        } else {
            let numbers = try Self.stat(mount, ["raw.bin", "raw-link.bin"])
            #expect(link.succeeded && numbers.count == 2 && Set(numbers).count == 1, "hard links share one number")
        }
        try mount.remount()
        #expect(try Self.stat(mount, documents) == after, "after a remount")
    }

    /// A file whose name goes while it is open is still the same file: fstat shows its number.
    @Test func anOpenFileKeepsItsNumberWhenItsNameGoes() throws {
        let mount = try MountedStore(texts: ["doc.txt": "a document\n", "other.txt": "other\n"])
        defer { mount.unmount() }
        let result = try mount.python("""
            import os
            with open("raw.bin", "wb") as f: f.write(b"raw")
            for name in ["doc.txt", "raw.bin"]:
                fd = os.open(name, os.O_RDONLY)
                before = os.fstat(fd).st_ino
                os.unlink(name)
                print(name, "unlinked", os.fstat(fd).st_ino == before, os.fstat(fd).st_nlink)
                os.close(fd)
            fd = os.open("other.txt", os.O_RDONLY)
            before = os.fstat(fd).st_ino
            with open("new.txt", "w") as f: f.write("new\\n")
            os.rename("new.txt", "other.txt")
            print("replaced", os.fstat(fd).st_ino == before, os.lstat("other.txt").st_ino != before)
            os.close(fd)
            """)
        #expect(result.output == "doc.txt unlinked True 0\nraw.bin unlinked True 0\nreplaced True True\n", "\(result.output)\(result.error)")
    }

    /// `cp -a` run by root beside the mount copies DocFS's number attribute with the file: the copy
    /// was the same file to every program that compares `st_ino` (`test -ef`, `find -samefile`),
    /// and `cp` from one to the other refused ("are the same file"). Fails before the attribute
    /// named its file. A store copied whole the same way (restored from a backup) is all copies:
    /// each item gets a number of its own, and keeps its history.
    @Test(.disabled(if: MountedStore.backendIsPostgres, "a PostgreSQL store's numbers are its rows'"))
    func aCopyThatTookTheNumberAlongIsAnotherFile() throws {
        let mount = try MountedStore(texts: ["a.md": "one\n"])
        defer { mount.unmount() }
        // A save in place: the number goes into the attribute.
        #expect(try mount.shell("echo two > a.md").succeeded)
        #expect(try MountedStore.run(["cp", "-a", mount.inStore("a.md"), mount.inStore("b.md")], timeout: 30).succeeded)
        #expect(MountedStore.waitUntil { access(mount.inMount("b.md"), F_OK) == 0 }, "the watch tells the mount")
        #expect(try mount.shell("echo changed > b.md").succeeded)
        let numbers = try Self.stat(mount, ["a.md", "b.md"])
        #expect(numbers.count == 2 && numbers[0] != numbers[1], "\(numbers)")
        #expect(try mount.shell("[ a.md -ef b.md ]").status == 1)
        #expect(try mount.run(["cp", "a.md", "b.md"]).succeeded)
        #expect(try mount.read(".versions/a.md/" + (try mount.run(["ls", mount.inMount(".versions/a.md")]).output.split(separator: "\n").first.map(String.init) ?? "?")) == "one\n")
        #expect(try mount.run(["ls", mount.inMount(".versions/a.md")]).output.split(separator: "\n").count == 1, "the copy took none of a.md's history")
        // The whole store copied (every item a copy of the one before), then mounted again.
        #expect(mount.unmount())
        let moved = mount.store + ".moved"
        #expect(try MountedStore.run(["cp", "-a", mount.store, moved], timeout: 60).succeeded)
        #expect(try MountedStore.run(["rm", "-rf", mount.store], timeout: 60).succeeded)
        #expect(rename(moved, mount.store) == 0)
        try mount.mount()
        let after = try Self.stat(mount, ["a.md", "b.md"])
        #expect(after.count == 2 && after[0] != after[1], "\(after)")
        #expect(try mount.shell("echo three > a.md").succeeded)
        #expect(try mount.run(["ls", mount.inMount(".versions/a.md")]).output.split(separator: "\n").count == 2, "a.md keeps its history")
        #expect(try mount.run(["ls", mount.inMount(".versions/.docfs")]).output.isEmpty, "nothing among the removed")
    }

    /// The number a save carries is DocFS's own: root on the mount cannot list, read or forge it.
    /// Nor anything else in DocFS's namespace: a name whose byte after `user.docfs.` is a
    /// combining mark was let through, a `String` prefix being a prefix of characters (fails on
    /// bf6f8b7).
    @Test func theCarriedNumberCannotBeSeenOrForgedThroughTheMount() throws {
        let mount = try MountedStore(texts: ["doc.txt": "first\n"])
        defer { mount.unmount() }
        let before = try Self.stat(mount, ["doc.txt"])
        #expect(try mount.shell("printf 'second\\n' > doc.txt").succeeded)
        let listed = try mount.run(["getfattr", "-d", "-m", "-", "doc.txt"])
        #expect(!listed.output.contains("docfs"), "\(listed.output)")
        for name in ["trusted.docfs.identity", "user.docfs.identity", "user.docfs.\u{301}identity"] {
            #expect(!(try mount.run(["getfattr", "-n", name, "doc.txt"])).succeeded)
            let forged = try mount.run(["setfattr", "-n", name, "-v", "0x0100000000000000", "doc.txt"])
            #expect(!forged.succeeded && forged.error.contains("Operation not permitted"), "\(name): \(forged.error)")
        }
        #expect(try Self.stat(mount, ["doc.txt"]) == before)
    }

    private func restic(_ mount: MountedStore, _ arguments: [String]) throws -> MountedStore.Result {
        let repository = mount.root.appendingPathComponent("restic").path
        return try mount.run(["env", "RESTIC_PASSWORD=docfs-test", "RESTIC_CACHE_DIR=\(mount.root.path)/restic-cache", "restic", "--repo", repository] + arguments, timeout: 180)
    }

    /// What `restic backup --json` read again: [changed, new, unmodified] from its summary line,
    /// and the first few files it found modified, to say why when a count is off.
    private func resticBackup(_ mount: MountedStore) throws -> (counts: [Int], modified: [String]) {
        let result = try restic(mount, ["backup", "--json", "--verbose=2", "--host", "docfs-test", mount.mountPoint])
        let lines = result.output.split(separator: "\n").compactMap { line in
            try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        }
        guard result.succeeded, let summary = lines.last(where: { $0["message_type"] as? String == "summary" }) else {
            Issue.record("restic backup failed: \(result.error)")
            return ([], [])
        }
        let modified = lines.filter { $0["action"] as? String == "modified" }.compactMap { $0["item"] as? String }
        return (["files_changed", "files_new", "files_unmodified"].map { summary[$0] as? Int ?? -1 }, Array(modified.prefix(5)))
    }

    @Test func resticReadsNothingAgainAfterARemountOrDropCaches() throws {
        let mount = try MountedStore(texts: Self.tree)
        defer { mount.unmount() }
        #expect(try restic(mount, ["init"]).succeeded)
        var backup = try resticBackup(mount)
        #expect(backup.counts == [0, 2000, 0])
        try mount.remount()
        backup = try resticBackup(mount)
        #expect(backup.counts == [0, 0, 2000], "after a remount, modified: \(backup.modified)")
        try Self.dropCaches()
        backup = try resticBackup(mount)
        #expect(backup.counts == [0, 0, 2000], "after drop_caches, modified: \(backup.modified)")
        try mount.shell("echo saved >> folder3/note3.txt")
        backup = try resticBackup(mount)
        #expect(backup.counts == [1, 0, 1999], "after one save, modified: \(backup.modified)")
    }

    @Test func borgFindsNothingModifiedAfterARemount() throws {
        let mount = try MountedStore(texts: Self.tree)
        defer { mount.unmount() }
        let repository = mount.root.appendingPathComponent("borg").path
        let environment = [
            "env", "BORG_BASE_DIR=\(mount.root.path)/borg-home", "BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK=yes",
            "BORG_RELOCATED_REPO_ACCESS_IS_OK=yes",
        ]
        #expect(try mount.run(environment + ["borg", "init", "--encryption=none", repository]).succeeded)
        // borg keeps in its files cache only files changed before the newest one it saw (a file
        // changed within the same clock tick might change again unseen): one file newer than the
        // tree, made once the clock has moved on, lets it keep the whole tree.
        let newest = try mount.python("""
            import os
            tree = max(os.lstat(os.path.join(folder, name)).st_ctime_ns for folder, _, names in os.walk(".") for name in names)
            while True:
                with open("newest.txt", "w") as f: f.write("newest\\n")
                if os.lstat("newest.txt").st_ctime_ns > tree: break
            """)
        #expect(newest.succeeded, "\(newest.error)")
        let first = try mount.run(environment + ["borg", "create", "--list", "--filter=AM", "\(repository)::first", "."], timeout: 180)
        #expect(first.succeeded, "\(first.error)")
        try mount.remount()
        let second = try mount.run(environment + ["borg", "create", "--list", "--filter=AM", "\(repository)::second", "."], timeout: 180)
        #expect(second.succeeded, "\(second.error)")
        let listed = (second.output + second.error).split(separator: "\n").filter { $0.hasPrefix("A ") || $0.hasPrefix("M ") }
        #expect(listed.count == 1 && listed.first == "A newest.txt", "borg read again: \(listed.prefix(5)) (\(listed.count))")
    }

    /// git keeps each file's inode number in its index: numbers that changed make `git diff-files`
    /// (which compares what the index recorded with lstat, without reading content) list them.
    @Test func gitSeesNoChangedFileAfterARemount() throws {
        let mount = try MountedStore(texts: Self.tree)
        defer { mount.unmount() }
        // Files older than the index, so git finds none of them racily clean and rewrites nothing
        // for that reason.
        let setup = try mount.shell("""
            find . -type f -exec touch -d '1 hour ago' {} + && git init -q . && git -c user.name=t -c user.email=t@t add -A && git -c user.name=t -c user.email=t@t commit -qm tree \
            && git update-index --refresh >/dev/null && stat -c %Y.%i .git/index
            """, timeout: 180)
        #expect(setup.succeeded, "\(setup.error)")
        try mount.remount()
        let changed = try mount.run(["git", "diff-files", "--name-only"], timeout: 120)
        #expect(changed.succeeded && changed.output.isEmpty, "git sees as changed: \(changed.output.prefix(300))")
        let index = try mount.shell("git status --porcelain && stat -c %Y.%i .git/index", timeout: 120)
        #expect(index.output == setup.output.split(separator: "\n").last.map { String($0) + "\n" }, "git status rewrote the index: \(index.output)")
    }
}
