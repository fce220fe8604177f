import CSystemShims
import Foundation
import Glibc
import Logging
import Synchronization
import SystemSupport

/// Where docfs logs: standard error in the foreground (journald, under systemd); a file when given;
/// when daemonized, syslog if a syslog daemon listens on /dev/log, else the store's own
/// `.docfs/log` (rotated), so no line — a refusal least of all — is silently dropped.
enum LogSetup {
    struct Destination {
        let logger: Logger
        /// Where the lines go, in words, for the first log line and the user.
        let description: String
        let isFallback: Bool
    }

    static func destination(foreground: Bool, logFile: String?, store: String, level: Logger.Level) -> Destination {
        func make(_ factory: @escaping @Sendable (String) -> any LogHandler) -> Logger {
            var logger = Logger(label: "docfs") { EscapingLogHandler(factory($0)) }
            logger.logLevel = level
            return logger
        }
        if let logFile, let handler = FileLogHandler(path: logFile) {
            return Destination(logger: make { _ in handler }, description: logFile, isFallback: false)
        }
        if foreground {
            return Destination(logger: make { StreamLogHandler.standardError(label: $0) }, description: "standard error", isFallback: false)
        }
        if syslogIsListening {
            openlog("docfs", LOG_PID, LOG_DAEMON)
            return Destination(logger: make { _ in SyslogLogHandler() }, description: "syslog", isFallback: false)
        }
        let fallback = store + "/.docfs/log"
        if let handler = FileLogHandler(path: fallback, rotatingAt: 1 << 20) {
            return Destination(logger: make { _ in handler }, description: fallback, isFallback: true)
        }
        return Destination(logger: make { StreamLogHandler.standardError(label: $0) }, description: "nowhere (no syslog, and \(fallback) cannot be written)", isFallback: true)
    }

    /// Whether something receives datagrams on /dev/log (containers and small VMs often have none,
    /// and syslog(3) then drops every line without a word).
    static var syslogIsListening: Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in "/dev/log".utf8.enumerated() { buffer[index] = byte }
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }
}

/// One line per message, appended to a file with a timestamp; with `rotatingAt`, the file is moved
/// to `.1` (then `.2`, `.3`) when it reaches that size.
final class FileLogHandlerOutput: Sendable {
    private struct State {
        var file: FileHandle
        var size: UInt64
    }

    private let path: String
    private let rotatingAt: UInt64?
    private let state: OrderedMutex<State>

    init?(path: String, rotatingAt: UInt64?) {
        guard let file = Self.open(path) else { return nil }
        self.path = path
        self.rotatingAt = rotatingAt
        // A FIFO or a terminal has no end to seek to (seekToEndOfFile crashed on one): 0.
        state = OrderedMutex(.innermost, State(file: file, size: (try? file.seekToEnd()) ?? 0))
    }

    private static func open(_ path: String) -> FileHandle? {
        // By the path's own bytes (Foundation's calls take a UTF-8 look-alike of one that is not);
        // whatever the path names, as before: a link, a FIFO a collector reads, /dev/null.
        let descriptor = FileSystemPath.withCString(path) { Glibc.open($0, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644) }
        guard descriptor >= 0 else { return nil }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }

    func write(_ line: String) {
        let data = Data(line.utf8)
        state.withLock { state in
            if let rotatingAt, state.size + UInt64(data.count) > rotatingAt, let fresh = rotate(closing: state.file) {
                state = State(file: fresh, size: 0)
            }
            state.file.write(data)
            state.size += UInt64(data.count)
        }
    }

    private func rotate(closing file: FileHandle) -> FileHandle? {
        try? file.close()
        for index in stride(from: 2, through: 1, by: -1) { try? FileIO.rename("\(path).\(index)", "\(path).\(index + 1)") }
        try? FileIO.rename(path, path + ".1")
        return Self.open(path)
    }
}

struct FileLogHandler: LogHandler {
    private let output: FileLogHandlerOutput
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    init?(path: String, rotatingAt: UInt64? = nil) {
        guard let output = FileLogHandlerOutput(path: path, rotatingAt: rotatingAt) else { return nil }
        self.output = output
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let stamp = ISO8601DateFormatter().string(from: Date())
        output.write("\(stamp) \(event.level) \(event.message)\n")
    }
}

/// Messages to syslog(3), at the matching priority.
struct SyslogLogHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let priority: Int32 = switch event.level {
        case .trace, .debug: LOG_DEBUG
        case .info: LOG_INFO
        case .notice: LOG_NOTICE
        case .warning: LOG_WARNING
        case .error: LOG_ERR
        case .critical: LOG_CRIT
        }
        docfs_syslog(priority, "\(event.message)")
    }
}

/// Every message is written with its names escaped (`PrintableText`): a file named with a newline
/// cannot split a line of the log into two, nor forge one.
struct EscapingLogHandler: LogHandler {
    private var inner: any LogHandler

    init(_ inner: any LogHandler) { self.inner = inner }

    var logLevel: Logger.Level {
        get { inner.logLevel }
        set { inner.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        var escaped = event
        escaped.message = "\(PrintableText.escaped(event.message.description))"
        inner.log(event: escaped)
    }
}
