import CSystemShims
import Foundation
import Glibc
import Logging

/// Where docfs logs: standard error in the foreground; a file or syslog when daemonized.
enum LogSetup {
    static func logger(foreground: Bool, logFile: String?, level: Logger.Level) -> Logger {
        var logger: Logger
        if let logFile, let handler = FileLogHandler(path: logFile) {
            logger = Logger(label: "docfs") { _ in handler }
        } else if foreground {
            logger = Logger(label: "docfs") { StreamLogHandler.standardError(label: $0) }
        } else {
            openlog("docfs", LOG_PID, LOG_DAEMON)
            logger = Logger(label: "docfs") { _ in SyslogLogHandler() }
        }
        logger.logLevel = level
        return logger
    }
}

/// One line per message, appended to a file with a timestamp.
struct FileLogHandler: LogHandler {
    private let file: FileHandle
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    init?(path: String) {
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        guard let file = FileHandle(forWritingAtPath: path) else { return nil }
        file.seekToEndOfFile()
        self.file = file
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let stamp = ISO8601DateFormatter().string(from: Date())
        file.write(Data("\(stamp) \(event.level) \(event.message)\n".utf8))
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
