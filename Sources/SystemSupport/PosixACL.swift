/// A POSIX ACL as Linux keeps it in `system.posix_acl_access`: a 4-byte header (version 2), then
/// entries of a 2-byte tag, a 2-byte permission and a 4-byte id, all little-endian. An attribute
/// of the store is anyone's bytes: anything that is not exactly that is no ACL.
public struct PosixACL: Sendable {
    public static let accessAttribute = "system.posix_acl_access"

    public static let userObject: UInt16 = 0x01
    public static let user: UInt16 = 0x02
    public static let groupObject: UInt16 = 0x04
    public static let group: UInt16 = 0x08
    public static let mask: UInt16 = 0x10
    public static let other: UInt16 = 0x20

    public struct Entry: Sendable {
        /// Where the entry starts in `bytes`: its permission is the two bytes after the tag's.
        public let offset: Int
        public let tag: UInt16
        public let permissions: UInt16
    }

    public let bytes: [UInt8]
    public let entries: [Entry]

    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 4, (bytes.count - 4) % 8 == 0, bytes[0] == 2, bytes[1] == 0, bytes[2] == 0, bytes[3] == 0 else { return nil }
        self.bytes = bytes
        entries = stride(from: 4, to: bytes.count, by: 8).map { offset in
            Entry(offset: offset, tag: UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8,
                  permissions: UInt16(bytes[offset + 2]) | UInt16(bytes[offset + 3]) << 8)
        }
    }

    /// The ACL with the permissions of each entry `closes` picks set to none.
    public func closing(_ closes: (Entry) -> Bool) -> [UInt8] {
        var result = bytes
        for entry in entries where closes(entry) {
            result[entry.offset + 2] = 0
            result[entry.offset + 3] = 0
        }
        return result
    }
}
