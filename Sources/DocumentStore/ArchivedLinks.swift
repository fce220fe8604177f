import Glibc
import SystemSupport

/// How many of a file's names are the version archive's: kept on the file itself (its inode, which
/// all its names share) in `trusted.docfs.archived` (`user.docfs.archived` for a daemon that is not
/// root; the mount hides and refuses both). A file's other names are its hard links in the store,
/// which decide whether a save carries its number (see `DirectoryStore.identityToCarry`) and whether
/// a version's bytes are the archive's alone: names the archive holds must not count.
///
/// Raised after the archive links the file, lowered before it unlinks it: a crash in between
/// leaves the count low, which at worst gives a saved file a new number, never one another file has.
/// The count is read as a claim, never trusted past the file's own link count: a daemon that is
/// not root keeps it in `user.`, which the file's owner can set beside DocFS.
enum ArchivedLinks {
    static let attributeName = geteuid() == 0 ? "trusted.docfs.archived" : "user.docfs.archived"

    /// The names of a file with `status` that are not the archive's, given the count it carries.
    static func storeNames(of status: FileStatus, archived: UInt64) -> UInt64 {
        status.linkCount - min(status.linkCount, archived)
    }

    /// The count on the file at `target`.
    static func count(at target: AttributeTarget) -> UInt64 {
        NumberAttribute.read(at: target, name: attributeName) ?? 0
    }

    /// Adds `change` to the count (never below 0; 0 reads as no count at all).
    static func adjust(at target: AttributeTarget, by change: Int64) {
        let current = Int64(clamping: count(at: target))
        NumberAttribute.write(UInt64(max(0, current + change)), at: target, name: attributeName, exclusive: false)
    }

    static func count(of path: String) -> UInt64 {
        (try? AttributeTarget.at(path) { count(at: $0) }) ?? 0
    }

    static func set(_ path: String, to count: UInt64) {
        _ = try? AttributeTarget.at(path) { NumberAttribute.write(count, at: $0, name: attributeName, exclusive: false) }
    }

    static func adjust(_ path: String, by change: Int64) {
        _ = try? AttributeTarget.at(path) { adjust(at: $0, by: change) }
    }
}
