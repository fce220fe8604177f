import ArgumentParser
import Glibc

/// The `-o` options of a mount, sorted: DocFS's own, FUSE's (passed on), and those meant for
/// mount(8), fstab or systemd, which `mount.fuse3` hands every helper and which are ignored here.
struct MountOptions {
    var readOnly = false
    var allowOther = false
    var debug = false
    /// bindfs/sshfs `uid=`, `gid=`, `umask=`: the owner and permissions every file shows.
    var userID: uid_t?
    var groupID: gid_t?
    var umask: mode_t?
    var fileSystemName: String?
    /// `source=STORE`: the store, when the first argument only names the mount (libfuse's
    /// examples and xfstests mount so: `mount -t fuse.docfs NAME MNT -o source=STORE`).
    var source: String?
    /// `remount` (what `mount -o remount,ro MNT` runs): change a mounted DocFS in place.
    var remount = false
    var maxRead: UInt32?
    /// `config=FILE`: the type configuration, for fstab lines (which cannot pass `--config`).
    var configPath: String?
    /// `metrics=ADDRESS:PORT`: `--metrics`, for fstab lines.
    var metrics: String?
    /// `cache_directory=DIR`: `--cache-directory`, for fstab lines.
    var cacheDirectory: String?
    /// `cache_root=DIR`: where mirrors are made when no folder is given, one per store and mount
    /// point (default /var/cache/docfs): on a disk of their own, say.
    var cacheRoot: String?
    /// Passed to FUSE as given.
    var forFUSE: [String] = []
    var ignored: [String] = []

    /// Options for mount(8), fstab and systemd that mean nothing to a FUSE file system.
    static let forMount: Set<String> = ["defaults", "auto", "noauto", "user", "users", "nouser", "owner", "group", "nofail", "_netdev"]

    init(_ arguments: [String]) throws {
        for option in arguments.flatMap({ Self.split($0, at: ",") }) where !option.isEmpty {
            let (key, value) = Self.split(option, at: "=", maxSplits: 1).pair
            switch key {
            case "ro": readOnly = true
            // Last one wins: on a remount, mount(8) puts fstab's options before the command line's.
            case "rw": readOnly = false
            case "allow_other": allowOther = true
            case "debug": debug = true
            case "uid": userID = try Self.number(option, value, radix: 10).map { uid_t($0) }
            case "gid": groupID = try Self.number(option, value, radix: 10).map { gid_t($0) }
            case "umask": umask = try Self.number(option, value, radix: 8).map { mode_t($0) & 0o777 }
            case "fsname": fileSystemName = value
            case "remount": remount = true
            case "source":
                guard let value, !value.isEmpty else { throw ValidationError("-o source: needs a store (source=/srv/notes)") }
                source = value
            case "config":
                guard let value, !value.isEmpty else { throw ValidationError("-o config: needs a file (config=/etc/docfs/notes.toml)") }
                configPath = value
            case "metrics":
                guard let value, !value.isEmpty else { throw ValidationError("-o metrics: needs an address and port (metrics=127.0.0.1:9464)") }
                metrics = value
            case "cache_directory":
                guard let value, !value.isEmpty else { throw ValidationError("-o cache_directory: needs a folder (cache_directory=/srv/mirror)") }
                cacheDirectory = value
            case "cache_root":
                guard let value, value.utf8.first == UInt8(ascii: "/") else { throw ValidationError("-o cache_root: needs an absolute folder (cache_root=/srv/docfs-mirrors)") }
                cacheRoot = value
            case "max_read":
                maxRead = try Self.number(option, value, radix: 10)
                forFUSE.append(option)
            case _ where Self.forMount.contains(key) || key.hasPrefix("x-") || key == "comment":
                ignored.append(option)
            default:
                forFUSE.append(option)
            }
        }
    }

    /// `options` without `source=`, for a daemon given the store itself.
    static func removingSource(_ options: [String]) -> [String] {
        options.map { split($0, at: ",").filter { !$0.utf8.starts(with: "source=".utf8) }.joined(separator: ",") }.filter { !$0.isEmpty }
    }

    /// `text` split at each `separator`, by bytes as libfuse splits: a comma followed by a
    /// combining mark is one `Character`, which `String.split` would not split at.
    private static func split(_ text: String, at separator: Unicode.Scalar, maxSplits: Int = .max) -> [String] {
        text.utf8.split(separator: UInt8(ascii: separator), maxSplits: maxSplits).map { String(Substring($0)) }
    }

    private static func number(_ option: String, _ value: String?, radix: Int) throws -> UInt32? {
        guard let value, let number = UInt32(value, radix: radix) else {
            throw ValidationError("-o \(option): needs a number\(radix == 8 ? " in octal (umask=022)" : "")")
        }
        return number
    }
}

private extension Array where Element == String {
    var pair: (String, String?) { (self.first ?? "", count > 1 ? self[1] : nil) }
}
