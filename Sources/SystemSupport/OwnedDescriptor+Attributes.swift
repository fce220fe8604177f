import CSystemShims
import Glibc

/// Attributes of an open file, by its descriptor: what a file unlinked while open still answers to,
/// as on a local disk.
extension OwnedDescriptor {
    public func extendedAttribute(_ name: String) throws -> [UInt8] {
        try FileSystemPath.withCString(name) { attribute in
            try ExtendedAttributeRead.bytes("fgetxattr") { fgetxattr(rawValue, attribute, $0, $1) }
        }
    }

    public func setExtendedAttribute(_ name: String, value: UnsafeRawBufferPointer, flags: Int32) throws {
        try FileSystemPath.withCString(name) { attribute in
            try retryingOnInterrupt("fsetxattr") { fsetxattr(rawValue, attribute, value.baseAddress, value.count, flags) }
        }
    }

    public func extendedAttributeNames() throws -> [String] {
        ExtendedAttributeRead.names(try ExtendedAttributeRead.bytes("flistxattr") { flistxattr(rawValue, $0?.assumingMemoryBound(to: CChar.self), $1) })
    }

    public func removeExtendedAttribute(_ name: String) throws {
        try FileSystemPath.withCString(name) { attribute in
            try retryingOnInterrupt("fremovexattr") { fremovexattr(rawValue, attribute) }
        }
    }

    public func setPermissions(_ mode: mode_t) throws {
        try retryingOnInterrupt("fchmod") { fchmod(rawValue, mode & 0o7777) }
    }

    public func setOwner(userID: uid_t, groupID: gid_t) throws {
        try retryingOnInterrupt("fchown") { fchown(rawValue, userID, groupID) }
    }

    /// `access` and `modification` as futimens takes them (UTIME_NOW and UTIME_OMIT included).
    public func setTimes(access: timespec, modification: timespec) throws {
        var times = [access, modification]
        try retryingOnInterrupt("futimens") { futimens(rawValue, &times) }
    }
}
