import Glibc

/// A file descriptor closed when the last reference goes away, so a reply being spliced from it
/// on one thread cannot have it closed underneath by a release on another.
public final class OwnedDescriptor: Sendable {
    public let rawValue: Int32

    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    deinit { Glibc.close(rawValue) }

    public func status(path: String? = nil) throws -> FileStatus {
        try FileStatus.of(descriptor: rawValue, path: path)
    }
}
