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
enum ArchivedLinks {
    static let attributeName = geteuid() == 0 ? "trusted.docfs.archived" : "user.docfs.archived"

    /// The count on the file whose attribute path (see `DirectoryStore.withAttributePath`) is `path`.
    static func count(at path: UnsafePointer<CChar>) -> UInt64 {
        NumberAttribute.read(at: path, name: attributeName) ?? 0
    }

    /// Adds `change` to the count (never below 0).
    static func adjust(at path: UnsafePointer<CChar>, by change: Int64) {
        let current = Int64(clamping: count(at: path))
        // 0 reads as no count at all.
        NumberAttribute.write(UInt64(max(0, current + change)), at: path, name: attributeName, exclusive: false)
    }

    /// The count an attribute value holds (8 bytes, little-endian).
    static func number(_ bytes: [UInt8]) -> UInt64? {
        guard bytes.count == 8 else { return nil }
        return bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func count(of path: String) -> UInt64 {
        (try? FileSystemPath.at(path) { directory, name in
            DirectoryStore.withAttributePath(name: name, in: directory) { count(at: $0) }
        }) ?? 0
    }

    static func set(_ path: String, to count: UInt64) {
        _ = try? FileSystemPath.at(path) { directory, name in
            DirectoryStore.withAttributePath(name: name, in: directory) { NumberAttribute.write(count, at: $0, name: attributeName, exclusive: false) }
        }
    }

    static func adjust(_ path: String, by change: Int64) {
        _ = try? FileSystemPath.at(path) { directory, name in
            DirectoryStore.withAttributePath(name: name, in: directory) { adjust(at: $0, by: change) }
        }
    }
}
