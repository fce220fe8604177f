import Foundation
import Glibc
import SystemSupport

/// When a stored item was saved through DocFS, and by whom: kept in an extended attribute of the
/// item itself (`trusted.docfs.saved` for a root daemon, `user.docfs.saved` otherwise; the mount
/// hides and refuses both), so it travels with the file into the version archive when a later save
/// replaces it, and no other file has to be written or kept in step.
///
/// Layout: the time in nanoseconds since the epoch (UInt64), then the saver's uid (UInt32), both
/// little-endian, then one byte of `unreachable` (bit 0 the group's, bit 1 others'; a record an
/// earlier DocFS wrote ends before it). An item without one (made beside DocFS, or before
/// versions) is dated by its modification time and has no known saver.
public struct SaveRecord: Sendable, Equatable {
    public var time: timespec
    public var userID: uid_t?
    /// The permission bits of the document that its folders kept from others (0o007) and from its
    /// group (0o070) when it was saved: a folder on the way they could not search. A version never
    /// gives them (`VersionsView`), so opening a private folder later opens none of the versions
    /// saved while it was closed — a version is never easier to reach than its document was.
    public var unreachable: mode_t = 0
    /// Whether `unreachable` was found out (not a record an earlier DocFS wrote, nor one made up
    /// for a file without any): where not, a version is judged by its folders when it is kept.
    public var knowsReach: Bool

    /// `unreachable` nil: not known.
    public init(time: timespec, userID: uid_t?, unreachable: mode_t? = nil) {
        self.time = time
        self.userID = userID
        self.unreachable = (unreachable ?? 0) & 0o077
        knowsReach = unreachable != nil
    }

    public static func == (first: SaveRecord, second: SaveRecord) -> Bool {
        first.time.tv_sec == second.time.tv_sec && first.time.tv_nsec == second.time.tv_nsec && first.userID == second.userID
            && first.unreachable == second.unreachable && first.knowsReach == second.knowsReach
    }

    /// The attribute's name for this daemon: the namespace only root can read and set where it runs as root.
    public static let attributeName = geteuid() == 0 ? "trusted.docfs.saved" : "user.docfs.saved"

    public static func now(by userID: uid_t, unreachable: mode_t? = nil) -> SaveRecord {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return SaveRecord(time: now, userID: userID, unreachable: unreachable)
    }

    var bytes: [UInt8] {
        let nanoseconds = UInt64(max(0, time.tv_sec)) &* 1_000_000_000 &+ UInt64(max(0, time.tv_nsec))
        var result = withUnsafeBytes(of: nanoseconds.littleEndian, Array.init)
        result += withUnsafeBytes(of: (userID ?? UInt32.max).littleEndian, Array.init)
        // Written only where known: an unknown reach is found out again when the version is kept.
        if knowsReach { result.append((unreachable & 0o070 != 0 ? 1 : 0) | (unreachable & 0o007 != 0 ? 2 : 0)) }
        return result
    }

    /// Decodes the attribute's value; nil for anything that is not exactly a record. A 13th byte
    /// with bits no DocFS writes (one from a later DocFS, or made by hand) closes both classes.
    init?(bytes: [UInt8]) {
        guard bytes.count == 12 || bytes.count == 13 else { return nil }
        knowsReach = bytes.count == 13
        if bytes.count == 13 {
            unreachable = bytes[12] & ~3 != 0 ? 0o077 : (bytes[12] & 1 != 0 ? 0o070 : 0) | (bytes[12] & 2 != 0 ? 0o007 : 0)
        }
        var nanoseconds: UInt64 = 0
        var user: UInt32 = 0
        for index in (0..<8).reversed() { nanoseconds = nanoseconds << 8 | UInt64(bytes[index]) }
        for index in (8..<12).reversed() { user = user << 8 | UInt32(bytes[index]) }
        time = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        userID = user == UInt32.max ? nil : user
    }

    /// The record of the item at `path` (a whole path, not followed if a link); nil if it has none.
    static func read(at path: String) -> SaveRecord? {
        (try? Paths.extendedAttribute(path, name: attributeName)).flatMap { SaveRecord(bytes: $0) }
    }

    /// The record of an open file; nil if it has none.
    static func read(from file: OwnedDescriptor) -> SaveRecord? {
        (try? file.extendedAttribute(attributeName)).flatMap { SaveRecord(bytes: $0) }
    }

    /// Writes the record onto the item at `path`. Whether it was written.
    @discardableResult
    func write(at path: String) -> Bool { (try? writeOrThrow(at: path)) != nil }

    /// `write(at:)`, throwing why it could not.
    func writeOrThrow(at path: String) throws {
        let value = bytes
        try value.withUnsafeBytes { try Paths.setExtendedAttribute(path, name: Self.attributeName, value: $0, flags: 0) }
    }

    /// Whether the item's content may have changed since this record was written (its modification
    /// time is later): written in place beside DocFS, say. Who could reach it then is not known.
    func predates(_ status: FileStatus) -> Bool {
        let modified = status.modificationTime
        return modified.tv_sec > time.tv_sec || (modified.tv_sec == time.tv_sec && modified.tv_nsec > time.tv_nsec)
    }
}
