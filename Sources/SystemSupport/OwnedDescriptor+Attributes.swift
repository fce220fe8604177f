import CSystemShims
import Glibc

/// Attributes of an open file, by its descriptor: what a file unlinked while open still answers to,
/// as on a local disk.
extension OwnedDescriptor {
    public func extendedAttribute(_ name: String) throws -> [UInt8] {
        try FileSystemPath.withCString(name) { attribute in
            while true {
                let size = try retryingOnInterrupt("fgetxattr") { fgetxattr(rawValue, attribute, nil, 0) }
                var value = [UInt8](repeating: 0, count: size)
                let read = fgetxattr(rawValue, attribute, &value, size)
                if read >= 0 { return Array(value[0..<read]) }
                if errno != ERANGE { throw SystemCallError.last("fgetxattr") }
            }
        }
    }

    public func setExtendedAttribute(_ name: String, value: UnsafeRawBufferPointer, flags: Int32) throws {
        try FileSystemPath.withCString(name) { attribute in
            try retryingOnInterrupt("fsetxattr") { fsetxattr(rawValue, attribute, value.baseAddress, value.count, flags) }
        }
    }

    public func extendedAttributeNames() throws -> [String] {
        while true {
            let size = try retryingOnInterrupt("flistxattr") { flistxattr(rawValue, nil, 0) }
            if size == 0 { return [] }
            var buffer = [CChar](repeating: 0, count: size)
            let read = flistxattr(rawValue, &buffer, size)
            if read >= 0 { return buffer[0..<read].split(separator: 0).map { FileSystemPath.string(fromBytes: $0.map { UInt8(bitPattern: $0) }) } }
            if errno != ERANGE { throw SystemCallError.last("flistxattr") }
        }
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
