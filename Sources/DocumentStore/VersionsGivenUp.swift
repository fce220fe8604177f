import Foundation
import Glibc
import Synchronization
import SystemSupport

/// The versions a full store gave up, kept where `docfs status` and `docfs versions` show them
/// (`.docfs/versions-given-up`, JSON lines): each version dropped to make room for a write, and
/// each save or removal whose version could not be kept at all. Versions are purgeable space, like
/// APFS's local snapshots: a save that a plain disk of the same size takes never fails for them,
/// and nothing is given up without a word.
public final class VersionsGivenUp: Sendable {
    public struct Event: Codable, Sendable {
        public enum Kind: String, Codable, Sendable {
            /// A kept version was dropped to make room for a write.
            case dropped
            /// A save or removal kept no version: the store had no room for it.
            case notKept = "not-kept"
        }
        public let kind: Kind
        /// The document's store path (in `FileSystemPath`'s encoding).
        public let document: String
        /// When the version was saved (dropped), or when the change that could not keep it was made.
        public let time: Date
        /// The space it gave back (dropped), 0 otherwise.
        public let bytes: Int64
        /// Who owned what was given up (the version's file, or the document whose change kept none):
        /// the one user besides root who is told of it through the mount. Nil in a record an earlier
        /// DocFS wrote.
        public let owner: uid_t?
    }

    private let path: String
    private let lock = OrderedMutex(.leaf, ())
    /// The events last read, with the record's size and modification time then: the mount answers
    /// every reader of a document who asks (`user.docfs.versions-given-up`) from this, reading the
    /// record again only once it changed.
    private let lastRead = OrderedMutex<(size: Int64, modified: timespec, events: [Event])?>(.leaf, nil)
    /// The record is trimmed to its newer half past this size.
    static let largest = 1 << 20

    /// The attribute through which a mount tells a document's reader what was given up of their
    /// own versions of it (JSON lines, as the record holds them).
    public static let attributeName = "user.docfs.versions-given-up"

    init(path: String) { self.path = path }

    /// The record of the directory store at `root` (readable by root: it is in the private area).
    public convenience init(storeRoot root: String) {
        self.init(path: root + "/" + DirectoryStore.privateAreaName + "/versions-given-up")
    }

    /// Makes the record, empty, where there is none: at mount, so that a store that later runs out
    /// of inodes can still say what it gave up (appending needs no new inode).
    func makeRecord() {
        lock.withLock { _ in
            if let descriptor = try? FileIO.open(path, O_WRONLY | O_CREAT | O_APPEND, mode: 0o600) { FileIO.close(descriptor) }
        }
    }

    /// Adds `events`. A record that cannot be written (the disk is full to the last block) leaves
    /// only the log's line.
    func record(_ events: [Event]) {
        guard !events.isEmpty else { return }
        let lines = Self.lines(events)
        lock.withLock { _ in
            if let size = try? FileStatus.of(path: path).size, size > Self.largest { trimToNewerHalf() }
            guard let descriptor = try? FileIO.open(path, O_WRONLY | O_CREAT | O_APPEND, mode: 0o600) else { return }
            defer { FileIO.close(descriptor) }
            try? FileIO.writeAll(descriptor, lines)
        }
    }

    /// The events recorded, oldest first: those in the record's last 2 MiB.
    public func events() -> [Event] {
        // Read by root from a store anyone may own: no link followed (FileIO.open adds
        // O_NOFOLLOW), a FIFO not waited on, nothing but a regular file read.
        guard let descriptor = try? FileIO.open(path, O_RDONLY | O_NONBLOCK) else { return [] }
        defer { FileIO.close(descriptor) }
        guard let status = try? FileStatus.of(descriptor: descriptor), status.kind == .regular else { return [] }
        if let last = lastRead.withLock({ $0 }), last.size == status.size,
           last.modified.tv_sec == status.modificationTime.tv_sec, last.modified.tv_nsec == status.modificationTime.tv_nsec
        {
            return last.events
        }
        let length = min(Int(status.size), Self.largest * 2)
        var data = Data(count: length)
        let read = data.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, length, off_t(Int(status.size) - length)) }
        guard read == length else { return [] }
        // A read that starts inside a line drops that line's end.
        if length < Int(status.size), let newline = data.firstIndex(of: 0x0A) { data = data.suffix(from: data.index(after: newline)) }
        let events = Self.events(fromLines: data)
        lastRead.withLock { $0 = (status.size, status.modificationTime, events) }
        return events
    }

    /// `events` as the record holds them: a JSON object a line.
    public static func lines(_ events: [Event]) -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return events.compactMap { try? encoder.encode($0) }.reduce(into: Data()) { $0 += $1 + Data([0x0A]) }
    }

    /// The events in `lines` (see `lines(_:)`); a line that is not one is passed by.
    public static func events(fromLines lines: Data) -> [Event] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return lines.split(separator: 0x0A).compactMap { try? decoder.decode(Event.self, from: Data($0)) }
    }

    private func trimToNewerHalf() {
        let all = events()
        let data = Self.lines(Array(all.suffix(from: all.count / 2)))
        let temporary = FileIO.temporarySibling(of: path)
        guard let descriptor = try? FileIO.open(temporary, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600) else { return }
        let written = (try? FileIO.writeAll(descriptor, data)) != nil
        FileIO.close(descriptor)
        if written, (try? FileIO.rename(temporary, path)) != nil { return }
        Paths.remove(temporary)
    }
}
