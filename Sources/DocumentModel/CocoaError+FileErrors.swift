import Foundation
import SystemSupport

extension CocoaError {
    /// The `CocoaError` Foundation would throw for a failed read, carrying the URL and the errno.
    static func reading(_ error: any Error, url: URL) -> CocoaError {
        if let cocoa = error as? CocoaError { return cocoa }
        let code: CocoaError.Code = switch (error as? SystemCallError)?.errno {
        case ENOENT, ENOTDIR: .fileReadNoSuchFile
        case EACCES, EPERM: .fileReadNoPermission
        case ENAMETOOLONG: .fileReadInvalidFileName
        case EFBIG, ENOMEM: .fileReadTooLarge
        default: .fileReadUnknown
        }
        return CocoaError(code, userInfo: userInfo(error, url: url))
    }

    /// The `CocoaError` Foundation would throw for a failed write.
    static func writing(_ error: any Error, url: URL) -> CocoaError {
        if let cocoa = error as? CocoaError { return cocoa }
        let code: CocoaError.Code = switch (error as? SystemCallError)?.errno {
        case ENOENT, ENOTDIR: .fileNoSuchFile
        case EACCES, EPERM: .fileWriteNoPermission
        case ENOSPC, EDQUOT: .fileWriteOutOfSpace
        case EROFS: .fileWriteVolumeReadOnly
        case EEXIST: .fileWriteFileExists
        case ENAMETOOLONG: .fileWriteInvalidFileName
        default: .fileWriteUnknown
        }
        return CocoaError(code, userInfo: userInfo(error, url: url))
    }

    private static func userInfo(_ error: any Error, url: URL) -> [String: Any] {
        var info: [String: Any] = [NSURLErrorKey: url, NSFilePathErrorKey: url.path]
        if let system = error as? SystemCallError {
            info[NSUnderlyingErrorKey] = NSError(domain: NSPOSIXErrorDomain, code: Int(system.errno))
            info[NSLocalizedFailureReasonErrorKey] = system.description
        }
        return info
    }
}
