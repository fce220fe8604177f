import CSystemShims
import Foundation
import Glibc
import Synchronization

/// A program started with posix_spawn and waited for with waitpid. Foundation's `Process` was seen
/// to miss the exit of a child whose own child daemonized, hanging `waitUntilExit()` forever; the
/// tests need a wait they can trust.
final class ChildProcess: @unchecked Sendable {
    let pid: pid_t
    private let outputReader: Thread?
    private let errorReader: Thread?
    private let capturedOutput = CapturedBytes()
    private let capturedError = CapturedBytes()

    private final class CapturedBytes: Sendable {
        let bytes = Mutex(Data())
    }
    private let finished = Mutex<Int32?>(nil)

    /// Starts `arguments` (looked up in PATH) in `directory`, with standard input from /dev/null and
    /// its output captured when `capture`, else sent to /dev/null.
    init(_ arguments: [String], in directory: String? = nil, capture: Bool) throws {
        var command = arguments
        if let directory { command = ["/usr/bin/env", "-C", directory] + command }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        var outputPipe: [Int32] = [-1, -1]
        var errorPipe: [Int32] = [-1, -1]
        if capture {
            guard docfs_pipe_cloexec(&outputPipe) == 0, docfs_pipe_cloexec(&errorPipe) == 0 else { throw POSIXError(.EMFILE) }
            posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
            posix_spawn_file_actions_adddup2(&actions, errorPipe[1], 2)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        // Only standard input, output and error: tests run in parallel, and a descriptor another
        // test holds open in its mount (not close-on-exec, as Foundation's writes are) would keep
        // that mount busy for the life of this child, so its unmount waited for a server.
        docfs_spawn_actions_close_from(&actions, 3)
        let cArguments = command.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        // The spawning thread may block signals (Dispatch's threads do); the child starts with none
        // blocked and default handlers, as from a shell.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let result = posix_spawnp(&child, command[0], &actions, &attributes, cArguments, environ)
        if capture {
            close(outputPipe[1])
            close(errorPipe[1])
        }
        guard result == 0 else {
            if capture { close(outputPipe[0]); close(errorPipe[0]) }
            throw POSIXError(POSIXErrorCode(rawValue: result) ?? .ENOENT)
        }
        pid = child
        if capture {
            let (output, error) = (capturedOutput, capturedError)
            let outputDescriptor = outputPipe[0]
            let errorDescriptor = errorPipe[0]
            outputReader = Thread { let data = Self.drain(outputDescriptor); output.bytes.withLock { $0 = data } }
            errorReader = Thread { let data = Self.drain(errorDescriptor); error.bytes.withLock { $0 = data } }
            outputReader?.start()
            errorReader?.start()
        } else {
            outputReader = nil
            errorReader = nil
        }
    }

    private static func drain(_ descriptor: Int32) -> Data {
        defer { close(descriptor) }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count > 0 { data.append(contentsOf: buffer[0..<count]) } else if count == 0 || errno != EINTR { return data }
        }
    }

    /// The exit status (128 + signal when killed), or nil while it runs.
    var exitStatus: Int32? {
        if let done = finished.withLock({ $0 }) { return done }
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        finished.withLock { $0 = code }
        return code
    }

    var isRunning: Bool { exitStatus == nil }

    /// Waits for the exit and for the captured output to be complete.
    @discardableResult
    func wait() -> Int32 {
        while true {
            if let status = exitStatus {
                while outputReader.map({ !$0.isFinished }) ?? false || errorReader.map({ !$0.isFinished }) ?? false { usleep(1000) }
                return status
            }
            usleep(2000)
        }
    }

    /// Waits up to `seconds`; true if it exited.
    func wait(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning && Date() < deadline { usleep(10_000) }
        return !isRunning
    }

    var output: Data { capturedOutput.bytes.withLock { $0 } }
    var error: Data { capturedError.bytes.withLock { $0 } }
}
