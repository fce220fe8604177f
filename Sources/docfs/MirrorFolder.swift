import DocumentStore
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
        if claims(plain, for: owner) { return plain }
        // A plain name can end as a hashed one does: that folder is checked too, and past it the
        // whole hash names the mirror.
        let hash = SHA256Hex.of(owner)
        let hashed = plain + "-" + hash.prefix(16)
        return claims(hashed, for: owner) ? hashed : plain + "-" + hash
    }

    /// Whether `folder` is `owner`'s: recorded so, or recorded as theirs now. The record is written
    /// whole beside it and linked into place, so it is there whole or not at all.
    private static func claims(_ folder: String, for owner: [UInt8]) -> Bool {
        let record = folder + "/.docfs/mirror-of"
        if let recorded = try? FileIO.readFile(record) { return Array(recorded) == owner }
        let draft = record + ".\(getpid())"
        do {
            try Paths.makeDirectories(folder + "/.docfs", mode: 0o700)
            defer { Paths.remove(draft) }
            try FileIO.writeFile(draft, Data(owner), mode: 0o600)
            try Paths.makeHardLink(record, to: draft)
            return true
        } catch let error as SystemCallError where error.errno == EEXIST {
            // Another mount recorded it meanwhile.
            return (try? FileIO.readFile(record)).map { Array($0) == owner } ?? false
        } catch {
            // No record can be made here (a read-only cache): the folder is used as before.
            return true
        }
    }
}
