import CSystemShims
import DocumentModel
import Glibc

/// The helper side of `ParserSandbox`: a process that gives up every privilege, then answers checks
/// read from its standard input (a socket to the daemon) until that input ends.
public enum ParserHelper {
    /// Restricts this process, then serves; returns the exit status (0 at the end of input).
    public static func serve(memoryLimit: Int) -> Int32 {
        if let problem = restrict(memoryLimit: memoryLimit) {
            let message = "docfs parser helper: \(problem)\n"
            _ = message.withCString { Glibc.write(2, $0, strlen($0)) }
            return 1
        }
        while true {
            guard let header = read(Helper.requestHeaderSize) else { return 0 }
            let length = header[8..<16].reversed().reduce(0) { $0 << 8 | UInt64($1) }
            guard let check = ParserCheck(rawValue: header[0]), length <= UInt64(Int.max), let bytes = read(Int(length)) else { return 1 }
            let verdict = check.evaluate(Data(bytes))
            let (status, count, reason): (UInt8, Int64, [UInt8]) = switch verdict {
            case .accepted(let count): (0, Int64(count), [])
            case .refused(let reason): (1, 0, Array(reason.utf8))
            }
            var answer = [UInt8](repeating: 0, count: Helper.answerHeaderSize)
            answer[0] = status
            withUnsafeBytes(of: count.littleEndian) { answer.replaceSubrange(8..<16, with: $0) }
            withUnsafeBytes(of: UInt64(reason.count).littleEndian) { answer.replaceSubrange(16..<24, with: $0) }
            guard write(answer + reason) else { return 1 }
        }
    }

    /// Dies with the daemon, gains no privileges, dumps no core, stays within `memoryLimit` bytes of
    /// address space, and runs as nobody when started as root. Returns what failed, if anything.
    private static func restrict(memoryLimit: Int) -> String? {
        let parent = getppid()
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        var memory = rlimit(rlim_cur: rlim_t(memoryLimit), rlim_max: rlim_t(memoryLimit))
        guard setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &noCore) == 0, setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &memory) == 0 else {
            return "setrlimit: \(String(cString: strerror(errno)))"
        }
        if geteuid() == 0 {
            let nobody = getpwnam("nobody")
            let uid = nobody?.pointee.pw_uid ?? 65534
            let gid = nobody?.pointee.pw_gid ?? 65534
            guard setgroups(0, nil) == 0, setgid(gid) == 0, setuid(uid) == 0 else { return "dropping privileges: \(String(cString: strerror(errno)))" }
            // Root cannot be regained.
            guard setuid(0) != 0 else { return "still able to become root" }
        }
        // After the change of user, which clears the parent-death signal; a daemon that died
        // before it was set is noticed by the parent having changed.
        guard docfs_restrict_helper() == 0 else { return "prctl: \(String(cString: strerror(errno)))" }
        guard getppid() == parent else { return "the daemon that started this helper is gone" }
        return nil
    }

    /// Exactly `size` bytes of standard input; nil at its end or on an error.
    private static func read(_ size: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: size)
        var offset = 0
        while offset < size {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(0, $0.baseAddress.map { $0 + offset }, size - offset) }
            if count > 0 {
                offset += count
            } else if count == 0 || errno != EINTR {
                return nil
            }
        }
        return buffer
    }

    private static func write(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(0, $0.baseAddress.map { $0 + offset }, bytes.count - offset) }
            if count > 0 {
                offset += count
            } else if count < 0 && errno != EINTR {
                return false
            }
        }
        return true
    }
}
