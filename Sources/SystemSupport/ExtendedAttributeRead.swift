import Glibc

/// Reads an extended attribute's value, or a list of names, whose size is not known beforehand.
///
/// The call is first made into a buffer that nearly every value DocFS reads fits (a number, a
/// time, a uid, an ACL of a few entries, a list of a few names): one system call where asking the
/// size first took two. Only a larger value costs the size question, and then the read again, as
/// often as the value grows between the two (up to eight times). Through a FUSE mount each call is
/// a round trip to its daemon, so `docfs versions` of a folder and the daemon's own saves both feel
/// the difference.
enum ExtendedAttributeRead {
    /// The first buffer's size.
    static let firstGuess = 256

    /// `call(buffer, size)` is getxattr or listxattr on one file: with a buffer it fills it and
    /// returns the length, failing with ERANGE when the buffer is too small; with size 0 it
    /// returns the length the value has now.
    static func bytes(_ operation: String, path: String? = nil, _ call: (UnsafeMutableRawPointer?, Int) -> Int) throws -> [UInt8] {
        var size = firstGuess
        // A value that grows between each size and read, eight times over, is not read.
        for _ in 0..<8 {
            var value = [UInt8](repeating: 0, count: size)
            let read = value.withUnsafeMutableBytes { call($0.baseAddress, $0.count) }
            if read >= 0 {
                value.removeLast(value.count - read)
                return value
            }
            switch errno {
            case EINTR: continue
            case ERANGE:
                // Never 0: a buffer of size 0 asks the size again instead of reading the value
                // (an empty value since is read into one byte).
                size = max(try retryingOnInterrupt(operation, path: path) { call(nil, 0) }, 1)
            default: throw SystemCallError.last(operation, path: path)
            }
        }
        throw SystemCallError(errno: ERANGE, operation: operation, path: path)
    }

    /// The names a listxattr call returns (each NUL-terminated in `bytes`).
    static func names(_ bytes: [UInt8]) -> [String] {
        bytes.split(separator: 0).map { FileSystemPath.string(fromBytes: $0) }
    }
}
