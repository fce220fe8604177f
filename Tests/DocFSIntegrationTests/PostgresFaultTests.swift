import Foundation
import Glibc
import Testing

/// A shared store whose database fails under it: a connection cut during a save, an answer lost at
/// COMMIT, a server stopped, a table locked by another client, another mount committing while this
/// one opens. Every answer a program gets must be true, and cached reads must never wait.
@Suite(.serialized, .timeLimit(.minutes(10)))
final class PostgresFaultTests {
    let cluster: PostgresCluster
    let location: String

    init() throws {
        cluster = try PostgresCluster()
        location = cluster.location(store: "faults")
    }

    private func contents(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    private func rows(named name: String) -> String {
        (try? cluster.query("SELECT count(*) FROM docfs_items WHERE name = convert_to('\(name)', 'UTF8')")) ?? "?"
    }

    /// A Python script that saves argv[2] (hex) to argv[1] in one open-write-close and prints "ok"
    /// or the failing call's errno name, started now and left running.
    private func startSave(_ path: String, _ text: String) throws -> ChildProcess {
        let hex = Data(text.utf8).map { String(format: "%02x", $0) }.joined()
        return try ChildProcess(["timeout", "120", "python3", "-c", """
            import errno, sys
            try:
                f = open(sys.argv[1], 'wb'); f.write(bytes.fromhex(sys.argv[2])); f.close(); print('ok')
            except OSError as e:
                print(errno.errorcode.get(e.errno, e.errno))
            """, path, hex], capture: true)
    }

    private func outcome(of save: ChildProcess) -> String {
        save.wait()
        return String(decoding: save.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func aConnectionCutDuringAnUploadIsAnsweredWithWhatWasCommitted() throws {
        let first = try MountedStore(postgres: location)
        let second = try MountedStore(postgres: location)
        defer { first.unmount(); second.unmount() }
        let source = first.root.appendingPathComponent("source.bin").path
        #expect(try MountedStore.run(["sh", "-c", "head -c 209715200 /dev/urandom > \(source)"], timeout: 60).succeeded)
        let copy = try ChildProcess(["timeout", "150", "python3", "-c", """
            import errno, shutil, sys
            try:
                with open(sys.argv[1], 'rb') as src, open(sys.argv[2], 'wb') as dst: shutil.copyfileobj(src, dst, 1 << 20)
                print('ok')
            except OSError as e:
                print(errno.errorcode.get(e.errno, e.errno))
            """, source, first.inMount("big.bin")], capture: true)
        // The save's transaction, caught sending its chunks, is ended by another client.
        let cut = MountedStore.waitUntil {
            let ended = try? cluster.query("""
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE application_name = 'docfs' AND state <> 'idle' AND query LIKE '%docfs_chunks%'
                """)
            return ended.flatMap { Int($0) } ?? 0 > 0
        }
        #expect(cut, "the upload was never seen")
        // The answer is the truth: saved (the change was tried again on a new connection), and
        // exactly once; an EIO here with the file committed later was the bug.
        #expect(outcome(of: copy) == "ok", "\(String(decoding: copy.error, as: UTF8.self))\n\(first.log)")
        #expect(rows(named: "big.bin") == "1")
        #expect(MountedStore.waitUntil { (try? MountedStore.run(["cmp", source, second.inMount("big.bin")], timeout: 60).succeeded) == true })
        #expect(first.log.contains("waiting for a primary"), "\(first.log)")
    }

    @Test func aCommitWhoseAnswerIsLostIsFoundCommittedBeforeTheProgramIsAnswered() throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let first = try MountedStore(postgres: location, launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        let second = try MountedStore(postgres: location)
        defer { first.unmount(); second.unmount() }
        #expect(try first.save("doc.json", Data("[1]".utf8)) == "ok")
        _ = FileManager.default.createFile(atPath: hooks + "/commit-answer-lost", contents: nil)
        #expect(try first.save("doc.json", Data("[2]".utf8)) == "ok", "\(first.log)")
        #expect(FileManager.default.fileExists(atPath: hooks + "/commit-answer-lost.reached"))
        #expect(first.log.contains("the change had committed"), "\(first.log)")
        #expect(contents(first.inMount("doc.json")) == "[2]")
        #expect(MountedStore.waitUntil { contents(second.inMount("doc.json")) == "[2]" })
        // Committed once: the next save is based on it and is not refused as a conflict.
        #expect(try first.save("doc.json", Data("[3]".utf8)) == "ok")
        #expect(first.quarantined.isEmpty, "\(first.quarantined)")
        // The version [2]'s save kept went with its COMMIT (issue 37), and its answer was lost with
        // the COMMIT's: kept in the database all the same, and fetched into the mirror by the feed.
        func versions() -> [String] {
            let folder = first.inMount(".versions/doc.json")
            return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted().map { contents(folder + "/" + $0) ?? "" }
        }
        #expect(MountedStore.waitUntil { versions() == ["[1]", "[2]"] }, "\(versions())")
        // The same for a first save over an empty file, whose check and change go with the COMMIT
        // (issue 37): the row is read again once found committed, and the next save builds on it.
        #expect(try first.shell(": > new.json").succeeded)
        try FileManager.default.removeItem(atPath: hooks + "/commit-answer-lost.reached")
        _ = FileManager.default.createFile(atPath: hooks + "/commit-answer-lost", contents: nil)
        #expect(try first.save("new.json", Data("[1]".utf8)) == "ok", "\(first.log)")
        #expect(FileManager.default.fileExists(atPath: hooks + "/commit-answer-lost.reached"))
        #expect(MountedStore.waitUntil { contents(second.inMount("new.json")) == "[1]" })
        #expect(try first.save("new.json", Data("[2]".utf8)) == "ok")
        #expect(first.quarantined.isEmpty, "\(first.quarantined)")
        #expect(MountedStore.waitUntil { contents(second.inMount("new.json")) == "[2]" })
    }

    /// The same for a create: the file the program is told it made exists, once, on every mount.
    /// (Before, an `open(O_CREAT)` answered EIO while its create had committed.)
    @Test func aCreateWhoseAnswerIsLostIsAnsweredAsCommitted() throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let first = try MountedStore(postgres: location, launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        let second = try MountedStore(postgres: location)
        defer { first.unmount(); second.unmount() }
        #expect(FileManager.default.createFile(atPath: hooks + "/commit-answer-lost", contents: nil))
        let created = try first.python("import os; os.close(os.open('made.json', os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)); print('ok')")
        #expect(created.output == "ok\n", "\(created.error)\n\(first.log)")
        #expect(FileManager.default.fileExists(atPath: hooks + "/commit-answer-lost.reached"))
        #expect(rows(named: "made.json") == "1")
        #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: second.inMount("made.json")) })
        #expect(try first.save("made.json", Data("[1]".utf8)) == "ok")
        #expect(MountedStore.waitUntil { contents(second.inMount("made.json")) == "[1]" })
    }

    @Test func aConnectionCutJustBeforeCommitIsTriedAgainAndCommittedOnce() throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let first = try MountedStore(postgres: location, launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        defer { first.unmount() }
        #expect(try first.save("doc.json", Data("[1]".utf8)) == "ok")
        _ = FileManager.default.createFile(atPath: hooks + "/commit-before-send", contents: nil)
        let save = try startSave(first.inMount("doc.json"), "[2]")
        #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: hooks + "/commit-before-send.reached") })
        _ = try cluster.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'docfs' AND state = 'idle in transaction'")
        try FileManager.default.removeItem(atPath: hooks + "/commit-before-send.reached")
        #expect(outcome(of: save) == "ok", "\(first.log)")
        #expect(first.log.contains("the change had not committed"), "\(first.log)")
        #expect(contents(first.inMount("doc.json")) == "[2]")
        #expect(rows(named: "doc.json") == "1")
        let third = try MountedStore(postgres: location)
        defer { third.unmount() }
        #expect(contents(third.inMount("doc.json")) == "[2]")
    }

    /// Reads cached documents, stats them and lists the mount for `seconds`, in a child process (a
    /// read that hangs must not keep the test from ending the fault); prints the slowest call (a
    /// `cat`, a `stat` or an `ls`), in ms.
    private func startCachedReads(_ mount: MountedStore, names: [String], for seconds: Int) throws -> ChildProcess {
        try ChildProcess(["timeout", "-s", "KILL", String(seconds + 20), "python3", "-c", """
            import os, sys, time
            folder, seconds, names = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
            times, end = [], time.monotonic() + seconds
            def timed(call):
                start = time.monotonic()
                call()
                times.append((time.monotonic() - start) * 1000)
            def cat(path):
                with open(path, 'rb') as f: f.read()
            while time.monotonic() < end:
                for name in names:
                    path = os.path.join(folder, name)
                    timed(lambda: cat(path))
                    timed(lambda: os.stat(path))
                    timed(lambda: os.listdir(folder))
            times.sort()
            print(f"{times[len(times) // 2]:.1f} {times[-1]:.1f} {len(times)}")
            """, mount.inMount(""), String(seconds)] + names, capture: true)
    }

    /// The cached `cat`, `stat` and `ls` calls `startCachedReads` made: their median and slowest
    /// time in ms, and how many there were.
    struct ReadTimes: CustomStringConvertible {
        var median = Double.infinity, slowest = Double.infinity, calls = 0
        var description: String { "\(calls) calls, median \(median) ms, slowest \(slowest) ms" }
    }

    /// The times of `reads`; infinite when they did not end in time (a read held behind a lock the
    /// kernel cannot interrupt: the fault must end for it to return).
    private func times(of reads: ChildProcess, within seconds: Double) -> ReadTimes {
        guard reads.wait(seconds: seconds) else { return ReadTimes() }
        reads.wait()
        let figures = String(decoding: reads.output, as: UTF8.self).split(separator: " ").map { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard figures.count == 3, let median = figures[0], let slowest = figures[1], let calls = figures[2] else { return ReadTimes() }
        return ReadTimes(median: median, slowest: slowest, calls: Int(calls))
    }

    /// Issue 40's bound: cached reads take under 100 ms while a change waits. Each test holds what
    /// a read must not wait for as long as the reads run (4 s or more), so a read that waited takes
    /// seconds: none may take 1 s, and their median stays under 100 ms. A single call above 100 ms
    /// is the machine's, not DocFS's: CI runs the 32-writer load test beside these, and one call
    /// took 102 ms there (256 runs without it never passed 26.4 ms).
    private func expectNoWait(_ times: ReadTimes, while what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        print("cached cat, stat and ls \(what): \(times)")
        #expect(times.calls > 0 && times.slowest < 1000 && times.median < 100, "a cached read waited \(what): \(times)", sourceLocation: sourceLocation)
    }

    /// The eviction tests' second half. A request holds at `heldAt`, having fetched `far/doc.json`
    /// (`size` bytes) into a 1 MB cache. Everything else is used after it, `filler.bin` last (700 KB
    /// more than the cache holds with it), until its content leaves the mirror (eviction gives way
    /// to a mirror busy for long, so the reads are made again until it ran). The request then goes
    /// on and its download is held, while a rename waits and `names` are read: the slowest of those
    /// reads in ms, and the rename.
    private func cachedReadsWhileAnEvictedFetchIsHeld(
        _ mount: MountedStore, hooks: String, heldAt point: String, size: Int, names: [String]
    ) throws -> (times: ReadTimes, rename: ChildProcess) {
        func evicted() -> Bool {
            for name in names + ["during.json", "moving/a.json", "filler.bin"] where FileManager.default.contents(atPath: mount.inMount(name)) == nil {
                return false
            }
            var status = stat()
            return stat(mount.inStore("far/doc.json"), &status) == 0 && status.st_size == size && status.st_blocks == 0
        }
        #expect(MountedStore.waitUntil(evicted), "its content left the mirror")
        #expect(FileManager.default.createFile(atPath: hooks + "/fetch-before-download", contents: nil))
        MountedStore.ReachedHook(hooks, point).release()
        #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: hooks + "/fetch-before-download.reached") })
        let download = MountedStore.ReachedHook(hooks, "fetch-before-download")
        defer { download.release() }
        let rename = try ChildProcess(["timeout", "60", "mv", mount.inMount("moving/a.json"), mount.inMount("moving/renamed.json")], capture: true)
        return (times(of: try startCachedReads(mount, names: names, for: 4), within: 15), rename)
    }

    /// Saves three documents to read from the mirror, and `during.json` to save over during a fault.
    /// (A file created during a fault holds its folder's listing while it waits: the kernel locks a
    /// folder for a create.)
    private func saveCachedDocuments(_ mount: MountedStore) throws -> [String] {
        #expect(try mount.save("during.json", Data("[0]".utf8)) == "ok")
        let names = (0..<3).map { "cached-\($0).json" }
        for name in names {
            #expect(try mount.save(name, Data("[\"\(name)\"]".utf8)) == "ok")
            #expect(contents(mount.inMount(name)) == "[\"\(name)\"]")
        }
        return names
    }

    /// A save whose close was answered EIO because no primary came within --primary-wait is never
    /// stored afterwards: before, the last release committed the stage again, and a server back by
    /// then took the save the program had been told failed. Its bytes are in the quarantine.
    @Test func aSaveAnsweredEIOIsNeverCommittedLater() throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let mount = try MountedStore(postgres: location, arguments: ["--primary-wait", "1"], launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        defer { mount.unmount() }
        #expect(try mount.save("late.json", Data("[1]".utf8)) == "ok")
        cluster.stop(mode: "fast")
        #expect(FileManager.default.createFile(atPath: hooks + "/release-before-settle", contents: nil))
        #expect(try mount.save("late.json", Data("[2]".utf8)) == "EIO")
        // The release waits at the hook while the server comes back.
        #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: hooks + "/release-before-settle.reached") })
        try cluster.start()
        try FileManager.default.removeItem(atPath: hooks + "/release-before-settle.reached")
        #expect(MountedStore.waitUntil { mount.quarantined.count == 1 }, "the refused save's bytes are kept")
        #expect(mount.quarantined.first.flatMap { mount.storeContents(".docfs/quarantine/" + $0) } == "[2]")
        #expect(try cluster.query("SELECT size FROM docfs_items WHERE name = convert_to('late.json', 'UTF8')") == "3")
        #expect(contents(mount.inMount("late.json")) == "[1]")
        let other = try MountedStore(postgres: location)
        defer { other.unmount() }
        #expect(contents(other.inMount("late.json")) == "[1]")
    }

    @Test func aStoppedServerHoldsNoCachedReadAndSavesWaitForIt() throws {
        let mount = try MountedStore(postgres: location)
        defer { mount.unmount() }
        let names = try saveCachedDocuments(mount)
        let server = try stopServer()
        let save = try startSave(mount.inMount("during.json"), "[\"saved while stopped\"]")
        // The server stays stopped for as long as the reads go on: 10 seconds.
        let reads = try startCachedReads(mount, names: names, for: 10)
        let readTimes = times(of: reads, within: 15)
        for pid in server { kill(pid, SIGCONT) }
        reads.wait()
        expectNoWait(readTimes, while: "with the server stopped for 10 s")
        #expect(outcome(of: save) == "ok", "\(mount.log)")
        #expect(rows(named: "during.json") == "1")
        #expect(contents(mount.inMount("during.json")) == "[\"saved while stopped\"]")
        #expect(mount.quarantined.isEmpty, "\(mount.quarantined)")
    }

    @Test func aTableLockedByAnotherClientHoldsNoCachedReadAndSavesWaitForIt() throws {
        let mount = try MountedStore(postgres: location)
        defer { mount.unmount() }
        let names = try saveCachedDocuments(mount)
        guard let binaries = PostgresCluster.binaries else { return }
        let locker = try ChildProcess([
            "timeout", "60", binaries + "/psql", "-h", "127.0.0.1", "-p", String(cluster.port), "-U", "docfs", "-d", "docfs", "-c",
            "BEGIN; LOCK TABLE docfs_changes IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(10); COMMIT;",
        ], capture: true)
        #expect(MountedStore.waitUntil {
            (try? cluster.query("SELECT count(*) FROM pg_locks WHERE relation = 'docfs_changes'::regclass AND mode = 'AccessExclusiveLock' AND granted")) == "1"
        })
        let save = try startSave(mount.inMount("during.json"), "[\"saved while locked\"]")
        let readTimes = times(of: try startCachedReads(mount, names: names, for: 9), within: 30)
        locker.wait()
        expectNoWait(readTimes, while: "with docfs_changes locked for 10 s")
        #expect(outcome(of: save) == "ok", "\(mount.log)")
        #expect(contents(mount.inMount("during.json")) == "[\"saved while locked\"]")
    }

    @Test func aRenameWaitingForAPrimaryHoldsNoLookup() throws {
        let mount = try MountedStore(postgres: location)
        defer { mount.unmount() }
        let names = try saveCachedDocuments(mount)
        #expect(try mount.shell("mkdir moving && echo '[0]' > moving/during.json").succeeded)
        cluster.stop(mode: "fast")
        // A rename waits for the database holding nothing a lookup needs; its change shows once
        // committed. (The kernel itself holds the rename's folder meanwhile, so the reads are in
        // another one.)
        let rename = try ChildProcess(["timeout", "60", "mv", mount.inMount("moving/during.json"), mount.inMount("moving/renamed.json")], capture: true)
        #expect(MountedStore.waitUntil { mount.log.contains("waiting for a primary") })
        let readTimes = times(of: try startCachedReads(mount, names: names, for: 5), within: 20)
        try cluster.start()
        expectNoWait(readTimes, while: "while a rename waited for the database")
        #expect(rename.wait() == 0, "\(String(decoding: rename.error, as: UTF8.self))\n\(mount.log.suffix(1500))")
        #expect(contents(mount.inMount("moving/renamed.json")) == "[0]\n")
        #expect(rows(named: "renamed.json") == "1" && rows(named: "during.json") == "1", "the rename, and the cached documents' during.json")
    }

    /// Creates `path` (with O_EXCL if `exclusive`) in a process of its own, which prints `ok` or the
    /// errno's name.
    private func startCreate(_ path: String, exclusive: Bool) throws -> ChildProcess {
        let flags = "os.O_CREAT | os.O_WRONLY" + (exclusive ? " | os.O_EXCL" : "")
        return try ChildProcess(["timeout", "60", "python3", "-c", """
            import errno, os, sys
            try:
                os.close(os.open(sys.argv[1], \(flags), 0o644)); print('ok')
            except OSError as e:
                print(errno.errorcode.get(e.errno, str(e.errno)))
            """, path], capture: true)
    }

    /// Stops the server's processes; returns them, for `SIGCONT`.
    private func stopServer() throws -> [pid_t] {
        let postmaster = try #require(contents(cluster.directory + "/data/postmaster.pid")?.split(separator: "\n").first.flatMap { pid_t($0) })
        let children = try MountedStore.run(["pgrep", "-P", String(postmaster)], timeout: 10).output.split(separator: "\n").compactMap { pid_t($0) }
        let server = [postmaster] + children
        for pid in server { kill(pid, SIGSTOP) }
        return server
    }

    /// Issue 40: a rename held the namespace, which every lookup needs, across its transaction, so a
    /// server that stopped answering held `stat`, `ls` and `cat` of cached files in every folder for
    /// as long as it was stopped (the reads here never ended on 6b33abc). The rename is held at
    /// its COMMIT (a test hook) while the server is stopped, and a removal waits behind it.
    @Test func aStoppedServerHoldsNoLookupWhileARenameAndARemovalWait() throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let mount = try MountedStore(postgres: location, launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        defer { mount.unmount() }
        let names = try saveCachedDocuments(mount)
        #expect(try mount.shell("mkdir moving removing && echo '[1]' > moving/a.json && echo '[2]' > removing/b.json").succeeded)
        #expect(FileManager.default.createFile(atPath: hooks + "/commit-before-send", contents: nil))
        let rename = try ChildProcess(["timeout", "60", "mv", mount.inMount("moving/a.json"), mount.inMount("moving/renamed.json")], capture: true)
        #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: hooks + "/commit-before-send.reached") })
        let server = try stopServer()
        // The rename sends its COMMIT to the stopped server; the removal waits for the rename.
        try FileManager.default.removeItem(atPath: hooks + "/commit-before-send.reached")
        let removal = try ChildProcess(["timeout", "60", "rm", mount.inMount("removing/b.json")], capture: true)
        let readTimes = times(of: try startCachedReads(mount, names: names, for: 6), within: 15)
        for pid in server { kill(pid, SIGCONT) }
        expectNoWait(readTimes, while: "while a rename and a removal waited on a stopped server")
        #expect(rename.wait() == 0, "\(String(decoding: rename.error, as: UTF8.self))\n\(mount.log.suffix(1500))")
        #expect(removal.wait() == 0, "\(String(decoding: removal.error, as: UTF8.self))")
        #expect(contents(mount.inMount("moving/renamed.json")) == "[1]\n")
        #expect(!FileManager.default.fileExists(atPath: mount.inMount("removing/b.json")))
        #expect(rows(named: "renamed.json") == "1" && rows(named: "a.json") == "0" && rows(named: "b.json") == "0")
    }

    /// Review of issue 37's pipelining: a create sends its mark with its COMMIT, so when the answer
    /// is lost the server may not have run the mark yet (the bytes still on their way: here its
    /// session is stopped). Finding no mark then meant "not committed", the create was made again,
    /// and the first pipeline, run later, committed too: the program got EEXIST for its own
    /// create. Now finding no mark claims it, and the late pipeline commits nothing.
    @Test func aCreateWhoseAnswerIsLostBeforeTheServerReadItCommitsOnce() throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let mount = try MountedStore(postgres: location, launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        defer { mount.unmount() }
        #expect(try mount.save("warm.json", Data("[0]".utf8)) == "ok")
        // The mount's sessions, stopped: what they are sent waits unread.
        let sessions = try cluster.query("SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
            .split(separator: "\n").compactMap { pid_t($0) }
        #expect(!sessions.isEmpty)
        for pid in sessions { kill(pid, SIGSTOP) }
        var stopped = true
        defer { if stopped { for pid in sessions { kill(pid, SIGCONT) } } }
        #expect(FileManager.default.createFile(atPath: hooks + "/commit-answer-lost", contents: nil))
        let create = try startCreate(mount.inMount("made.txt"), exclusive: true)
        #expect(MountedStore.waitUntil(seconds: 40) { mount.log.contains("had not committed") || mount.log.contains("had committed") }, "\(mount.log.suffix(1500))")
        for pid in sessions { kill(pid, SIGCONT) }
        stopped = false
        #expect(create.wait() == 0)
        #expect(String(decoding: create.output, as: UTF8.self) == "ok\n", "\(mount.log.suffix(2000))")
        #expect(rows(named: "made.txt") == "1")
    }

    /// Issue 37: a create's INSERT now goes with its COMMIT, in one round trip, so a name another
    /// mount took while it was under way is a unique violation at COMMIT: answered EEXIST under
    /// O_EXCL, and without it the program opens the file the other mount made, as on one disk.
    /// The other mount's create is held at its COMMIT (a test hook) until this one waits on its row.
    @Test func aCreateOfANameAnotherMountIsCommittingIsAnsweredAsOnOneDisk() throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let held = try MountedStore(postgres: location, launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        let other = try MountedStore(postgres: location)
        defer { held.unmount(); other.unmount() }
        for (name, exclusive, expected) in [("excl.txt", true, "EEXIST"), ("plain.txt", false, "ok")] {
            #expect(FileManager.default.createFile(atPath: hooks + "/commit-before-send", contents: nil))
            let first = try ChildProcess(["timeout", "60", "sh", "-c", ": > \"$1\"", "sh", held.inMount(name)], capture: true)
            #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: hooks + "/commit-before-send.reached") })
            let commit = MountedStore.ReachedHook(hooks, "commit-before-send")
            defer { commit.release() }
            let second = try startCreate(other.inMount(name), exclusive: exclusive)
            // The other mount's INSERT waits for the held one's row.
            #expect(MountedStore.waitUntil { (try? cluster.query("SELECT count(*) FROM pg_locks WHERE NOT granted")) == "1" })
            commit.release()
            #expect(first.wait() == 0)
            #expect(second.wait() == 0)
            #expect(String(decoding: second.output, as: UTF8.self) == expected + "\n", "\(name): \(other.log.suffix(1500))")
            #expect(rows(named: name) == "1")
            #expect(!other.log.contains("refused or could not take the change"), "\(other.log.suffix(1500))")
        }
    }

    /// Issue 37: every change to a store took its number from one counter row, which it kept
    /// locked to its COMMIT, so each change of any mount waited for the one before to commit: one
    /// fsync after another, and behind a change held at its COMMIT for as long as it was held (the
    /// other mount's save here waited out the server's 5 s lock timeout, then failed). Numbers now
    /// come from a sequence and mounts read the log by transaction ids, so the held change, which
    /// took the lower number and commits last, still reaches every mount.
    @Test func aChangeHeldAtItsCommitHoldsUpNoOtherAndStillReachesEveryMount() throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let held = try MountedStore(postgres: location, launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        let other = try MountedStore(postgres: location)
        let reader = try MountedStore(postgres: location)
        defer { held.unmount(); other.unmount(); reader.unmount() }
        #expect(FileManager.default.createFile(atPath: hooks + "/commit-before-send", contents: nil))
        let slow = try ChildProcess(["timeout", "60", "sh", "-c", "echo '[1]' > \"$1\"", "sh", held.inMount("held.json")], capture: true)
        #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: hooks + "/commit-before-send.reached") })
        let commit = MountedStore.ReachedHook(hooks, "commit-before-send")
        defer { commit.release() }
        let started = ContinuousClock.now
        #expect(try other.save("quick.json", Data("[2]".utf8)) == "ok", "\(other.log.suffix(1500))")
        print("a save through another mount while a change was held at its COMMIT: \(ContinuousClock.now - started)")
        #expect(MountedStore.waitUntil(seconds: 10) { contents(reader.inMount("quick.json")) == "[2]" }, "the later-numbered change reaches the reader first")
        commit.release()
        #expect(slow.wait() == 0, "\(String(decoding: slow.error, as: UTF8.self))")
        #expect(MountedStore.waitUntil(seconds: 10) { contents(reader.inMount("held.json")) == "[1]\n" }, "the held change, committed last, reaches the reader too")
        #expect(MountedStore.waitUntil(seconds: 10) { contents(other.inMount("held.json")) == "[1]\n" })
        #expect(MountedStore.waitUntil(seconds: 10) { contents(held.inMount("quick.json")) == "[2]" })
    }

    /// Issue 40: a rename waiting behind a large save's upload (held here at its COMMIT) queued for
    /// the namespace, which the save held shared; the lock prefers writers, so every lookup queued
    /// behind the rename (a `stat` here waited 5 s, the whole hold, on 6b33abc). Now the save and the rename hold
    /// only `changes`, which no lookup takes.
    @Test func aRenameQueuedBehindALargeUploadHoldsNoLookup() throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let mount = try MountedStore(postgres: location, launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        defer { mount.unmount() }
        let names = try saveCachedDocuments(mount)
        #expect(try mount.shell("mkdir large moving && echo '[1]' > moving/a.json").succeeded)
        #expect(FileManager.default.createFile(atPath: hooks + "/commit-before-send", contents: nil))
        let upload = try ChildProcess(
            ["timeout", "120", "dd", "if=/dev/urandom", "of=" + mount.inMount("large/blob.bin"), "bs=1M", "count=64", "status=none"], capture: true)
        #expect(MountedStore.waitUntil(seconds: 60) { FileManager.default.fileExists(atPath: hooks + "/commit-before-send.reached") })
        let rename = try ChildProcess(["timeout", "60", "mv", mount.inMount("moving/a.json"), mount.inMount("moving/renamed.json")], capture: true)
        let readTimes = times(of: try startCachedReads(mount, names: names, for: 4), within: 15)
        try FileManager.default.removeItem(atPath: hooks + "/commit-before-send.reached")
        expectNoWait(readTimes, while: "while a rename waited behind a 64 MB upload")
        #expect(upload.wait() == 0, "\(String(decoding: upload.error, as: UTF8.self))\n\(mount.log.suffix(1500))")
        #expect(rename.wait() == 0, "\(String(decoding: rename.error, as: UTF8.self))")
        #expect(contents(mount.inMount("moving/renamed.json")) == "[1]\n")
        #expect(try cluster.query("SELECT size FROM docfs_items WHERE name = convert_to('blob.bin', 'UTF8')") == String(64 << 20))
    }

    /// Issue 40: an open of content the mirror lacks downloaded it holding the namespace shared, so
    /// a rename's publication, or a lookup of a missing name (which forgot its node exclusively),
    /// queued behind the download, and every lookup behind them (on 6b33abc with this hook added,
    /// the reads here did not end while the download was held). The download is held at its start
    /// (a test hook).
    @Test func anOpenWaitingForItsDownloadHoldsNoLookup() throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let mount = try MountedStore(postgres: location, launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        let other = try MountedStore(postgres: location)
        defer { mount.unmount(); other.unmount() }
        let names = try saveCachedDocuments(mount)
        #expect(try mount.shell("mkdir moving && echo '[1]' > moving/a.json").succeeded)
        #expect(try other.shell("mkdir far && echo '[\"far\"]' > far/uncached.json").succeeded)
        // Its size, not its name: the name shows with the other mount's create, before its write.
        #expect(MountedStore.waitUntil { (try? FileManager.default.attributesOfItem(atPath: mount.inMount("far/uncached.json"))[.size] as? Int) == 8 })
        #expect(FileManager.default.createFile(atPath: hooks + "/fetch-before-download", contents: nil))
        let open = try ChildProcess(["timeout", "60", "cat", mount.inMount("far/uncached.json")], capture: true)
        #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: hooks + "/fetch-before-download.reached") })
        let rename = try ChildProcess(["timeout", "60", "mv", mount.inMount("moving/a.json"), mount.inMount("moving/renamed.json")], capture: true)
        let probe = try ChildProcess(["timeout", "60", "stat", mount.inMount("no-such-name.json")], capture: true)
        let readTimes = times(of: try startCachedReads(mount, names: names, for: 4), within: 15)
        try FileManager.default.removeItem(atPath: hooks + "/fetch-before-download.reached")
        expectNoWait(readTimes, while: "while an open waited for its download")
        #expect(open.wait() == 0)
        #expect(String(decoding: open.output, as: UTF8.self) == "[\"far\"]\n")
        #expect(rename.wait() == 0, "\(String(decoding: rename.error, as: UTF8.self))")
        #expect(probe.wait() != 0, "no such name")
        #expect(contents(mount.inMount("moving/renamed.json")) == "[1]\n")
    }

    /// The content an open fetched can leave the mirror before the open finds its file under the
    /// lock of names (here eviction, as another read fills a small cache; another mount's save does
    /// the same). The open then downloaded it holding that lock shared, so a rename waiting for it
    /// exclusively held every lookup behind the download (fresh-clone CI failed
    /// anOpenWaitingForItsDownloadHoldsNoLookup so, under load). Now the open lets go, fetches, and
    /// looks again.
    @Test func contentEvictedAsAnOpenFindsItIsFetchedHoldingNoLookup() throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let mount = try MountedStore(postgres: location, arguments: ["--cache-size", "1M"], launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        let other = try MountedStore(postgres: location)
        defer { mount.unmount(); other.unmount() }
        let names = try saveCachedDocuments(mount)
        let far = "[\"" + String(repeating: "f", count: 500_000) + "\"]"
        #expect(try mount.shell("""
            mkdir moving far && echo '[1]' > moving/a.json && python3 -c "print('[\\"' + 'f' * 500000 + '\\"]', end='')" > far/doc.json
            """).succeeded)
        #expect(try other.shell("head -c 700000 /dev/urandom > filler.bin").succeeded)
        // Its size, not its name: the name shows with the other mount's create, before its write.
        #expect(MountedStore.waitUntil { (try? FileManager.default.attributesOfItem(atPath: mount.inMount("filler.bin"))[.size] as? Int) == 700_000 })
        #expect(FileManager.default.createFile(atPath: hooks + "/open-after-fetch", contents: nil))
        let open = try ChildProcess(["timeout", "60", "cat", mount.inMount("far/doc.json")], capture: true)
        #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: hooks + "/open-after-fetch.reached") })
        let (readTimes, rename) = try cachedReadsWhileAnEvictedFetchIsHeld(mount, hooks: hooks, heldAt: "open-after-fetch", size: far.utf8.count, names: names)
        expectNoWait(readTimes, while: "while an open fetched content evicted after its first fetch")
        #expect(open.wait() == 0)
        #expect(open.output == Data(far.utf8), "the open reads the document whole")
        #expect(rename.wait() == 0, "\(String(decoding: rename.error, as: UTF8.self))")
    }

    /// The same for a writer that does not read: at its first write its stage is seeded from the
    /// committed file, fetched first; content evicted before the file was found under the lock of
    /// names was downloaded holding it (cached reads never ended here without the fix).
    @Test func contentEvictedAsAWritersStageIsSeededIsFetchedHoldingNoLookup() throws {
        let hooks = try MountedStore.makeHookFolder()
        defer { try? FileManager.default.removeItem(atPath: hooks) }
        let mount = try MountedStore(postgres: location, arguments: ["--cache-size", "1M"], launcher: ["env", "DOCFS_TEST_HOOKS=\(hooks)"])
        let other = try MountedStore(postgres: location)
        defer { mount.unmount(); other.unmount() }
        let names = try saveCachedDocuments(mount)
        #expect(try mount.shell("mkdir moving && echo '[1]' > moving/a.json").succeeded)
        // Saved elsewhere: this mount holds no file of it until the writer's first write.
        let size = 500_004
        #expect(try other.shell("""
            mkdir far && python3 -c "print('[\\"' + 'f' * 500000 + '\\"]', end='')" > far/doc.json && head -c 700000 /dev/urandom > filler.bin
            """).succeeded)
        #expect(MountedStore.waitUntil { (try? FileManager.default.attributesOfItem(atPath: mount.inMount("filler.bin"))[.size] as? Int) == 700_000 })
        #expect(MountedStore.waitUntil { (try? FileManager.default.attributesOfItem(atPath: mount.inMount("far/doc.json"))[.size] as? Int) == size })
        #expect(FileManager.default.createFile(atPath: hooks + "/seed-after-fetch", contents: nil))
        let writer = try ChildProcess(["timeout", "60", "python3", "-c", """
            import os, sys
            fd = os.open(sys.argv[1], os.O_WRONLY); os.pwrite(fd, b'g', 10); os.close(fd)
            """, mount.inMount("far/doc.json")], capture: true)
        #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: hooks + "/seed-after-fetch.reached") })
        let (readTimes, rename) = try cachedReadsWhileAnEvictedFetchIsHeld(mount, hooks: hooks, heldAt: "seed-after-fetch", size: size, names: names)
        expectNoWait(readTimes, while: "while a writer's seed was fetched after eviction")
        #expect(writer.wait() == 0, "\(String(decoding: writer.error, as: UTF8.self))")
        #expect(rename.wait() == 0, "\(String(decoding: rename.error, as: UTF8.self))")
        let saved = FileManager.default.contents(atPath: mount.inMount("far/doc.json")) ?? Data()
        #expect(saved.count == size && saved.prefix(12) == Data("[\"ffffffffgf".utf8), "the write landed on the whole document")
    }

    @Test func opensRacingAnotherMountsCommitsEachGetAWholeVersion() throws {
        let reader = try MountedStore(postgres: location)
        let writer = try MountedStore(postgres: location)
        defer { reader.unmount(); writer.unmount() }
        #expect(try writer.save("race.json", Data("{\"n\": 0}".utf8)) == "ok")
        #expect(MountedStore.waitUntil { contents(reader.inMount("race.json")) != nil })
        let stop = writer.root.appendingPathComponent("stop").path
        let saves = try ChildProcess(["timeout", "120", "python3", "-c", """
            import json, os, random, sys
            n = 0
            while not os.path.exists(sys.argv[2]):
                n += 1
                with open(sys.argv[1], 'w') as f: json.dump({"n": n, "pad": "x" * random.randrange(10, 20000)}, f)
            print(n)
            """, writer.inMount("race.json"), stop], capture: true)
        let opens = try ChildProcess(["timeout", "150", "python3", "-c", """
            import errno, json, sys, time
            failures, torn, seen, opens, samples = {}, 0, set(), 0, []
            # 1,000 opens at least, and on until they have raced 100 commits (or for 90 s). Bounded
            # by time, not by a count of opens: cached opens are fast, and under load the other
            # mount's commits reach this one more slowly, so 100,000 opens once ended after 48.
            deadline = time.monotonic() + 90
            while opens < 1000 or (len(seen) < 100 and time.monotonic() < deadline):
                opens += 1
                try:
                    with open(sys.argv[1]) as f: text = f.read()
                except OSError as e:
                    name = errno.errorcode.get(e.errno, str(e.errno)); failures[name] = failures.get(name, 0) + 1; continue
                try: seen.add(json.loads(text)["n"])
                except ValueError:
                    torn += 1
                    samples.append(repr(text[:40]) + f"… ({len(text)} characters)")
            print(json.dumps({"opens": opens, "failures": failures, "torn": torn, "versions": len(seen), "samples": samples[:5]}))
            """, reader.inMount("race.json")], capture: true)
        opens.wait()
        _ = FileManager.default.createFile(atPath: stop, contents: nil)
        saves.wait()
        let summary = String(decoding: opens.output, as: UTF8.self)
        let result = try JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any]
        print("opens racing \(String(decoding: saves.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) saves: \(summary)")
        #expect((result?["failures"] as? [String: Int])?.isEmpty == true, "\(summary)\n\(reader.log.suffix(2000))")
        #expect(result?["torn"] as? Int == 0, "\(summary)")
        #expect(result?["versions"] as? Int ?? 0 >= 100, "the opens did not race the commits: \(summary)")
    }

    @Test func aFullMirrorDiskGivesBackTheContentUsedLeastRecently() throws {
        let writer = try MountedStore(postgres: location)
        // A mirror on 48 MiB, with room in --cache-size for far more.
        let reader = try MountedStore(postgres: location, tmpfsSize: "48m")
        defer { writer.unmount(); reader.unmount() }
        #expect(try writer.shell("for i in 0 1 2 3; do head -c 20971520 /dev/urandom > f$i.bin; done").succeeded)
        #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: reader.inMount("f3.bin")) })
        for index in 0..<4 {
            let read = try MountedStore.run(["cmp", reader.inMount("f\(index).bin"), writer.inMount("f\(index).bin")], timeout: 60)
            #expect(read.succeeded, "f\(index).bin: \(read.output)\(read.error)\n\(reader.log.suffix(1500))")
        }
        #expect(reader.log.contains("the mirror's disk was full"), "\(reader.log.suffix(1500))")
        // A save through the full mirror gets room the same way.
        let save = try reader.shell("head -c 20971520 /dev/urandom > new.bin")
        #expect(save.succeeded, "\(save.error)\n\(reader.log.suffix(1500))")
        #expect(MountedStore.waitUntil { (try? MountedStore.run(["cmp", reader.inMount("new.bin"), writer.inMount("new.bin")], timeout: 60).succeeded) == true })
    }

    @Test func aTruncatingSaveOfAFileTheMirrorLacksFetchesNothingOfIt() throws {
        let writer = try MountedStore(postgres: location)
        // Room in the mirror for the new version, not for the old one.
        let reader = try MountedStore(postgres: location, tmpfsSize: "8m")
        defer { writer.unmount(); reader.unmount() }
        #expect(try writer.shell("head -c 20971520 /dev/urandom > big.bin").succeeded)
        #expect(MountedStore.waitUntil { FileManager.default.fileExists(atPath: reader.inMount("big.bin")) })
        let save = try reader.shell("echo small > big.bin")
        #expect(save.succeeded, "\(save.error)\n\(reader.log.suffix(1500))")
        #expect(MountedStore.waitUntil(seconds: 60) { contents(writer.inMount("big.bin")) == "small\n" }, "\(writer.log.suffix(1500))")
    }

    @Test func aGigabyteSaveKeepsTheDaemonsMemoryBounded() throws {
        let mount = try MountedStore(postgres: location)
        defer { mount.unmount() }
        #expect(try mount.save("warm.json", Data("[1]".utf8)) == "ok")
        let idle = try #require(mount.daemonPeakKiB)
        let write = try mount.shell("head -c 1073741824 /dev/urandom > big.bin", timeout: 170)
        #expect(write.succeeded, "\(write.error)")
        let peak = try #require(mount.daemonPeakKiB)
        print("daemon peak RSS: \(idle / 1024) MiB idle, \(peak / 1024) MiB after a 1 GiB save (\((peak - idle) / 1024) MiB over idle)")
        #expect(peak - idle < 64 * 1024, "a 1 GiB save took \((peak - idle) / 1024) MiB over idle")
        #expect((try? cluster.query("SELECT size FROM docfs_items WHERE name = 'big.bin'::bytea")) == "1073741824")
    }
}
