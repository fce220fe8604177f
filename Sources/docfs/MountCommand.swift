import ArgumentParser
import CSystemShims
import DocumentFS
import DocumentStore
import Foundation
import Glibc
import Logging
import StandardDocuments

struct MountCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mount",
        abstract: "Mount the document store STORE at MOUNTPOINT.",
        discussion: "Returns once the mount is ready, leaving a daemon serving it, unless -f is given.")

    @Argument(help: "The store: a directory of documents.")
    var store: String

    @Argument(help: "An existing empty directory to mount on.")
    var mountPoint: String

    @Option(name: .customShort("o"), help: ArgumentHelp("Mount options, comma-separated: ro, allow_other, or any FUSE option.", valueName: "options"))
    var mountOptions: [String] = []

    @Flag(name: [.customShort("f"), .long], help: "Stay in the foreground and log to standard error.")
    var foreground = false

    @Flag(help: "Refuse files that no document type claims instead of storing them as raw data.")
    var strict = false

    @Option(help: "Worker threads serving requests.")
    var threads = 8

    @Option(help: ArgumentHelp("Seconds the kernel may cache names and attributes.", valueName: "seconds"))
    var cacheTimeout = 1.0

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

    /// Set by the daemonizing parent: the descriptor to report readiness on.
    @Option(help: .hidden)
    var readyDescriptor: Int32?

    func validate() throws {
        guard threads >= 1 && threads <= 256 else { throw ValidationError("--threads must be between 1 and 256") }
        guard cacheTimeout >= 0 else { throw ValidationError("--cache-timeout must not be negative") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level '\(logLevel)'") }
        guard ByteCount.parse(quarantineLimit) != nil else { throw ValidationError("--quarantine-limit '\(quarantineLimit)' is not a size (examples: 500M, 2G, 1048576)") }
        guard quarantineDays > 0 else { throw ValidationError("--quarantine-days must be positive") }
    }

    func run() throws {
        do {
            try checkFUSE()
            let storePath = try checkedStore()
            let mountPath = try checkedMountPoint()
            if foreground || readyDescriptor != nil {
                try serve(storePath: storePath, mountPath: mountPath)
            } else {
                try daemonize()
            }
        } catch let failure as CommandFailure {
            if let readyDescriptor { report(failure.message, on: readyDescriptor) }
            FileHandle.standardError.write(Data("docfs: \(failure.message)\n".utf8))
            throw failure.status
        }
    }

    private var parsedOptions: (readOnly: Bool, allowOther: Bool, extra: [String]) {
        let all = mountOptions.flatMap { $0.split(separator: ",").map(String.init) }
        let extra = all.filter { $0 != "ro" && $0 != "rw" && $0 != "allow_other" }
        return (all.contains("ro"), all.contains("allow_other"), extra)
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

    private func checkedStore() throws -> String {
        var status = stat()
        guard stat(store, &status) == 0 else {
            throw CommandFailure(message: "store \(store): \(String(cString: strerror(errno)))", status: ExitStatus.badStore)
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { throw CommandFailure(message: "store \(store) is not a directory", status: ExitStatus.badStore) }
        return absolutePath(store)
    }

    private func checkedMountPoint() throws -> String {
        var status = stat()
        if stat(mountPoint, &status) != 0 {
            if errno == ENOENT && mkdir {
                try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
                return try checkedMountPoint()
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
        if path == absolutePath(store) || path.hasPrefix(absolutePath(store) + "/") {
            throw CommandFailure(message: "mount point \(mountPoint) is inside the store \(store)", status: ExitStatus.badMountPoint)
        }
        return path
    }

    private func absolutePath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private func serve(storePath: String, mountPath: String) throws {
        let logger = LogSetup.logger(foreground: readyDescriptor == nil, logFile: logFile, level: Logger.Level(rawValue: logLevel) ?? .info)
        let directoryStore: DirectoryStore
        do {
            let limits = QuarantineLimits(maximumBytes: ByteCount.parse(quarantineLimit) ?? 1 << 30, maximumAge: quarantineDays * 24 * 3600)
            directoryStore = try DirectoryStore(path: storePath, quarantineLimits: limits)
        } catch {
            throw CommandFailure(message: "cannot open store \(store): \(error)", status: ExitStatus.badStore)
        }
        for recovered in directoryStore.recoverInterruptedWrites() {
            logger.warning("a write interrupted by a crash or a kill was kept in \(recovered)")
        }
        var options = DocumentFSOptions()
        let parsed = parsedOptions
        options.readOnly = parsed.readOnly
        options.allowOther = parsed.allowOther
        options.extraMountOptions = parsed.extra
        options.strict = strict
        options.threads = threads
        options.cacheTimeout = cacheTimeout
        options.logger = logger
        let mount = DocumentMount(store: directoryStore, types: StandardDocumentTypes.all, options: options)
        signal(SIGPIPE, SIG_IGN)
        let result: Int32
        do {
            result = try mount.serve(at: mountPath) {
                logger.info("serving \(storePath) at \(mountPath)\(options.readOnly ? " (read-only)" : "")")
                if let readyDescriptor { report("ready", on: readyDescriptor) }
            }
        } catch {
            throw CommandFailure(message: "\(error) (is FUSE available, and the mount point empty?)", status: ExitStatus.failure)
        }
        logger.info("unmounted \(mountPath)\(result > 0 ? " after signal \(result)" : "")")
    }

    private func report(_ message: String, on descriptor: Int32) {
        let line = message + "\n"
        _ = line.withCString { Glibc.write(descriptor, $0, strlen($0)) }
        close(descriptor)
    }

    /// Starts a copy of this command in the foreground mode as a detached daemon, and returns once
    /// it reports the mount ready — or fails with what it reported — like sshfs does.
    private func daemonize() throws {
        var pipeEnds: [Int32] = [0, 0]
        // The read end must not leak into the daemon; the write end becomes its descriptor 3.
        guard docfs_pipe_cloexec(&pipeEnds) == 0 else { throw CommandFailure(message: "pipe: \(String(cString: strerror(errno)))", status: ExitStatus.failure) }
        var arguments = [CommandLine.arguments.first ?? "docfs", "mount", store, mountPoint, "--ready-descriptor", "3",
                         "--threads", String(threads), "--cache-timeout", String(cacheTimeout), "--log-level", logLevel,
                         "--quarantine-limit", quarantineLimit, "--quarantine-days", String(quarantineDays)]
        for option in mountOptions { arguments += ["-o", option] }
        if strict { arguments.append("--strict") }
        if let logFile { arguments += ["--log-file", absolutePath(logFile.hasPrefix("/") ? logFile : FileManager.default.currentDirectoryPath + "/" + logFile)] }
        let cArguments = arguments.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        let pid = docfs_spawn_detached("/proc/self/exe", cArguments, pipeEnds[1])
        close(pipeEnds[1])
        guard pid > 0 else {
            close(pipeEnds[0])
            throw CommandFailure(message: "cannot start the daemon: \(String(cString: strerror(errno)))", status: ExitStatus.failure)
        }
        let handle = FileHandle(fileDescriptor: pipeEnds[0], closeOnDealloc: true)
        let reply = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if reply == "ready" { return }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 1
        // The daemon printed its error to /dev/null and the pipe; say it here.
        FileHandle.standardError.write(Data("docfs: \(reply.isEmpty ? "the daemon exited before mounting" : reply)\n".utf8))
        throw ExitCode(code == 0 ? 1 : code)
    }
}
