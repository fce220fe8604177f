import Glibc

/// systemd's readiness protocol (sd_notify(3)): one datagram with `READY=1`, `STOPPING=1`, … to the
/// socket named by `$NOTIFY_SOCKET` (a path, or an abstract name starting with `@`). Without the
/// variable there is no service manager to tell, and nothing is sent.
enum SystemdNotification {
    static func send(_ state: String) {
        guard let socketName = getenv("NOTIFY_SOCKET").map({ String(cString: $0) }), !socketName.isEmpty else { return }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketName.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.enumerated() { buffer[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count)
        _ = state.withCString { message in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(descriptor, message, strlen(message), 0, $0, length)
                }
            }
        }
    }
}
