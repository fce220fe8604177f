import Foundation
import Glibc
import SystemSupport

/// One row of `docfs_items`: a folder, file, symbolic link or special file, by parent and name.
struct StoredItem: Sendable {
    var id: Int64
    var parent: Int64?
    /// The name as the row holds it: bytes anyone who can write the database chose.
    var rawName: [UInt8]
    /// The name, when the row's bytes are one a folder can hold (see `FileName`); a row whose name
    /// is not (`..`, `a/b`, 300 bytes) is never mirrored.
    var name: FileName? { try? FileName(bytes: rawName) }
    var mode: UInt32
    var userID: UInt32
    var groupID: UInt32
    var device: UInt64
    var accessNanoseconds: Int64
    var modificationNanoseconds: Int64
    var size: Int64
    /// The content's chunk hashes, 32 bytes each, in order.
    var chunks: [UInt8]
    var target: String?
    /// Changes with anything about the item (attributes, extended attributes, content).
    var version: Int64
    /// Changes with the content only: a file's bytes, or a package folder replaced whole. A save
    /// based on an older content version than the stored one is a conflict.
    var contentVersion: Int64
    var extendedAttributes: [(name: String, value: [UInt8])] = []

    var contentKey: ContentKey? { ContentKey(chunks: chunks) }

    var isDirectory: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFDIR) }
    var isRegular: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFREG) }
    var isSymbolicLink: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFLNK) }

    static let columns = "id, parent, name, mode, uid, gid, rdev, atime_ns, mtime_ns, size, chunks, target, version, content_version"

    init(_ rows: borrowing PostgresRows, _ row: Int) {
        id = rows.integer(row, 0) ?? 0
        parent = rows.integer(row, 1)
        rawName = rows.bytes(row, 2)
        mode = UInt32(truncatingIfNeeded: rows.integer(row, 3) ?? 0)
        userID = UInt32(truncatingIfNeeded: rows.integer(row, 4) ?? 0)
        groupID = UInt32(truncatingIfNeeded: rows.integer(row, 5) ?? 0)
        device = UInt64(bitPattern: rows.integer(row, 6) ?? 0)
        accessNanoseconds = rows.integer(row, 7) ?? 0
        modificationNanoseconds = rows.integer(row, 8) ?? 0
        size = rows.integer(row, 9) ?? 0
        chunks = rows.bytes(row, 10)
        target = rows.isNull(row, 11) ? nil : FileSystemPath.string(fromBytes: rows.bytes(row, 11))
        version = rows.integer(row, 12) ?? 0
        contentVersion = rows.integer(row, 13) ?? 0
    }

    var times: [timespec] { [Self.timespec(accessNanoseconds), Self.timespec(modificationNanoseconds)] }

    static func timespec(_ nanoseconds: Int64) -> Glibc.timespec {
        Glibc.timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
    }

    static func nanoseconds(_ time: Glibc.timespec) -> Int64 { Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec) }
}

/// What the mount knows of a stored item it mirrors: which row, at which versions, and for a
/// regular file whether its content is in the mirror's content cache.
struct KnownItem: Sendable, Codable {
    var id: Int64
    var version: Int64
    var contentVersion: Int64
    /// Only a folder has items under its path, which renames and removals must carry along.
    var isFolder = false
    /// A regular file's size and content key; 0 and nil for every other item.
    var size: Int64 = 0
    var contentKey: ContentKey?
    /// Whether the mirror holds the content, or a placeholder of the right size and attributes
    /// (a sparse file) that is filled from the database when the file is opened.
    var isFetched = true
    /// When the content was last used, for evicting the least recently used first.
    var lastUse: UInt64 = 0

    /// The bytes the content takes in the mirror's cache.
    var cachedBytes: Int64 { isFetched ? size : 0 }

    func isSameVersion(as other: KnownItem) -> Bool {
        id == other.id && version == other.version && contentVersion == other.contentVersion
    }
}

/// Names a file's content by its chunk list (SHA-256 of the list, so of the content): two files
/// with one key hold the same bytes, and a mount copies one to the other instead of fetching it.
struct ContentKey: Hashable, Sendable, Codable {
    let digest: [UInt8]

    /// Nil for empty content (nothing to fetch).
    init?(chunks: [UInt8]) {
        guard !chunks.isEmpty else { return nil }
        digest = chunks.withUnsafeBytes { ContentChunks.sha256($0) }
    }
}

/// The items a query returned, by parent, for walking a subtree.
struct ItemTree: Sendable {
    var items: [Int64: StoredItem] = [:]
    var children: [Int64: [Int64]] = [:]

    mutating func add(_ item: StoredItem) {
        items[item.id] = item
        if let parent = item.parent { children[parent, default: []].append(item.id) }
    }

    func childItems(of id: Int64) -> [StoredItem] { (children[id] ?? []).compactMap { items[$0] } }

    /// The item at which a walk starts is nobody's child: a row claiming otherwise (a parent link
    /// back into the subtree) would make the walk come round again. Each row has one parent, so
    /// any cycle a walk down from `id` could meet passes through `id`.
    mutating func detachFromParent(_ id: Int64) {
        guard let parent = items[id]?.parent else { return }
        children[parent]?.removeAll { $0 == id }
    }
}
