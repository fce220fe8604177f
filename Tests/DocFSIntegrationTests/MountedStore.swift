import Foundation
import Glibc
import Synchronization
import Testing

/// A document store mounted by the real `docfs` binary, for one test.
///
/// Every program the tests drive runs under `timeout`, and `unmount()` (also run on deinit) always
/// detaches the mount with `fusermount3 -uz` and kills the daemon, so a FUSE hang fails one test
/// fast instead of stalling the suite. Each suite's time limit is 10 minutes: Swift Testing runs as
/// many tests at once as there are cores and counts a test's limit while it waits its turn, so on 2
/// cores a suite of a few seconds, queued behind the long ones, ran past 2 minutes in CI.
/// The limit is the last guard against a hang, not the first.
final class MountedStore {
    let root: URL
    let store: String
    let mountPoint: String
    let logFile: String
    private(set) var daemon: ChildProcess?
    private var unmounted = false
    /// Whether the store is a tmpfs of the test's own (for full-disk tests).
    private let storeIsTmpfs: Bool
    /// A PostgreSQL store's location; `store` is then the mount's local mirror.
    let storeLocation: String?
    /// The PostgreSQL server this mount made for itself (`DOCFS_TEST_BACKEND=postgres`).
    private(set) var cluster: PostgresCluster?

    /// `DOCFS_TEST_BACKEND=postgres` runs the tests that seed their store through `init(files:)` on
    /// a PostgreSQL store of their own instead of a directory (scripts/test runs the real-program
    /// suite so).
    static var backendIsPostgres: Bool { ProcessInfo.processInfo.environment["DOCFS_TEST_BACKEND"] == "postgres" }

    /// The `docfs` built beside the test bundle (or `$DOCFS_BINARY`).
    static var binary: String {
        if let override = ProcessInfo.processInfo.environment["DOCFS_BINARY"] { return override }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // The test binary lives in DocFSPackageTests.xctest (a file on Linux) beside docfs.
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("docfs").path), directory.path != "/" {
            directory.deleteLastPathComponent()
        }
        return directory.appendingPathComponent("docfs").path
    }

    /// Makes a store holding `files` (path → contents) and mounts it with `arguments` added to the
    /// `docfs mount` command line; `launcher` runs before docfs (e.g. `prlimit --nofile=…`).
    /// `tmpfsSize` puts the store on a tmpfs of that size (`32m`), so a test can fill it.
    init(files: [String: Data] = [:], arguments: [String] = [], launcher: [String] = [], tmpfsSize: String? = nil) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-it-\(UUID().uuidString.prefix(8))")
        store = root.appendingPathComponent("store").path
        mountPoint = root.appendingPathComponent("mnt").path
        logFile = root.appendingPathComponent("docfs.log").path
        storeIsTmpfs = tmpfsSize != nil
        if Self.backendIsPostgres && tmpfsSize == nil {
            let cluster = try PostgresCluster()
            self.cluster = cluster
            storeLocation = cluster.location(store: "test")
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
            try mount(arguments: arguments, launcher: launcher)
            // The store is seeded through the mount: the database is the store.
            for (path, contents) in files {
                let url = URL(fileURLWithPath: inMount(path))
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try contents.write(to: url)
            }
            return
        }
        storeLocation = nil
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        if let tmpfsSize {
            let result = try Self.run(["mount", "-t", "tmpfs", "-o", "size=\(tmpfsSize)", "docfs-test", store], timeout: 10)
            guard result.succeeded else { throw MountFailure(log: "cannot mount a tmpfs store: \(result.error)") }
        }
        for (path, contents) in files { try writeToStore(path, contents) }
        try mount(arguments: arguments, launcher: launcher)
    }

    convenience init(texts: [String: String], arguments: [String] = [], launcher: [String] = [], tmpfsSize: String? = nil) throws {
        try self.init(files: texts.mapValues { Data($0.utf8) }, arguments: arguments, launcher: launcher, tmpfsSize: tmpfsSize)
    }

    /// Mounts the PostgreSQL store at `location` (another mount of a store some test made), with a
    /// mirror of its own.
    init(postgres location: String, arguments: [String] = [], launcher: [String] = [], tmpfsSize: String? = nil) throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-pg-\(UUID().uuidString.prefix(8))")
        store = root.appendingPathComponent("mirror").path
        mountPoint = root.appendingPathComponent("mnt").path
        logFile = root.appendingPathComponent("docfs.log").path
        storeIsTmpfs = tmpfsSize != nil
        storeLocation = location
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        if let tmpfsSize {
            try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
            let result = try Self.run(["mount", "-t", "tmpfs", "-o", "size=\(tmpfsSize)", "docfs-test", store], timeout: 10)
            guard result.succeeded else { throw MountFailure(log: "cannot mount a tmpfs mirror: \(result.error)") }
        }
        try mount(arguments: arguments, launcher: launcher)
    }

    /// Mounts, and waits for the daemon to say it serves: the mount shows in the mount table before
    /// the kernel's INIT is answered, and the daemon's own check of its mount point (a `stat`) then
    /// holds the mount busy, so a plain `fusermount3 -u` would fail with EBUSY. A mount of a
    /// PostgreSQL store first connects and compares its mirror with the database, which a loaded
    /// machine can make slow.
    func mount(arguments: [String] = [], launcher: [String] = []) throws {
        let servedBefore = timesServed
        let storeArguments = storeLocation.map { [$0, mountPoint, "--cache-directory", store] } ?? [store, mountPoint]
        // Its output is kept for the failure's message: what it says before its log is open.
        let process = try ChildProcess(
            launcher + [Self.binary, "mount"] + storeArguments + ["-f", "--log-file", logFile, "--log-level", "debug"] + arguments,
            capture: true)
        daemon = process
        unmounted = false
        let deadline = Date().addingTimeInterval(storeLocation == nil ? 15 : 60)
        while !isMounted || timesServed == servedBefore {
            guard process.isRunning, Date() < deadline else {
                unmount()
                throw MountFailure(log: log + String(decoding: process.error, as: UTF8.self))
            }
            usleep(20_000)
        }
    }

    struct MountFailure: Error, CustomStringConvertible {
        let log: String
        var description: String { "docfs did not mount:\n\(log)" }
    }

    var isMounted: Bool {
        guard let table = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return false }
        return table.split(separator: "\n").contains { $0.split(separator: " ").dropFirst(4).first.map(String.init) == mountPoint }
    }

    var log: String { (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? "" }

    /// How many times a daemon logged that it serves this mount ("DocFS VERSION serving STORE at
    /// MOUNT"): the log is kept across remounts.
    private var timesServed: Int {
        log.split(separator: "\n").count { $0.contains("DocFS ") && $0.contains(" serving ") }
    }

    /// A new folder for a daemon's test hooks (`DOCFS_TEST_HOOKS`).
    static func makeHookFolder() throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-hooks-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    /// A hook point in `hooks` that a request has reached and waits at: `release()` lets it go on,
    /// once (call it in a `defer` too, so that a failed expectation never leaves it held).
    final class ReachedHook {
        private let path: String
        private var released = false

        init(_ hooks: String, _ point: String) { path = hooks + "/" + point + ".reached" }

        func release() {
            if !released { try? FileManager.default.removeItem(atPath: path) }
            released = true
        }
    }

    /// Waits until `condition` holds (what the daemon does after a request has been answered, such
    /// as a release the kernel sends after `close` returned), 20 s at most; whether it came to hold.
    static func waitUntil(seconds: Double = 20, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(5000)
        }
        return false
    }

    /// Unmounts and mounts the same store again, with a daemon started afresh.
    func remount() throws {
        // A daemon killed instead of ending leaves no record of its mirror (a PostgreSQL store's is
        // then built afresh) and may lose what a clean unmount keeps.
        #expect(unmount(), "the daemon ended by itself within 10 s of its unmount")
        try mount()
    }

    /// Detaches the mount and stops the daemon, whatever state it is in. False when the daemon had
    /// to be killed.
    @discardableResult
    func unmount() -> Bool {
        guard !unmounted else { return true }
        unmounted = true
        _ = try? Self.run(["fusermount3", "-uz", mountPoint], timeout: 10)
        defer { recordLockOrderViolations() }
        guard let daemon else { return true }
        if !daemon.wait(seconds: 10) {
            kill(daemon.pid, SIGKILL)
            daemon.wait()
            return false
        }
        return true
    }

    /// A daemon that checks the lock order (a debug build, or DOCFS_CHECK_LOCK_ORDER=1) stops at a
    /// lock taken out of the hierarchy's order (LockLevel) and logs it: that fails the test that got
    /// there, whatever else it checked.
    private func recordLockOrderViolations() {
        guard let log = try? String(contentsOfFile: logFile, encoding: .utf8) else { return }
        // scripts/test runs the release docfs with the check: it must have been on.
        if ProcessInfo.processInfo.environment["DOCFS_CHECK_LOCK_ORDER"] == "1", log.contains(" serving "),
           !log.contains("every lock taken is checked against the lock hierarchy") {
            Issue.record("the daemon did not check the lock order, though DOCFS_CHECK_LOCK_ORDER=1")
        }
        for line in log.split(separator: "\n") where line.contains("lock order violated") {
            Issue.record("the daemon took a lock out of order: \(line)")
        }
    }

    /// Kills the daemon with SIGKILL, as a crash would, and detaches the dead mount.
    func crash() {
        guard let daemon else { return }
        kill(daemon.pid, SIGKILL)
        daemon.wait()
        _ = try? Self.run(["fusermount3", "-uz", mountPoint], timeout: 10)
        unmounted = true
    }

    deinit {
        unmount()
        if storeIsTmpfs { _ = try? Self.run(["umount", "-l", store], timeout: 10) }
        try? FileManager.default.removeItem(at: root)
    }

    /// The daemon's resident memory now (VmRSS), in KiB.
    var daemonResidentKiB: Int? {
        guard let daemon, let status = try? String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8) else { return nil }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        return line.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") }
    }

    /// The daemon's peak resident memory so far (VmHWM), in KiB.
    var daemonPeakKiB: Int? {
        guard let daemon, let status = try? String(contentsOfFile: "/proc/\(daemon.pid)/status", encoding: .utf8) else { return nil }
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
        return line.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") }
    }

    /// The files left in the store's staging area.
    var staged: [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: inStore(".docfs/staging"))) ?? []
    }

    // MARK: Paths and files

    func inMount(_ path: String) -> String { mountPoint + "/" + path }
    func inStore(_ path: String) -> String { store + "/" + path }

    func writeToStore(_ path: String, _ contents: Data) throws {
        let url = URL(fileURLWithPath: inStore(path))
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try contents.write(to: url)
    }

    func storeData(_ path: String) -> Data? { try? Data(contentsOf: URL(fileURLWithPath: inStore(path))) }

    func storeContents(_ path: String) -> String? {
        (try? Data(contentsOf: URL(fileURLWithPath: inStore(path)))).map { String(decoding: $0, as: UTF8.self) }
    }

    var quarantined: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: inStore(".docfs/quarantine"))) ?? []).filter { !$0.hasSuffix(".reason") }.sorted()
    }

    /// The `.reason` notes beside the quarantined items, oldest name first, each as the lines
    /// `document: …`, `time: …` and `reason: …` (the notes are JSON).
    var quarantineReasons: [String] {
        let directory = inStore(".docfs/quarantine")
        return ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".reason") }.sorted()
            .compactMap { name in
                guard let data = try? Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)),
                      let note = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
                else { return nil }
                return ["document", "time", "reason"].map { "\($0): \(note[$0] ?? "")" }.joined(separator: "\n")
            }
    }

    /// Writes `contents` to `path` through the mount in one open-write-close by Python, and says how
    /// it went: "ok", or the failing call's errno name ("EIO").
    func save(_ path: String, _ contents: Data) throws -> String {
        let script = """
            import errno, sys
            try:
                f = open(sys.argv[1], 'wb'); f.write(bytes.fromhex(sys.argv[2])); f.close(); print('ok')
            except OSError as e:
                print(errno.errorcode.get(e.errno, e.errno))
            """
        let hex = contents.map { String(format: "%02x", $0) }.joined()
        return try run(["python3", "-c", script, inMount(path), hex]).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: Programs

    struct Result {
        let status: Int32
        let output: String
        let error: String
        var succeeded: Bool { status == 0 }
    }

    /// Runs a program under `timeout`, in the mount point unless told otherwise.
    @discardableResult
    func run(_ arguments: [String], timeout: Int = 60, in directory: String? = nil) throws -> Result {
        try Self.run(arguments, timeout: timeout, in: directory ?? mountPoint)
    }

    @discardableResult
    func shell(_ script: String, timeout: Int = 60) throws -> Result {
        try run(["bash", "-c", script], timeout: timeout)
    }

    /// `script` run by `sh` as `user` (`runuser`), in the mount point.
    @discardableResult
    func shell(as user: String, _ script: String, timeout: Int = 30) throws -> Result {
        try Self.run(["runuser", "-u", user, "--", "sh", "-c", "cd \(mountPoint) && " + script], timeout: timeout)
    }

    @discardableResult
    func python(_ script: String, arguments: [String] = [], timeout: Int = 60) throws -> Result {
        try run(["python3", "-c", script] + arguments, timeout: timeout)
    }

    /// The file's contents read through the mount by `cat`; nil when cat fails.
    func read(_ path: String) throws -> String? {
        let result = try run(["cat", inMount(path)])
        return result.succeeded ? result.output : nil
    }

    @discardableResult
    static func run(_ arguments: [String], timeout: Int, in directory: String? = nil) throws -> Result {
        let process = try ChildProcess(["timeout", "-k", "5", String(timeout)] + arguments, in: directory, capture: true)
        let status = process.wait()
        return Result(
            status: status, output: String(decoding: process.output, as: UTF8.self),
            error: String(decoding: process.error, as: UTF8.self))
    }
}
