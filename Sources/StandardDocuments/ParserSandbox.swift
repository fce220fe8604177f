import CSystemShims
import DocumentModel
import Glibc
import Synchronization
import SystemSupport

/// Runs `ParserCheck`s in helper processes, so that a parser written in C or C++ that aborts, runs
/// away in time or in memory on hostile bytes refuses one save instead of taking the root daemon,
/// and with it every user's mount, down.
///
/// A helper is the daemon's own executable in its parser-helper mode: started once and reused, fed
/// a document's bytes over a socket, answering with the verdict. It runs with no privileges (as
/// nobody, no new privileges), no core dumps, an address-space limit, and dies with the daemon. One
/// that crashes or passes the time limit is killed and replaced at the next check; its document is
/// refused with what happened ("the TOML parser crashed (SIGABRT)").
public final class ParserSandbox: Sendable {
    public struct Limits: Sendable {
        /// How long one check may take before its helper is killed.
        public var seconds: Double
        /// The helper's address-space limit (RLIMIT_AS), in bytes.
        public var memory: Int

        public init(seconds: Double = 30, memory: Int = 2 << 30) {
            self.seconds = seconds
            self.memory = memory
        }
    }

    /// The sandbox checks run in, when the process has installed one.
    public static var installed: ParserSandbox? { current.withLock { $0 } }
    private static let current = OrderedMutex<ParserSandbox?>(.leaf, nil)

    /// Runs every check of this process in helpers started as `command` (whose last arguments the
    /// sandbox adds: the memory limit), from now on.
    public static func install(command: [String], limits: Limits) {
        current.withLock { $0 = ParserSandbox(command: command, limits: limits) }
    }

    public let limits: Limits
    private let command: [String]
    /// Helpers waiting for a check; one is taken per check, so concurrent saves run in parallel.
    private let idle = OrderedMutex<[Helper]>(.leaf, [])
    /// The most idle helpers kept; more are ended when their check is done.
    private static let idleLimit = 4

    init(command: [String], limits: Limits) {
        self.command = command
        self.limits = limits
    }

    /// The verdict on `data`, from a helper. A crash, a time-out or a helper that cannot be started
    /// is a refusal naming it, thrown.
    public func check(_ check: ParserCheck, _ data: Data) throws -> ParserVerdict {
        var outcome: Helper.Outcome
        if let waiting = idle.withLock({ $0.popLast() }) {
            outcome = finish(waiting, check, data)
            // A helper that waited may have died meanwhile (the OOM killer, a signal): its end is
            // not this document's doing, so the document gets a fresh helper before any verdict.
            guard case .crashed = outcome else { return try verdict(outcome, check) }
        }
        outcome = finish(try start(check), check, data)
        return try verdict(outcome, check)
    }

    /// One exchange; a helper that answered waits for the next check.
    private func finish(_ helper: Helper, _ check: ParserCheck, _ data: Data) -> Helper.Outcome {
        let outcome = helper.exchange(check, data, seconds: limits.seconds)
        if case .verdict = outcome {
            let kept = idle.withLock { helpers -> Bool in
                guard helpers.count < Self.idleLimit else { return false }
                helpers.append(helper)
                return true
            }
            if !kept { helper.end() }
        }
        return outcome
    }

    private func verdict(_ outcome: Helper.Outcome, _ check: ParserCheck) throws -> ParserVerdict {
        switch outcome {
        case .verdict(let verdict):
            return verdict
        case .crashed(let signal, let said):
            HelperMetrics.crashed(check.format.lowercased())
            let name = signal.map { " (\(Self.signalName($0)))" } ?? ""
            let detail = said.isEmpty ? "" : ": \(said)"
            throw refusal("the \(check.format) parser crashed on this document\(name)\(detail)")
        case .timedOut:
            HelperMetrics.timedOut(check.format.lowercased())
            throw refusal("the \(check.format) parser ran past its time limit of \(Self.seconds(limits.seconds)) on this document")
        }
    }

    private func start(_ check: ParserCheck) throws -> Helper {
        do {
            return try Helper(command: command + ["--memory-limit", String(limits.memory)])
        } catch {
            throw refusal("the \(check.format) parser's helper process could not be started: \(error)")
        }
    }

    private static func signalName(_ signal: Int32) -> String {
        let names: [Int32: String] = [SIGABRT: "SIGABRT", SIGSEGV: "SIGSEGV", SIGBUS: "SIGBUS", SIGILL: "SIGILL", SIGFPE: "SIGFPE", SIGKILL: "SIGKILL", SIGTRAP: "SIGTRAP"]
        return names[signal] ?? "signal \(signal)"
    }

    private static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}

/// One helper process and the socket the daemon talks to it on.
///
/// Each request is a 16-byte header (the check's raw value, 7 bytes of padding, the length as a
/// little-endian UInt64) and the bytes; each answer is a 24-byte header (0 accepted or 1 refused, 7
/// bytes of padding, the count as a little-endian Int64, the reason's length as a UInt64) and the
/// reason in UTF-8.
struct Helper: Sendable {
    let pid: pid_t
    /// The daemon's end of the socket the helper has as its standard input.
    let socket: Int32
    /// What the helper wrote to standard output or error (an assertion's message), non-blocking.
    let errors: Int32

    enum Outcome {
        case verdict(ParserVerdict)
        case crashed(signal: Int32?, said: String)
        case timedOut
    }

    static let requestHeaderSize = 16
    static let answerHeaderSize = 24

    init(command: [String]) throws {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw SystemCallError.last("socketpair")
        }
        var errorPipe: [Int32] = [-1, -1]
        guard docfs_pipe_cloexec(&errorPipe) == 0 else {
            ends.forEach { close($0) }
            throw SystemCallError.last("pipe")
        }
        // A minimal environment: nothing of the daemon's reaches code that parses others' bytes.
        // Swift's crash backtracer is off: a crash is expected here, and its report takes seconds.
        let environment = ["PATH=/usr/bin:/bin", "LANG=C.UTF-8", "SWIFT_BACKTRACE=enable=no"]
        // argv[0] is what the helper's own messages start with ("docfs: toml.hpp:…: Assertion …").
        let arguments = (["docfs"] + command.dropFirst()).map { strdup($0) } + [nil]
        let variables = environment.map { strdup($0) } + [nil]
        defer {
            arguments.forEach { free($0) }
            variables.forEach { free($0) }
        }
        let pid = docfs_spawn_validator(command[0], arguments, variables, ends[1], errorPipe[1], errorPipe[1])
        let spawnErrno = errno
        close(ends[1])
        close(errorPipe[1])
        guard pid > 0 else {
            close(ends[0])
            close(errorPipe[0])
            throw SystemCallError(errno: spawnErrno, operation: "posix_spawn", path: command[0])
        }
        _ = fcntl(errorPipe[0], F_SETFL, fcntl(errorPipe[0], F_GETFL) | O_NONBLOCK)
        self.pid = pid
        socket = ends[0]
        errors = errorPipe[0]
    }

    /// Sends `data` for `check` and waits, up to `seconds`, for the verdict.
    func exchange(_ check: ParserCheck, _ data: Data, seconds: Double) -> Outcome {
        let deadline = ChildProcesses.now() + seconds
        // What the parser printed for earlier documents (CoreFoundation warns on stderr) is read
        // away first: a full pipe would stall the helper, and a crash's message must be its own.
        _ = drainErrors()
        var header = [UInt8](repeating: 0, count: Self.requestHeaderSize)
        header[0] = check.rawValue
        withUnsafeBytes(of: UInt64(data.count).littleEndian) { header.replaceSubrange(8..<16, with: $0) }
        let sent = header.withUnsafeBytes { send($0, until: deadline) } && data.withUnsafeBytes { send($0, until: deadline) }
        guard sent, let answer = receive(Self.answerHeaderSize, until: deadline) else { return ended(deadline: deadline) }
        let count = answer[8..<16].reversed().reduce(0) { $0 << 8 | Int64($1) }
        let reasonLength = answer[16..<24].reversed().reduce(0) { $0 << 8 | UInt64($1) }
        guard reasonLength <= 1 << 20, let reason = receive(Int(reasonLength), until: deadline) else { return ended(deadline: deadline) }
        if answer[0] == 0 { return .verdict(.accepted(count: Int(count))) }
        return .verdict(.refused(String(decoding: reason, as: UTF8.self)))
    }

    /// Closes the helper's input (it exits at the end of its input) and reaps it.
    func end() {
        close(socket)
        _ = try? ChildProcesses.waitStatus(of: pid)
        close(errors)
    }

    /// The helper stopped answering: it crashed, or the time ran out and it is killed.
    private func ended(deadline: Double) -> Outcome {
        close(socket)
        // A crash closes the socket at once; its exit is there to reap within moments.
        // Ended without an answer is a crash whatever the wait says; a wait that fails only loses
        // the signal for the message.
        var status: Int32?
        while status == nil && ChildProcesses.now() < deadline {
            do { status = try ChildProcesses.waitStatus(of: pid, blocking: false) } catch { status = 0 }
            if status == nil { usleep(1000) }
        }
        let timedOut = status == nil
        if timedOut {
            kill(pid, SIGKILL)
            status = try? ChildProcesses.waitStatus(of: pid)
        }
        let said = drainErrors()
        close(errors)
        if timedOut { return .timedOut }
        let waitStatus = status ?? 0
        return .crashed(signal: waitStatus & 0x7F != 0 ? waitStatus & 0x7F : nil, said: said)
    }

    private func send(_ bytes: UnsafeRawBufferPointer, until deadline: Double) -> Bool {
        var offset = 0
        while offset < bytes.count {
            guard wait(for: Int16(POLLOUT), until: deadline) else { return false }
            let count = Glibc.send(socket, bytes.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            if count > 0 {
                offset += count
            } else if count < 0 && errno != EAGAIN && errno != EINTR {
                return false
            }
        }
        return true
    }

    private func receive(_ size: Int, until deadline: Double) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: size)
        var offset = 0
        while offset < size {
            guard wait(for: Int16(POLLIN), until: deadline) else { return nil }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress.map { $0 + offset }, size - offset, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                offset += count
            } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                return nil
            }
        }
        return buffer
    }

    /// Whether the socket is ready for `events` before the deadline.
    private func wait(for events: Int16, until deadline: Double) -> Bool {
        while true {
            let remaining = deadline - ChildProcesses.now()
            guard remaining > 0 else { return false }
            var watched = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&watched, 1, Int32(min(remaining * 1000 + 1, 60_000)))
            if ready > 0 { return watched.revents & events != 0 || watched.revents & Int16(POLLHUP | POLLERR) == 0 }
            if ready < 0 && errno != EINTR { return false }
        }
    }

    /// The last line the helper wrote to its error output, for the refusal.
    private func drainErrors() -> String {
        var collected: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while collected.count < 1 << 16 {
            let count = chunk.withUnsafeMutableBytes { read(errors, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            collected += chunk[..<count]
        }
        let lines = String(decoding: collected, as: UTF8.self).split(separator: "\n").filter { !$0.allSatisfy(\.isWhitespace) }
        return lines.last.map { String($0.prefix(300)) } ?? ""
    }
}
