import CSystemShims
import Glibc

/// With `auto_unmount`, fusermount3 stays running beside the daemon and unmounts when the daemon's
/// end of the socket between them closes, but only if the mount's connection is gone by then: it
/// opens the mount point and unmounts only when that fails with ENOTCONN. A process that dies lets
/// go of its descriptors one after another (recent kernels from the highest number down), and
/// libfuse numbers that socket just above /dev/fuse. So fusermount3 could see the socket close,
/// open the mount point while /dev/fuse was still held, get ECONNABORTED when it was let go, and
/// leave a dead mount behind (2 of 60 SIGKILLs on a loaded machine). Once the socket is let go
/// after every descriptor, the connection is always gone before fusermount3 looks.
enum AutoUnmountSocket {
    /// The descriptors open now, from /proc/self/fd (the listing's own descriptor among them).
    static func openDescriptors() -> Set<Int32> {
        guard let listing = opendir("/proc/self/fd") else { return [] }
        defer { closedir(listing) }
        var descriptors: Set<Int32> = []
        while let entry = readdir(listing) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let descriptor = Int32(name) { descriptors.insert(descriptor) }
        }
        return descriptors
    }

    /// After a mount: finds the socket libfuse kept for fusermount3 (the one Unix stream socket
    /// opened since `before` whose peer this process made) and has it let go last. False when
    /// there is no such socket, or more than one.
    static func releaseLast(openedSince before: Set<Int32>) -> Bool {
        let candidates = openDescriptors().subtracting(before).filter { docfs_is_socket_paired_with_self($0) == 1 }
        guard candidates.count == 1, let socket = candidates.first else { return false }
        return docfs_release_after_every_descriptor(socket) >= 0
    }
}
