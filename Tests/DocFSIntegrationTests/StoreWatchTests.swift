import Foundation
import Glibc
import Testing

/// With default options the kernel caches names, attributes and pages for long; a change made
/// directly in the store still shows through the mount at once, and the kernel's pages of an
/// unchanged document survive a reopen.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct StoreWatchTests {
    /// Polls `check` until it holds; returns the seconds it took, or nil after two seconds.
    private func secondsUntil(_ check: () throws -> Bool) rethrows -> Double? {
        let start = Date()
        while Date().timeIntervalSince(start) < 2 {
            if try check() { return Date().timeIntervalSince(start) }
            usleep(2_000)
        }
        return nil
    }

    @Test func changesMadeInTheStoreShowThroughTheMountAtOnce() throws {
        let mount = try MountedStore(texts: ["doc.txt": "first\n", "sub/old.md": "# old\n", "gone.txt": "bye\n"])
        defer { mount.unmount() }
        // Let the kernel cache everything first, including a name that does not exist yet.
        #expect(try mount.read("doc.txt") == "first\n")
        #expect(try mount.read("sub/old.md") == "# old\n")
        #expect(try mount.read("gone.txt") == "bye\n")
        #expect(try mount.read("new.txt") == nil)
        var latencies: [String: Double] = [:]

        try mount.writeToStore("doc.txt", Data("second, longer\n".utf8))
        latencies["write"] = try secondsUntil { try mount.read("doc.txt") == "second, longer\n" }
        try mount.writeToStore("new.txt", Data("made beside\n".utf8))
        latencies["create"] = try secondsUntil { try mount.read("new.txt") == "made beside\n" }
        #expect(rename(mount.inStore("sub/old.md"), mount.inStore("sub/renamed.md")) == 0)
        latencies["rename"] = try secondsUntil { try mount.read("sub/renamed.md") == "# old\n" && (try mount.read("sub/old.md")) == nil }
        #expect(unlink(mount.inStore("gone.txt")) == 0)
        latencies["remove"] = try secondsUntil { try mount.read("gone.txt") == nil }

        print("external change → visible through the mount: \(latencies.mapValues { String(format: "%.1f ms", $0 * 1000) })")
        for (change, seconds) in latencies { #expect(seconds < 0.1, "\(change) took \(seconds) s") }
        #expect(latencies.count == 4)
        // And the old content is never served again.
        for _ in 0..<20 { #expect(try mount.read("doc.txt") == "second, longer\n") }
        #expect(try mount.run(["ls", "sub"]).output == "renamed.md\n")
    }

    /// Reads of the store's copy of `name` the daemon makes while `body` runs, traced with strace.
    private func storeReads(of name: String, in mount: MountedStore, during body: () throws -> Void) throws -> Int {
        let daemon = try #require(mount.daemon)
        let trace = mount.root.appendingPathComponent("reads-\(UUID().uuidString.prefix(6)).txt").path
        let tracer = try ChildProcess(
            ["strace", "-f", "-y", "-qq", "-p", String(daemon.pid), "-o", trace, "-e", "trace=read,pread64,readv,preadv,preadv2,splice,sendfile,copy_file_range,newfstatat,statx"],
            capture: true)
        defer {
            kill(tracer.pid, SIGINT)
            tracer.wait()
        }
        // strace has attached once it traces a lookup (of a name never asked before: the kernel
        // caches the absence of one it has).
        for attempt in 0..<100 {
            let probe = "strace-attached-\(attempt)"
            _ = try? mount.run(["stat", probe])
            if ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").contains(probe) { break }
            usleep(50_000)
        }
        try body()
        usleep(200_000)
        let lines = ((try? String(contentsOfFile: trace, encoding: .utf8)) ?? "").split(separator: "\n")
        return lines.filter { line in
            !line.contains("stat") && line.contains("/store/\(name)>")
        }.count
    }

    /// Issue 25: a reader half-way through a document keeps reading the version it opened, whole,
    /// when a program replaces the document in the store beside DocFS (a new file renamed over
    /// it); the mount shows the new version once the reader closes. Before, the change's
    /// invalidation cut the reader off at the new, shorter size.
    @Test func aReaderKeepsItsVersionWhileTheStoreReplacesTheDocument() throws {
        var old = [UInt8]()
        while old.count < 8 << 20 { old += Array("a line of the old version, read while it is replaced\n".utf8) }
        let mount = try MountedStore(files: ["big.txt": Data(old)])
        defer { mount.unmount() }
        let reader = try StepReader(mount.inMount("big.txt"))
        reader.read(upTo: 1 << 20)
        try mount.writeToStore("big.txt.new", Data("new\n".utf8))
        #expect(rename(mount.inStore("big.txt.new"), mount.inStore("big.txt")) == 0)
        // The change has reached the mount once a new opener reads the new version.
        #expect(try secondsUntil { try mount.read("big.txt") == "new\n" } != nil)
        reader.read(upTo: .max)
        #expect(reader.bytes.count == old.count, "the reader got \(reader.bytes.count) of \(old.count) bytes")
        #expect(reader.read(exactly: old), "the bytes are the version it opened")
        reader.close()
        var status = stat()
        #expect(secondsUntil { stat(mount.inMount("big.txt"), &status) == 0 && status.st_size == 4 } != nil, "then stat shows the new version")
    }

    @Test func aPatchWrittenAfterAChangeBesideTheMountLandsOnTheStoredVersion() throws {
        let mount = try MountedStore(texts: ["doc.txt": String(repeating: "a", count: 100) + "\n"])
        defer { mount.unmount() }
        let ready = mount.root.appendingPathComponent("ready").path
        let done = mount.root.appendingPathComponent("done").path
        // A reader holding a lock keeps its inode and version (the name cannot move off it).
        let reader = try ChildProcess(["timeout", "60", "python3", "-c", """
            import fcntl, os, sys, time
            f = open(sys.argv[1], 'rb'); fcntl.flock(f, fcntl.LOCK_SH); f.read()
            open(sys.argv[2], 'w').close()
            while not os.path.exists(sys.argv[3]): time.sleep(0.01)
            """, mount.inMount("doc.txt"), ready, done], capture: true)
        defer { _ = FileManager.default.createFile(atPath: done, contents: nil); reader.wait() }
        #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: ready) })
        let stored = String(repeating: "b", count: 100) + "\n"
        try mount.writeToStore("doc.txt.new", Data(stored.utf8))
        var times = [timespec(tv_sec: 946_684_800, tv_nsec: 0), timespec(tv_sec: 946_684_800, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, mount.inStore("doc.txt.new"), &times, 0) == 0)
        #expect(rename(mount.inStore("doc.txt.new"), mount.inStore("doc.txt")) == 0)
        // Seen by the mount (its time), with no open that would bring the new version in.
        var status = stat()
        #expect(secondsUntil { stat(mount.inMount("doc.txt"), &status) == 0 && status.st_mtim.tv_sec == 946_684_800 } != nil)
        // A writer that does not read patches the stored version, not the one the reader holds.
        let patch = try mount.shell("printf XY | dd of=doc.txt bs=1 seek=10 conv=notrunc status=none")
        #expect(patch.succeeded, "\(patch.error)")
        #expect(mount.storeContents("doc.txt") == "bbbbbbbbbbXY" + String(repeating: "b", count: 88) + "\n")
    }

    @Test func theKernelKeepsAnUnchangedDocumentsPagesAcrossAReopen() throws {
        let text = String(repeating: "cached line\n", count: 20_000)
        let mount = try MountedStore(texts: ["doc.txt": text])
        defer { mount.unmount() }
        #expect(try mount.read("doc.txt") == text)
        // Other suites drop the machine's page cache (`/proc/sys/vm/drop_caches`) at any moment: a
        // reopen after one reads the store once, and the next is served from the pages it filled.
        var reopenedText: String?
        let reopened = MountedStore.waitUntil {
            (try? storeReads(of: "doc.txt", in: mount) { reopenedText = try mount.read("doc.txt") }) == 0
        }
        #expect(reopenedText == text)
        #expect(reopened, "a reopen of an unchanged document is served from the kernel's pages")

        // A commit through the mount drops them.
        #expect(try mount.shell("echo appended >> doc.txt").succeeded)
        var afterCommitText: String?
        let afterCommit = try storeReads(of: "doc.txt", in: mount) { afterCommitText = try mount.read("doc.txt") }
        #expect(afterCommitText == text + "appended\n")
        #expect(afterCommit > 0, "after a commit the new version is read from the store")
        // The writer's RELEASE reaches the daemon after its close returns, and until it has, readers
        // read directly: a read after it fills the cache, and the next is served from it.
        var againText: String?
        let cachedAgain = MountedStore.waitUntil {
            _ = try? mount.read("doc.txt")
            return (try? storeReads(of: "doc.txt", in: mount) { againText = try mount.read("doc.txt") }) == 0
        }
        #expect(againText == text + "appended\n")
        #expect(cachedAgain, "and then cached again")

        try mount.writeToStore("doc.txt", Data("changed beside DocFS\n".utf8))
        usleep(100_000)
        var afterExternalText: String?
        let afterExternal = try storeReads(of: "doc.txt", in: mount) { afterExternalText = try mount.read("doc.txt") }
        #expect(afterExternalText == "changed beside DocFS\n")
        #expect(afterExternal > 0, "after a change in the store the kernel's pages are dropped")
    }
    /// Issue 35, identity: a document open for writing through the mount and renamed beside it (by
    /// another program, in the store) takes the writes along, as a file open on a local file
    /// system does: its inode is the item's, found again by the item's number at the new name.
    /// Before, the write-back and truncation went to the old name (the truncation failed with
    /// ENOENT, the close made a new document there, 0600) and the renamed one kept the old bytes.
    /// Twice: followed at the kernel's lookup of the new name, and by the store's watch alone.
    @Test func aDocumentRenamedBesideTheMountWhileOpenTakesItsWritesAlong() throws {
        let mount = try MountedStore(texts: ["doc.json": #"{"a": 1}"#, "other.json": #"{"b": 1}"#, "f/in.json": #"{"c": 1}"#])
        defer { mount.unmount() }
        /// Opens `path` through the mount, renames `from` to `to` in the store, and returns the
        /// descriptor once `arrived` holds.
        func openThenRename(_ path: String, flags: Int32 = O_RDWR, _ from: String, _ to: String, until arrived: () -> Bool) -> Int32 {
            let descriptor = open(mount.inMount(path), flags)
            #expect(descriptor >= 0)
            #expect(rename(mount.inStore(from), mount.inStore(to)) == 0)
            let inTime = MountedStore.waitUntil(arrived)
            #expect(inTime, "\(mount.log)")
            return descriptor
        }
        func followed(_ from: String, _ to: String) -> () -> Bool { { mount.log.contains("\(from) was renamed to \(to) beside DocFS") } }
        /// Writes `text` over the file open as `descriptor`, truncates it there and closes it.
        func writeThrough(_ descriptor: Int32, _ text: String) {
            let written = text.withCString { pwrite(descriptor, $0, strlen($0), 0) }
            let truncated = ftruncate(descriptor, off_t(text.utf8.count)) == 0 ? 0 : errno
            let closed = close(descriptor) == 0 ? 0 : errno
            #expect(written == text.utf8.count && truncated == 0 && closed == 0, "wrote \(written), truncate errno \(truncated), close errno \(closed)")
        }

        // Looked up at the new name first (ls, stat: the kernel asks for it).
        writeThrough(openThenRename("doc.json", "doc.json", "moved.json") { (try? mount.read("moved.json")) == #"{"a": 1}"# }, #"{"a": 2}"#)
        #expect(mount.storeContents("moved.json") == #"{"a": 2}"#)
        #expect(!FileManager.default.fileExists(atPath: mount.inStore("doc.json")), "the write made a new document at the old name")

        // Followed by the watch alone: nothing looks the new name up before the write.
        writeThrough(openThenRename("other.json", "other.json", "renamed.json", until: followed("other.json", "renamed.json")), #"{"b": 2}"#)
        #expect(mount.storeContents("renamed.json") == #"{"b": 2}"#)
        #expect(!FileManager.default.fileExists(atPath: mount.inStore("other.json")))
        #expect(try mount.read("renamed.json") == #"{"b": 2}"#)
        #expect(try mount.read("other.json") == nil)

        // A name another file takes is that file's: a writer of the old one never lands in it.
        let third = openThenRename("f/in.json", "f/in.json", "f/kept.json") { true }
        try mount.writeToStore("f/in.json", Data(#"{"stranger": true}"#.utf8))
        #expect(MountedStore.waitUntil { (try? mount.read("f/kept.json")) == #"{"c": 1}"# && (try? mount.read("f/in.json")) == #"{"stranger": true}"# })
        writeThrough(third, #"{"c": 2}"#)
        #expect(mount.storeContents("f/kept.json") == #"{"c": 2}"#)
        #expect(mount.storeContents("f/in.json") == #"{"stranger": true}"#)

        // A folder made through the mount, renamed beside it: what is open below it follows it.
        #expect(try mount.shell(#"mkdir made && printf '{"d": 1}' > made/deep.json"#).succeeded)
        writeThrough(openThenRename("made/deep.json", "made", "elsewhere", until: followed("made", "elsewhere")), #"{"d": 2}"#)
        #expect(mount.storeContents("elsewhere/deep.json") == #"{"d": 2}"#)
        #expect(!FileManager.default.fileExists(atPath: mount.inStore("made")), "the write made the folder again")

        // A document made through the mount, open only for writing (no file held to compare): its
        // fresh number is what its handle opened, and the open file shows the number of the name it
        // is at now.
        #expect(try mount.shell(#"printf '{"e": 1}' > own.json"#).succeeded)
        let fifth = openThenRename("own.json", flags: O_WRONLY, "own.json", "own-moved.json", until: followed("own.json", "own-moved.json"))
        var held = stat(), named = stat()
        #expect(fstat(fifth, &held) == 0 && stat(mount.inMount("own-moved.json"), &named) == 0 && held.st_ino == named.st_ino)
        writeThrough(fifth, #"{"e": 2}"#)
        #expect(mount.storeContents("own-moved.json") == #"{"e": 2}"#)
        #expect(!FileManager.default.fileExists(atPath: mount.inStore("own.json")))
    }

    /// What a writer's handle follows is its own item, never a number a name happens to show: a
    /// document with a second name (a hard link), whose second name a stranger's file takes beside
    /// the mount and is then looked up and renamed, keeps its writer at its own name. (A record
    /// that took the number of whatever its names showed followed the stranger's file there.)
    @Test func aWriterNeverFollowsAnotherFilesNumber() throws {
        let mount = try MountedStore(texts: [:])
        defer { mount.unmount() }
        #expect(try mount.shell(#"printf '{"mine": 1}' > a.json && ln a.json b.json && printf '{"stranger": 1}' > stranger.json"#).succeeded)
        let writer = open(mount.inMount("a.json"), O_RDWR)
        #expect(writer >= 0)
        #expect(rename(mount.inStore("stranger.json"), mount.inStore("b.json")) == 0)
        #expect(MountedStore.waitUntil { (try? mount.read("b.json")) == #"{"stranger": 1}"# })
        #expect(rename(mount.inStore("b.json"), mount.inStore("z.json")) == 0)
        #expect(MountedStore.waitUntil { (try? mount.read("z.json")) == #"{"stranger": 1}"# && (try? mount.read("b.json")) == nil })
        let text = #"{"mine": 2}"#
        #expect(text.withCString { pwrite(writer, $0, strlen($0), 0) } == text.utf8.count)
        #expect(ftruncate(writer, off_t(text.utf8.count)) == 0)
        #expect(close(writer) == 0)
        #expect(mount.storeContents("a.json") == text)
        #expect(mount.storeContents("z.json") == #"{"stranger": 1}"#, "the writer landed in the stranger's file")

        // A save through one name of a linked document makes that name a file of its own (its
        // other names keep the old file): the other name shows, and takes writes into, its own.
        #expect(try mount.shell(#"printf '{"v": 1}' > c.json && ln c.json d.json && printf '{"v": 2}' > c.json"#).succeeded)
        #expect(mount.storeContents("d.json") == #"{"v": 1}"#)
        #expect(try mount.read("d.json") == #"{"v": 1}"#)
        #expect(try mount.shell(#"printf '{"v": 3}' > d.json"#).succeeded)
        #expect(mount.storeContents("d.json") == #"{"v": 3}"#)
        #expect(mount.storeContents("c.json") == #"{"v": 2}"#, "a write through the other name landed in the saved one")
        #expect(try mount.read("c.json") == #"{"v": 2}"#)
    }
}
