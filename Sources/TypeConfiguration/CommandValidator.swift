import CSystemShims
import DocumentModel
import Foundation
import Glibc
import SystemSupport

/// A validator program a configuration file names: it reads the document on standard input and
/// exits 0 to accept it; anything else refuses it, with what it wrote to standard error (or, when
/// that is empty, standard output) as the reason. It runs without a shell, in "/", in a process
/// group of its own that is killed whole when it overruns its time limit. Its environment is
/// minimal: the daemon's secrets (PGPASSWORD, a service's credentials) are not a validator's.
public struct CommandValidator: Sendable {
    /// The configured command, `command[0]` as written.
    public let command: [String]
    /// `command[0]` resolved against PATH when the configuration was read.
    public let executablePath: String
    public let timeout: Double
    /// Variables of the daemon's environment the configuration passes on (`environment = [...]`),
    /// besides PATH, LANG, LC_* and DOCFS_*.
    public let passedVariables: [String]
    /// The user (and that user's group) a root daemon runs the validator as for every save
    /// (`user = "NAME"`); nil: as the writer.
    public let user: Ownership?

    /// How much of the validator's output a refusal quotes.
    static let reasonLimit = 2000

    public init(command: [String], executablePath: String, timeout: Double, passedVariables: [String] = [], user: Ownership? = nil) {
        self.command = command
        self.executablePath = executablePath
        self.timeout = timeout
        self.passedVariables = passedVariables
        self.user = user
    }

    /// The validator's environment, from the daemon's: PATH, LANG, LC_*, DOCFS_* and the variables
    /// the configuration names; nothing else.
    func environment(from daemon: [String: String]) -> [String: String] {
        var environment = daemon.filter { name, _ in
            name == "PATH" || name == "LANG" || name.hasPrefix("LC_") || name.hasPrefix("DOCFS_") || passedVariables.contains(name)
        }
        if environment["PATH"] == nil { environment["PATH"] = "/usr/local/bin:/usr/bin:/bin" }
        return environment
    }

    /// Accepts `contents` or throws the validator's refusal (`CocoaError(.fileReadCorruptFile)`).
    public func validate(_ contents: Data, name: String?, contentType: UTType) throws {
        let run = try ValidatorRun(validator: self, name: name, contentType: contentType)
        let outcome = run.finish(feeding: contents)
        let program = command.first ?? executablePath
        switch outcome {
        case .exited(0, _): return
        case .exited(let status, let output):
            throw Self.refusal("refused by validator \(program) (exit status \(status))\(Self.quote(output))")
        case .signaled(let signal, let output):
            throw Self.refusal("validator \(program) was killed by signal \(signal)\(Self.quote(output))")
        case .timedOut:
            throw Self.refusal("validator \(program) did not finish within \(Self.seconds(timeout)) (time limit); it was killed and the save refused")
        case .lost(let reason):
            throw Self.refusal("the exit of validator \(program) could not be learned (\(reason)); the save is refused")
        }
    }

    static func refusal(_ reason: String) -> CocoaError {
        CocoaError(.fileReadCorruptFile, userInfo: [NSLocalizedFailureReasonErrorKey: reason])
    }

    private static func quote(_ output: String) -> String {
        let trimmed = output.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.isEmpty ? "" : ": " + trimmed
    }

    /// A time limit as messages show it: "5 s", "0.5 s".
    public static func seconds(_ value: Double) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }
}

/// One run of a validator: its pipes, its process, and the loop that feeds it the document while
/// collecting what it says, until it exits or its time is up.
private final class ValidatorRun {
    enum Outcome {
        case exited(Int32, String)
        case signaled(Int32, String)
        case timedOut
        /// The validator's exit could not be learned: the save is refused, never taken as accepted.
        case lost(String)
    }

    private let pid: pid_t
    private let processHandle: Int32
    private var input: Int32
    private var output: Int32
    private var errors: Int32
    private var collectedOutput = Data()
    private var collectedErrors = Data()
    private let deadline: Double

    init(validator: CommandValidator, name: String?, contentType: UTType) throws {
        var inputPipe: [Int32] = [-1, -1], outputPipe: [Int32] = [-1, -1], errorPipe: [Int32] = [-1, -1]
        // Standard input is a socket rather than a pipe so that writing to a validator that stopped
        // reading can be told not to raise SIGPIPE (MSG_NOSIGNAL), which would kill a library user
        // that has not ignored the signal as the daemon does.
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &inputPipe) == 0 else {
            throw SystemCallError.last("socketpair")
        }
        guard docfs_pipe_cloexec(&outputPipe) == 0 else {
            Self.closeAll(inputPipe)
            throw SystemCallError.last("pipe")
        }
        guard docfs_pipe_cloexec(&errorPipe) == 0 else {
            Self.closeAll(inputPipe + outputPipe)
            throw SystemCallError.last("pipe")
        }
        var environment = validator.environment(from: ProcessInfo.processInfo.environment)
        environment["DOCFS_NAME"] = name ?? ""
        environment["DOCFS_CONTENT_TYPE"] = contentType.identifier
        let arguments = validator.command.map { strdup($0) } + [nil]
        // Each variable as the bytes it stands for: DOCFS_NAME is the name's own bytes.
        let variables = FileSystemPath.cStringArray(environment.map { "\($0.key)=\($0.value)" })
        defer {
            arguments.forEach { free($0) }
            variables.forEach { free($0) }
        }
        // A root daemon runs it as the configured user, else as the user whose request (or whose
        // write) it judges; as root only for root's.
        let pid: pid_t
        if geteuid() == 0, let runAs = validator.user ?? Requester.current, runAs != Ownership(userID: 0, groupID: 0) {
            pid = docfs_spawn_validator_as(
                validator.executablePath, arguments, variables, inputPipe[0], outputPipe[1], errorPipe[1], runAs.userID, runAs.groupID)
        } else {
            pid = docfs_spawn_validator(validator.executablePath, arguments, variables, inputPipe[0], outputPipe[1], errorPipe[1])
        }
        let spawnErrno = errno
        close(inputPipe[0])
        close(outputPipe[1])
        close(errorPipe[1])
        guard pid > 0 else {
            Self.closeAll([inputPipe[1], outputPipe[0], errorPipe[0]])
            throw CommandValidator.refusal("validator \(validator.executablePath) could not be started: \(String(cString: strerror(spawnErrno)))")
        }
        self.pid = pid
        processHandle = docfs_pidfd_open(pid)
        input = inputPipe[1]
        output = outputPipe[0]
        errors = errorPipe[0]
        deadline = ChildProcesses.now() + validator.timeout
        for descriptor in [input, output, errors] {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        }
    }

    deinit {
        Self.closeAll([input, output, errors, processHandle])
    }

    func finish(feeding contents: Data) -> Outcome {
        contents.withUnsafeBytes { bytes in run(feeding: bytes) }
    }

    private func run(feeding bytes: UnsafeRawBufferPointer) -> Outcome {
        var written = 0
        if bytes.isEmpty { closeInput() }
        var exitStatus: Int32?
        while exitStatus == nil {
            let remaining = deadline - ChildProcesses.now()
            guard remaining > 0 else { return kill() }
            var watched: [pollfd] = []
            if input >= 0 { watched.append(pollfd(fd: input, events: Int16(POLLOUT), revents: 0)) }
            if output >= 0 { watched.append(pollfd(fd: output, events: Int16(POLLIN), revents: 0)) }
            if errors >= 0 { watched.append(pollfd(fd: errors, events: Int16(POLLIN), revents: 0)) }
            // Without a pidfd (kernels before 5.3) the loop looks for the exit every 10 ms instead.
            if processHandle >= 0 { watched.append(pollfd(fd: processHandle, events: Int16(POLLIN), revents: 0)) }
            let wait = processHandle >= 0 ? min(remaining * 1000 + 1, 60_000) : min(remaining * 1000 + 1, 10)
            let ready = poll(&watched, nfds_t(watched.count), Int32(wait))
            if ready < 0 && errno != EINTR { return kill() }
            for entry in watched where entry.revents != 0 {
                if entry.fd == input {
                    let chunk = min(bytes.count - written, 1 << 16)
                    let count = send(input, bytes.baseAddress.map { $0 + written }, chunk, Int32(MSG_NOSIGNAL))
                    if count > 0 { written += count }
                    // EPIPE: the validator stopped reading, which is its business; its exit status decides.
                    if written == bytes.count || (count < 0 && errno != EAGAIN && errno != EINTR) { closeInput() }
                } else if entry.fd == output {
                    drain(&output, into: &collectedOutput)
                } else if entry.fd == errors {
                    drain(&errors, into: &collectedErrors)
                } else if entry.fd == processHandle {
                    do { exitStatus = try waitForExit(blocking: true) } catch { return .lost("\(error)") }
                }
            }
            if processHandle < 0 {
                do { exitStatus = try waitForExit(blocking: false) } catch { return .lost("\(error)") }
            }
        }
        // What it wrote before exiting is still in the pipes (a child it left behind may hold them
        // open, so read only what is there).
        drain(&output, into: &collectedOutput)
        drain(&errors, into: &collectedErrors)
        guard let status = exitStatus else { return .lost("no exit status") }
        let said = collectedErrors.isEmpty ? collectedOutput : collectedErrors
        let text = String(decoding: said.prefix(CommandValidator.reasonLimit), as: UTF8.self)
        if status & 0x7F == 0 { return .exited((status >> 8) & 0xFF, text) }
        return .signaled(status & 0x7F, text)
    }

    /// The validator's wait status once it exited. With `DOCFS_TEST_HOOKS=DIR` and `DIR/validator-wait-fails`
    /// present, the child is reaped beforehand, so the wait fails as it would if anything else in
    /// the process had reaped it: a test of failing closed.
    private func waitForExit(blocking: Bool) throws(SystemCallError) -> Int32? {
        if let hooks = Self.testHooks, access(hooks + "/validator-wait-fails", F_OK) == 0 {
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
        }
        return try ChildProcesses.waitStatus(of: pid, blocking: blocking)
    }

    private static let testHooks = ProcessInfo.processInfo.environment["DOCFS_TEST_HOOKS"]

    private func kill() -> Outcome {
        Glibc.kill(-pid, SIGKILL)
        _ = try? ChildProcesses.waitStatus(of: pid)
        // What the validator started dies with it, but only once scheduled: wait (a little) until
        // its process group is empty, so a refusal at the time limit leaves nothing running.
        for _ in 0..<200 where Glibc.kill(-pid, 0) == 0 { usleep(5_000) }
        return .timedOut
    }

    private func closeInput() {
        if input >= 0 { close(input) }
        input = -1
    }

    /// Reads what is available; keeps the first `reasonLimit` bytes and discards the rest, so a
    /// chatty validator never blocks on a full pipe.
    private func drain(_ descriptor: inout Int32, into collected: inout Data) {
        guard descriptor >= 0 else { return }
        var buffer = [UInt8](repeating: 0, count: 1 << 14)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count > 0 {
                if collected.count < CommandValidator.reasonLimit { collected.append(contentsOf: buffer[..<count]) }
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count == 0 {
                close(descriptor)
                descriptor = -1
            }
            return
        }
    }

    private static func closeAll(_ descriptors: [Int32]) {
        for descriptor in descriptors where descriptor >= 0 { close(descriptor) }
    }
}
