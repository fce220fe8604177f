import ArgumentParser
import CoreMetrics
import CSystemShims
import DocumentFS
import DocumentStore
import Foundation
import Glibc
import Logging
import PostgresDocumentStore
import StandardDocuments
import SystemSupport
import TypeConfiguration

struct MountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Mount the document store STORE at MOUNTPOINT.",
        discussion: """
            Returns once the mount is ready, leaving a daemon serving it, unless -f is given. \
            `docfs STORE MOUNTPOINT -o OPTIONS` (what mount.fuse3 runs for `mount -t fuse.docfs` and fstab \
            lines) does the same as `docfs mount`.
            """)

    @Argument(help: "The store: a directory of documents, or a PostgreSQL store: postgresql://USER@HOST[:PORT]/DB[?store=NAME] (the password from PGPASSWORD or ~/.pgpass).")
    var store: String

    @Argument(help: "An existing empty directory to mount on.")
    var mountPoint: String

    @Option(name: .customShort("o"), help: ArgumentHelp(
        "Mount options, comma-separated: ro, allow_other, uid=N, gid=N, umask=NNN, fsname=NAME, source=STORE, remount, config=FILE, metrics=ADDRESS:PORT, cache_directory=DIR, cache_root=DIR, or any FUSE option; fstab and systemd options (nofail, _netdev, noauto, user, x-systemd.*) are ignored.",
        valueName: "options"))
    var mountOptions: [String] = []

    @Flag(name: [.customShort("f"), .long], help: "Stay in the foreground and log to standard error.")
    var foreground = false

    @Flag(name: .customShort("d"), help: "Debug: stay in the foreground and print every FUSE request (-f -o debug).")
    var debug = false

    @OptionGroup var typeConfiguration: ConfigurationOption

    @OptionGroup var parserLimits: ParserLimitsOption

    @Flag(help: "Refuse files that no document type claims instead of storing them as raw data.")
    var strict = false

    @Option(help: "Worker threads serving requests.")
    var threads = 8

    @Option(help: ArgumentHelp("Seconds the kernel may cache names and attributes (default: a day when the store can be watched for changes made beside DocFS, else 1).", valueName: "seconds"))
    var cacheTimeout: Double?

    @Option(help: ArgumentHelp("Log to this file (default when daemonized: syslog).", valueName: "path"))
    var logFile: String?

    @Option(help: ArgumentHelp("Log level: trace, debug, info, notice, warning, error, critical.", valueName: "level"))
    var logLevel: String = "info"

    @Flag(help: "Create the mount point if it does not exist.")
    var mkdir = false

    @Option(help: ArgumentHelp("Most the quarantine keeps before pruning its oldest items: bytes, or with K, M, G.", valueName: "size"))
    var quarantineLimit = "1G"

    @Option(help: ArgumentHelp("Days a quarantined item is kept.", valueName: "days"))
    var quarantineDays = 30.0

    @Option(help: ArgumentHelp("For a PostgreSQL store: the local mirror the mount serves from (default: /var/cache/docfs/…, one per store and mount point).", valueName: "directory"))
    var cacheDirectory: String?

    @Option(help: ArgumentHelp("For a PostgreSQL store: the most file content the mirror keeps; the least recently used is fetched again when next opened (bytes, or with K, M, G).", valueName: "size"))
    var cacheSize = "1G"

    @Option(help: ArgumentHelp("For a PostgreSQL store: how long a change waits for a primary that accepts it (a failover, a restart, a stall) before it fails with EIO and its bytes are quarantined.", valueName: "seconds"))
    var primaryWait = 30.0

    @Option(help: ArgumentHelp("Keep the version every save replaces (on), or keep none (off); see `.versions` in docfs(1).", valueName: "on|off"))
    var versions = "on"

    @Option(help: ArgumentHelp("Most space the versions may take before the oldest are dropped: bytes, with K, M, G, or a percentage of the store's file system.", valueName: "size"))
    var versionsCap = "10%"

    @Option(help: ArgumentHelp("Serve Prometheus metrics at http://ADDRESS:PORT/metrics (PORT alone: on 127.0.0.1; port 0 picks a free one, logged); off by default.", valueName: "address:port"))
    var metrics: String?

    /// Set by the daemonizing parent: the descriptor to report readiness on.
    @Option(help: .hidden)
    var readyDescriptor: Int32?

    func validate() throws {
        guard threads >= 1 && threads <= 256 else { throw ValidationError("--threads must be between 1 and 256") }
        guard (cacheTimeout ?? 0) >= 0 else { throw ValidationError("--cache-timeout must not be negative") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
        guard ByteCount.parse(quarantineLimit) != nil else { throw ValidationError("--quarantine-limit '\(quarantineLimit)' is not a size (examples: 500M, 2G, 1048576)") }
        guard quarantineDays > 0 else { throw ValidationError("--quarantine-days must be positive") }
        guard primaryWait > 0 && primaryWait <= 86_400 else { throw ValidationError("--primary-wait must be between 0 and 86400 seconds") }
        guard versions == "on" || versions == "off" else { throw ValidationError("--versions takes on or off, not '\(versions)'") }
        guard VersionCap(versionsCap) != nil else { throw ValidationError("--versions-cap '\(versionsCap)' is not a size or a percentage (examples: 5G, 10%)") }
        guard ByteCount.parse(cacheSize) != nil else { throw ValidationError("--cache-size '\(cacheSize)' is not a size (examples: 500M, 2G, 1048576)") }
        let parsed = try MountOptions(mountOptions)
        if let address = metrics ?? parsed.metrics, MetricsEndpoint.Address(address) == nil {
            throw ValidationError("--metrics '\(address)' is not an address and port (examples: 9464, 127.0.0.1:9464, [::1]:9464)")
        }
    }

    mutating func run() throws {
        if let readyDescriptor {
            // The readiness pipe is for us alone: fusermount3 (which stays running with
            // auto_unmount) must not inherit it, or the parent would wait for its end forever.
            _ = fcntl(readyDescriptor, F_SETFD, FD_CLOEXEC)
        }
        // Before the configuration is read: it is TOML, and checked as any TOML document is.
        parserLimits.install()
        do {
            try checkFUSE()
            let given = try MountOptions(mountOptions)
            if given.remount { return try remount(readOnly: given.readOnly) }
            try takeStoreFromSource()
            let storePath = try checkedStore()
            let mountPath = try checkedMountPoint()
            // Read before daemonizing, so a bad configuration fails the command that was typed.
            let parsed = try MountOptions(mountOptions)
            let localStore = try postgresLocation.map { mirrorDirectory($0, mountPath: mountPath, options: parsed) } ?? storePath
            let types = try typeConfiguration.load(storePath: localStore, fallback: parsed.configPath)
            if foreground || debug || readyDescriptor != nil {
                try serve(storePath: storePath, mountPath: mountPath, options: parsed, types: types)
            } else {
                try daemonize()
            }
        } catch let failure as CommandFailure {
            FileHandle.standardError.write(Data("docfs: \(failure.message)\n".utf8))
            throw failure.status
        }
    }

    /// `-o source=STORE`: the store is that, and the first argument the mount's name (its fsname,
    /// unless `fsname=` gives one), which mount(8) and findmnt then show as its source.
    /// `-o remount`: makes the DocFS mount at the mount point read-only, or writable again, as
    /// `ro` is given or not, keeping its other flags (nosuid, nodev, noexec, sync, nosymfollow, the
    /// atime ones). The kernel refuses writes to a read-only mount (EROFS); its daemon runs on as
    /// it was, so a mount started read-only stays so.
    private func remount(readOnly: Bool) throws {
        let path = absolutePath(mountPoint)
        guard MountTable.isDocFSMountShown(at: path) else {
            throw CommandFailure(message: "cannot remount \(mountPoint): no DocFS is mounted there", status: ExitStatus.badMountPoint)
        }
        var status = statvfs()
        guard FileSystemPath.withCString(path, { statvfs($0, &status) }) == 0 else {
            throw CommandFailure(message: "cannot remount \(mountPoint): \(String(cString: strerror(errno)))", status: ExitStatus.badMountPoint)
        }
        // statvfs's flag bits (ST_NOSUID, ST_NODEV, ST_NOEXEC, ST_SYNCHRONOUS, ST_NOATIME,
        // ST_NODIRATIME, ST_RELATIME, ST_NOSYMFOLLOW: Linux's values, as Swift sees none of
        // glibc's), then mount(2)'s.
        let kept: [(shown: Int, flag: Int)] = [
            (2, Int(MS_NOSUID)), (4, Int(MS_NODEV)), (8, Int(MS_NOEXEC)), (16, Int(MS_SYNCHRONOUS)),
            (1024, Int(MS_NOATIME)), (2048, Int(MS_NODIRATIME)), (4096, Int(MS_RELATIME)), (8192, Int(MS_NOSYMFOLLOW)),
        ]
        var flags = Int(MS_REMOUNT) | (readOnly ? Int(MS_RDONLY) : 0)
        for (shown, flag) in kept where Int(status.f_flag) & shown != 0 { flags |= flag }
        guard Glibc.mount(nil, path, nil, UInt(flags), nil) == 0 else {
            throw CommandFailure(message: "cannot remount \(mountPoint): \(String(cString: strerror(errno)))", status: ExitStatus.failure)
        }
    }

    /// What a daemon says when it starts without syslog, followed by where its log goes.
    static let logPlaceNotice = "docfs: no syslog daemon listens on /dev/log: logging to "

    private mutating func takeStoreFromSource() throws {
        let parsed = try MountOptions(mountOptions)
        guard let source = parsed.source else { return }
        if parsed.fileSystemName == nil {
            guard !store.utf8.contains(UInt8(ascii: ",")) else { throw ValidationError("the mount's name '\(store)' holds a comma, which -o options cannot carry; give fsname=") }
            mountOptions.append("fsname=" + store)
        }
        mountOptions = MountOptions.removingSource(mountOptions)
        store = source
    }

    private func checkFUSE() throws {
        guard access("/dev/fuse", R_OK | W_OK) == 0 else {
            throw CommandFailure(message: "this machine has no usable FUSE: /dev/fuse is missing or not accessible (install fuse3 and load the fuse module)", status: ExitStatus.noFUSE)
        }
        if geteuid() != 0 {
            let found = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
                .contains { access("\($0)/fusermount3", X_OK) == 0 }
            guard found else { throw CommandFailure(message: "fusermount3 is not installed (Debian package fuse3)", status: ExitStatus.noFUSE) }
        }
    }

    private var postgresLocation: PostgresLocation? {
        get throws {
            guard PostgresLocation.isPostgresLocation(store) else { return nil }
            do {
                return try PostgresLocation(store)
            } catch {
                throw CommandFailure(message: "store \(error)", status: ExitStatus.badStore)
            }
        }
    }

    /// Where a PostgreSQL store's mirror lives: given (`--cache-directory`, or `-o cache_directory=`
    /// from an fstab line), or one folder per store and mount point.
    private func mirrorDirectory(_ location: PostgresLocation, mountPath: String, options: MountOptions) -> String {
        if let given = cacheDirectory ?? options.cacheDirectory {
            return absolutePath(FileSystemPath.absolute(given) ?? given)
        }
        let base = options.cacheRoot ?? (geteuid() == 0
            ? "/var/cache/docfs"
            : (ProcessInfo.processInfo.environment["XDG_CACHE_HOME"] ?? NSHomeDirectory() + "/.cache") + "/docfs")
        // The location after its scheme (all of it in keyword/value form, which has none).
        let text = location.description
        let name = ((text.range(of: "://").map { text[$0.upperBound...] } ?? text[...]) + mountPath)
            .map { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" ? $0 : "_" }
        let owner = FileSystemPath.bytes(of: location.identity) + Array("\nmount point=".utf8) + FileSystemPath.bytes(of: mountPath)
        return MirrorFolder.path(base: base, name: String(name), owner: owner)
    }

    private func checkedStore() throws -> String {
        if try postgresLocation != nil { return store }
        var status = stat()
        guard FileSystemPath.withCString(store, { stat($0, &status) }) == 0 else {
            throw CommandFailure(message: "store \(store): \(String(cString: strerror(errno)))", status: ExitStatus.badStore)
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { throw CommandFailure(message: "store \(store) is not a directory", status: ExitStatus.badStore) }
        return absolutePath(store)
    }

    private func checkedMountPoint(mayMake: Bool = true) throws -> String {
        var status = stat()
        if FileSystemPath.withCString(mountPoint, { stat($0, &status) }) != 0 {
            if errno == ENOENT && mkdir && mayMake {
                // By the path's own bytes: Foundation made a look-alike of a name that is not
                // UTF-8, which the check then did not find, again and again.
                do {
                    try Paths.makeDirectories(mountPoint, mode: 0o755)
                } catch {
                    throw CommandFailure(message: "mount point \(PrintableText.escaped(mountPoint)): \(error)", status: ExitStatus.badMountPoint)
                }
                return try checkedMountPoint(mayMake: false)
            }
            if errno == ENOTCONN {
                throw CommandFailure(message: "mount point \(mountPoint) is a dead FUSE mount; run `docfs unmount \(mountPoint)` first", status: ExitStatus.badMountPoint)
            }
            throw CommandFailure(message: "mount point \(mountPoint): \(String(cString: strerror(errno)))", status: ExitStatus.badMountPoint)
        }
        guard status.st_mode & S_IFMT == S_IFDIR else {
            throw CommandFailure(message: "mount point \(mountPoint) is not a directory", status: ExitStatus.badMountPoint)
        }
        let path = absolutePath(mountPoint)
        if MountTable.isMountPoint(path) {
            throw CommandFailure(message: "mount point \(mountPoint) is busy: something is already mounted there", status: ExitStatus.badMountPoint)
        }
        if !PostgresLocation.isPostgresLocation(store), StorePath.isWithin(path, absolutePath(store)) {
            throw CommandFailure(message: "mount point \(mountPoint) is inside the store \(store)", status: ExitStatus.badMountPoint)
        }
        return path
    }

    private func absolutePath(_ path: String) -> String {
        FileSystemPath.resolved(path) ?? path
    }

    private func serve(storePath: String, mountPath: String, options parsed: MountOptions, types: TypeConfiguration) throws {
        let daemonized = readyDescriptor != nil
        // A daemon must not keep the caller's directory busy (umount of a mount below it says
        // "target is busy"); paths are absolute by now.
        if daemonized { _ = chdir("/") }
        // Before anything records a metric: one made before the backend stays a no-op.
        let metricsAddress = (metrics ?? parsed.metrics).flatMap(MetricsEndpoint.Address.init)
        let registry = metricsAddress.map { _ in MetricsEndpoint.bootstrap() }
        let limits = QuarantineLimits(maximumBytes: ByteCount.parse(quarantineLimit) ?? 1 << 30, maximumAge: quarantineDays * 24 * 3600)
        let documentStore: any DocumentStore
        let destination: LogSetup.Destination
        if let location = try postgresLocation {
            let mirror = mirrorDirectory(location, mountPath: mountPath, options: parsed)
            do {
                // With its private area, which holds the log when there is no syslog.
                try Paths.makeDirectories(mirror + "/" + DirectoryStore.privateAreaName, mode: 0o700)
            } catch {
                throw CommandFailure(message: "cannot make the mirror directory \(mirror): \(error)", status: ExitStatus.badStore)
            }
            destination = LogSetup.destination(
                foreground: !daemonized, logFile: logFile, store: mirror, level: Logger.Level(rawValue: logLevel) ?? .info)
            do {
                documentStore = try PostgresStore(
                    location: location, cacheDirectory: mirror, contentCacheLimit: ByteCount.parse(cacheSize) ?? PostgresStore.defaultContentCacheLimit,
                    primaryWait: .milliseconds(Int64(primaryWait * 1000)), quarantineLimits: limits, keepsVersions: versions == "on",
                    logger: destination.logger)
            } catch {
                throw CommandFailure(message: "cannot open store \(store): \(error)", status: ExitStatus.badStore)
            }
            destination.logger.info("PostgreSQL store \(location.storeName) mirrored in \(mirror)")
        } else {
            let directoryStore: DirectoryStore
            do {
                directoryStore = try DirectoryStore(path: storePath, quarantineLimits: limits, keepsVersions: versions == "on")
            } catch {
                throw CommandFailure(message: "cannot open store \(store): \(error)", status: ExitStatus.badStore)
            }
            // After the store: its private area holds the log when there is no syslog.
            destination = LogSetup.destination(
                foreground: !daemonized, logFile: logFile, store: storePath, level: Logger.Level(rawValue: logLevel) ?? .info)
            for recovered in directoryStore.recoverInterruptedWrites() {
                destination.logger.warning("a write interrupted by a crash or a kill was kept in \(recovered)")
            }
            documentStore = directoryStore
        }
        if versions == "on", documentStore.versions != nil, let cap = VersionCap(versionsCap) {
            VersionRetentionThread.start(store: documentStore, cap: cap, logger: destination.logger)
        }
        let logger = destination.logger
        if LockOrder.isChecked {
            // A debug build (or DOCFS_CHECK_LOCK_ORDER=1) checks every lock against the hierarchy
            // (LockLevel): a violation is logged, then stops the daemon. DOCFS_LOCK_ORDER=report
            // only logs, to list them all.
            let onlyReport = ProcessInfo.processInfo.environment["DOCFS_LOCK_ORDER"] == "report"
            logger.debug("every lock taken is checked against the lock hierarchy")
            LockOrder.report { message in
                logger.critical("\(message)")
                if !onlyReport { fatalError(message) }
            }
        }
        var options = DocumentFSOptions()
        options.readOnly = parsed.readOnly
        options.allowOther = parsed.allowOther
        options.fileSystemName = parsed.fileSystemName ?? storePath
        options.maxRead = parsed.maxRead
        options.extraMountOptions = parsed.forFUSE + (debug || parsed.debug ? ["debug"] : [])
        options.shownOwner = (parsed.userID, parsed.groupID)
        options.shownUmask = parsed.umask
        options.strict = strict
        options.threads = threads
        options.cacheTimeout = cacheTimeout
        options.logger = logger
        if let file = types.path { logger.info("document types from \(file): \(types.rules.patterns.count) patterns, \(types.commandTypes.count) command types") }
        let mount = DocumentMount(store: documentStore, rules: types.rules, options: options)
        if let metricsAddress, let registry {
            DocumentMetrics.register()
            let lag = (documentStore as? PostgresStore).map { store in
                PostgresMetrics.register()
                return (store, Gauge(label: "docfs_change_feed_lag_seconds"))
            }
            _ = try MetricsEndpoint(address: metricsAddress, registry: registry, logger: logger) {
                mount.sampleMetrics()
                if let (store, gauge) = lag { gauge.record(store.changeFeedLag) }
            }
        }
        let readOnly = options.readOnly
        signal(SIGPIPE, SIG_IGN)
        if !parsed.ignored.isEmpty { logger.debug("ignored mount(8) and systemd options: \(parsed.ignored.joined(separator: ","))") }
        let result: Int32
        do {
            result = try mount.serve(at: mountPath) {
                // Ready once the kernel's INIT has been answered: a stat of the mount point needs it.
                Thread.detachNewThread {
                    var status = stat()
                    guard FileSystemPath.withCString(mountPath, { stat($0, &status) }) == 0 else {
                        logger.error("the mount at \(mountPath) does not answer: \(String(cString: strerror(errno)))")
                        return
                    }
                    logger.info("DocFS \(DocFSVersion.current) serving \(storePath) at \(mountPath)\(readOnly ? " (read-only)" : ""); logging to \(destination.description)")
                    if let readyDescriptor {
                        if destination.isFallback { FileHandle.standardError.write(Data((Self.logPlaceNotice + destination.description + "\n").utf8)) }
                        report("ready", on: readyDescriptor)
                        detachStandardError()
                    }
                    SystemdNotification.send("READY=1\nSTATUS=Serving \(storePath) at \(mountPath)")
                }
            }
        } catch {
            // libfuse and fusermount3 have said why on standard error, which reaches the caller.
            throw CommandFailure(message: "cannot mount \(store) at \(mountPoint): \(error)", status: ExitStatus.failure)
        }
        SystemdNotification.send("STOPPING=1")
        TestHook.unmountedBeforeExit.pause()
        (documentStore as? PostgresStore)?.saveManifest()
        logger.info("unmounted \(mountPath)\(result > 0 ? " after signal \(result)" : "")")
    }

    private func report(_ message: String, on descriptor: Int32) {
        let line = message + "\n"
        _ = line.withCString { Glibc.write(descriptor, $0, strlen($0)) }
        close(descriptor)
    }

    /// After readiness the daemon's standard error (the pipe to the parent until then) goes nowhere.
    private func detachStandardError() {
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        if null >= 0 {
            dup2(null, 2)
            close(null)
        }
    }

    /// Starts a copy of this command in the foreground mode as a detached daemon, and returns once
    /// it reports the mount ready — or fails with what it, libfuse and fusermount3 said — like sshfs.
    /// The daemon's standard error is the same pipe until it is ready, so their messages reach the
    /// caller as they were written.
    private func daemonize() throws {
        var pipeEnds: [Int32] = [0, 0]
        // The read end must not leak into the daemon; the write end becomes its descriptors 2 and 3.
        guard docfs_pipe_cloexec(&pipeEnds) == 0 else { throw CommandFailure(message: "pipe: \(String(cString: strerror(errno)))", status: ExitStatus.failure) }
        let storeArgument = PostgresLocation.isPostgresLocation(store) ? store : absolutePath(store)
        var arguments = [CommandLine.arguments.first ?? "docfs", "mount", storeArgument, absolutePath(mountPoint), "--ready-descriptor", "3",
                         "--threads", String(threads), "--log-level", logLevel,
                         "--quarantine-limit", quarantineLimit, "--quarantine-days", String(quarantineDays), "--cache-size", cacheSize, "--primary-wait", String(primaryWait),
                         "--versions", versions, "--versions-cap", versionsCap]
        arguments += parserLimits.arguments
        for option in mountOptions { arguments += ["-o", option] }
        if strict { arguments.append("--strict") }
        if let path = typeConfiguration.path { arguments += ["--config", absolutePath(path)] }
        if let cacheTimeout { arguments += ["--cache-timeout", String(cacheTimeout)] }
        if let metrics { arguments += ["--metrics", metrics] }
        if let cacheDirectory { arguments += ["--cache-directory", FileSystemPath.absolute(cacheDirectory) ?? cacheDirectory] }
        if let logFile { arguments += ["--log-file", absolutePath(FileSystemPath.absolute(logFile) ?? logFile)] }
        // The bytes each argument stands for (a path need not be UTF-8; see `FileSystemPath`).
        let cArguments = FileSystemPath.cStringArray(arguments)
        defer { cArguments.forEach { free($0) } }
        let pid = docfs_spawn_detached("/proc/self/exe", cArguments, pipeEnds[1])
        close(pipeEnds[1])
        guard pid > 0 else {
            close(pipeEnds[0])
            throw CommandFailure(message: "cannot start the daemon: \(String(cString: strerror(errno)))", status: ExitStatus.failure)
        }
        // Read until the daemon says "ready" — not until the pipe's end: a helper it started may
        // hold the pipe open for as long as the mount lives.
        var said: [String] = []
        var pending = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        var ready = false
        reading: while true {
            let count = read(pipeEnds[0], &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            pending.append(contentsOf: buffer[0..<count])
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                if line == "ready" {
                    ready = true
                    break reading
                }
                said.append(line)
            }
        }
        close(pipeEnds[0])
        if !pending.isEmpty { said.append(String(decoding: pending, as: UTF8.self)) }
        // Where the log goes is for a person at a terminal; mount(8) helpers say nothing when they
        // succeed, and scripts (xfstests among them) take anything said for a failure.
        let toPerson = isatty(STDERR_FILENO) == 1
        for line in said where toPerson || !(ready && line.hasPrefix(Self.logPlaceNotice)) {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        if ready { return }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 1
        if said.isEmpty { FileHandle.standardError.write(Data("docfs: the daemon exited before mounting\n".utf8)) }
        throw ExitCode(code == 0 ? 1 : code)
    }
}
