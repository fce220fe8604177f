import CCrypto
import Foundation
import Glibc
import SystemSupport

/// The default mirror folder of a PostgreSQL store at a mount point: `BASE/NAME`, NAME made of the
/// store's location and the mount point (letters, digits, `.` and `-` kept, any other character
/// `_`), as every DocFS before this named it. That replacement gives `/mnt/a b` and `/mnt/a_b`
/// one NAME, and two stores can collide so too; sharing a mirror, the second mount waited for the
/// first's and failed, or served from another store's content. So each mirror records whose it is
/// (`NAME/.docfs/mirror-of`: the store's identity and the mount point, as bytes), the first mount
/// to use a folder without a record claims it (one an earlier DocFS made included), and a mount
/// whose NAME another has claimed gets `NAME-HASH`, HASH from its own record's bytes.
enum MirrorFolder {
    static func path(base: String, name: String, owner: [UInt8]) -> String {
        let plain = base + "/" + name
        return claims(plain, for: owner) ? plain : plain + "-" + hashPrefix(of: owner)
    }

    /// Whether `folder` is `owner`'s: recorded so, or recorded as theirs now.
    private static func claims(_ folder: String, for owner: [UInt8]) -> Bool {
        let record = folder + "/.docfs/mirror-of"
        if let recorded = try? FileIO.readFile(record) { return Array(recorded) == owner }
        do {
            try Paths.makeDirectories(folder + "/.docfs", mode: 0o700)
            let descriptor = try FileIO.open(record, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode: 0o600)
            defer { FileIO.close(descriptor) }
            try FileIO.writeAll(descriptor, Data(owner), path: record)
            return true
        } catch let error as SystemCallError where error.errno == EEXIST {
            // Another mount recorded it meanwhile (an empty record: it is still writing it).
            return (try? FileIO.readFile(record)).map { Array($0) == owner } ?? false
        } catch {
            // No record can be made here (a read-only cache): the folder is used as before.
            return true
        }
    }

    /// The first 16 hex digits of the SHA-256 of `bytes`.
    private static func hashPrefix(of bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        _ = bytes.withUnsafeBytes { docfs_sha256($0.baseAddress, $0.count, &digest) }
        return digest.prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}
