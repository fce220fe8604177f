import Glibc

/// A failed system call: the errno, the call, and the path it was about, so a log line or a thrown
/// error always says which file and what went wrong.
public struct SystemCallError: Error, CustomStringConvertible, Sendable {
    public let errno: Int32
    public let operation: String
    public let path: String?

    public init(errno: Int32, operation: String, path: String? = nil) {
        self.errno = errno
        self.operation = operation
        self.path = path
    }

    /// The file system had no room for what was asked (ENOSPC), or the caller's quota none (EDQUOT).
    public var isOutOfSpace: Bool { Self.isOutOfSpace(errno) }

    public static func isOutOfSpace(_ errno: Int32) -> Bool { errno == ENOSPC || errno == EDQUOT }

    /// The error for the `errno` the last failed call left.
    public static func last(_ operation: String, path: String? = nil) -> SystemCallError {
        SystemCallError(errno: Glibc.errno, operation: operation, path: path)
    }

    public var description: String {
        let reason = String(cString: strerror(errno))
        if let path { return "\(operation) \(path): \(reason)" }
        return "\(operation): \(reason)"
    }
}

/// Retries a call that failed with EINTR; returns its result or throws its errno.
@discardableResult
public func retryingOnInterrupt<T: BinaryInteger>(
    _ operation: String, path: String? = nil, _ call: () -> T
) throws -> T {
    while true {
        let result = call()
        if result >= 0 { return result }
        if Glibc.errno != EINTR { throw SystemCallError.last(operation, path: path) }
    }
}
