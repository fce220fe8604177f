import DocumentModel
import FUSE
import Glibc
import SystemSupport

/// A one-line account of an error for the log: a document type's own reason when it gives one
/// ("not valid JSON: line 1, column 11: …"), else the Cocoa code, or the failed call.
func describe(_ error: any Error) -> String {
    if let cocoa = error as? CocoaError {
        if let reason = cocoa.userInfo[NSLocalizedFailureReasonErrorKey] as? String { return reason }
        return "CocoaError.\(cocoaCodeName(cocoa.code))"
    }
    return String(describing: error)
}

private func cocoaCodeName(_ code: CocoaError.Code) -> String {
    switch code {
    case .fileReadCorruptFile: "fileReadCorruptFile"
    case .fileReadNoSuchFile: "fileReadNoSuchFile"
    case .fileReadNoPermission: "fileReadNoPermission"
    case .fileReadUnknown: "fileReadUnknown"
    case .fileWriteUnknown: "fileWriteUnknown"
    case .fileWriteNoPermission: "fileWriteNoPermission"
    case .fileWriteOutOfSpace: "fileWriteOutOfSpace"
    default: "code \(code.rawValue)"
    }
}

extension FUSEError {
    /// The errno to reply with for a store failure: the call's own errno, else EIO.
    init(_ error: any Error) {
        if let fuse = error as? FUSEError {
            self = fuse
        } else if let system = error as? SystemCallError {
            self.init(system.errno)
        } else {
            self = .ioError
        }
    }
}
