import Glibc

/// An errno to reply with: what every operation throws to fail a request.
public struct FUSEError: Error, Equatable, CustomStringConvertible, Sendable {
    public let errno: Int32
    public init(_ errno: Int32) { self.errno = errno }

    public static let notPermitted = FUSEError(EPERM)
    public static let noEntry = FUSEError(ENOENT)
    public static let ioError = FUSEError(EIO)
    public static let badHandle = FUSEError(EBADF)
    public static let accessDenied = FUSEError(EACCES)
    public static let exists = FUSEError(EEXIST)
    public static let crossDevice = FUSEError(EXDEV)
    public static let notDirectory = FUSEError(ENOTDIR)
    public static let isDirectory = FUSEError(EISDIR)
    public static let busy = FUSEError(EBUSY)
    public static let stale = FUSEError(ESTALE)
    public static let invalid = FUSEError(EINVAL)
    public static let readOnlyFileSystem = FUSEError(EROFS)
    public static let notEmpty = FUSEError(ENOTEMPTY)
    public static let notSupported = FUSEError(ENOSYS)
    public static let noAttribute = FUSEError(ENODATA)
    public static let range = FUSEError(ERANGE)
    public static let nameTooLong = FUSEError(ENAMETOOLONG)
    public static let fileTooLarge = FUSEError(EFBIG)

    public var description: String { String(cString: strerror(errno)) }
}
