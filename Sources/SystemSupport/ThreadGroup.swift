import Glibc

/// Which process a thread belongs to. FUSE tells a request's thread ID, not its process ID, and a
/// program may write from one thread and close from another.
public enum ThreadGroup {
    /// The process (thread group) ID of `thread`, from `/proc/THREAD/status`; nil when the thread is
    /// gone or cannot be looked at.
    public static func leader(of thread: pid_t) -> pid_t? {
        guard let value = numbers(after: "Tgid:", inStatusOf: thread, capacity: 1024)?.first, value > 0 else { return nil }
        return pid_t(value)
    }

    /// Whether `thread`'s process has `group` among its supplementary groups (`/proc/THREAD/status`);
    /// false when the thread is gone.
    public static func hasSupplementaryGroup(_ thread: pid_t, _ group: gid_t) -> Bool {
        numbers(after: "Groups:", inStatusOf: thread, capacity: 8192)?.contains(UInt64(group)) ?? false
    }

    /// The decimal numbers on the line of `/proc/THREAD/status` that starts with `key`
    /// ("Tgid:\t1234", "Groups:\t4 24 27").
    private static func numbers(after key: String, inStatusOf thread: pid_t, capacity: Int) -> [UInt64]? {
        guard thread > 0 else { return nil }
        let descriptor = open("/proc/\(thread)/status", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: capacity)
        let count = read(descriptor, &buffer, buffer.count)
        guard count > 0 else { return nil }
        let text = buffer[0..<count]
        let line = Array(("\n" + key).utf8)
        guard let start = text.indices.first(where: { text[$0...].starts(with: line) }) else { return nil }
        var values: [UInt64] = []
        var current: UInt64?
        var index = start + line.count
        while index < text.endIndex, text[index] != UInt8(ascii: "\n") {
            let byte = text[index]
            if byte >= 48 && byte <= 57 {
                current = (current ?? 0) &* 10 &+ UInt64(byte - 48)
            } else if let value = current {
                values.append(value)
                current = nil
            }
            index += 1
        }
        // A line cut off by the end of the buffer ends in a number that may be cut too.
        let lineEnded = index < text.endIndex || count < capacity
        if let current, lineEnded { values.append(current) }
        return values
    }

    /// Whether `caller` is one of `threads` or a thread of the same process as one of them.
    public static func sameProcess(_ caller: pid_t, asAnyOf threads: Set<pid_t>) -> Bool {
        if threads.contains(caller) { return true }
        guard !threads.isEmpty, let process = leader(of: caller) else { return false }
        return threads.contains { leader(of: $0) == process || $0 == process }
    }
}
