import Glibc

/// Which process a thread belongs to. FUSE tells a request's thread ID, not its process ID, and a
/// program may write from one thread and close from another.
public enum ThreadGroup {
    /// The process (thread group) ID of `thread`, from `/proc/THREAD/status`; nil when the thread is
    /// gone or cannot be looked at.
    public static func leader(of thread: pid_t) -> pid_t? {
        guard thread > 0 else { return nil }
        let descriptor = open("/proc/\(thread)/status", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return nil }
        // "Name:\t…\nUmask:\t…\nState:\t…\nTgid:\t1234\n…"
        let text = buffer[0..<count]
        let key = Array("\nTgid:".utf8)
        guard let start = text.indices.first(where: { text[$0...].starts(with: key) }) else { return nil }
        var value: pid_t = 0
        var index = start + key.count
        while index < text.endIndex, text[index] == UInt8(ascii: "\t") || text[index] == UInt8(ascii: " ") { index += 1 }
        while index < text.endIndex, let digit = Optional(text[index]), digit >= 48 && digit <= 57 {
            value = value * 10 + pid_t(digit - 48)
            index += 1
        }
        return value > 0 ? value : nil
    }

    /// Whether `caller` is one of `threads` or a thread of the same process as one of them.
    public static func sameProcess(_ caller: pid_t, asAnyOf threads: Set<pid_t>) -> Bool {
        if threads.contains(caller) { return true }
        guard !threads.isEmpty, let process = leader(of: caller) else { return false }
        return threads.contains { leader(of: $0) == process || $0 == process }
    }
}
