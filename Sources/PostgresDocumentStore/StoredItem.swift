import DocumentStore
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

    /// The row `row` of a query that selected `columns`, in libpq's binary format.
    init(_ rows: borrowing PostgresRows, _ row: Int) {
        var values: [[UInt8]?] = []
        values.reserveCapacity(Self.columnCount)
        for column in 0..<Self.columnCount { values.append(rows.isNull(row, column) ? nil : rows.bytes(row, column)) }
        self.init(columns: values)
    }

    static let columnCount = 14

    /// A row from its columns' bytes (nil for NULL), in the order of `columns`. Every byte is the
    /// choice of whoever can write the database: a missing column, a NULL where the schema forbids
    /// it, or an integer of the wrong width decodes to something, never to a crash.
    init(columns: [[UInt8]?]) {
        func bytes(_ column: Int) -> [UInt8]? { column < columns.count ? columns[column] : nil }
        func integer(_ column: Int) -> Int64? { bytes(column).map(PostgresRows.integer(fromBinary:)) }
        id = integer(0) ?? 0
        parent = integer(1)
        rawName = bytes(2) ?? []
        mode = UInt32(truncatingIfNeeded: integer(3) ?? 0)
        userID = UInt32(truncatingIfNeeded: integer(4) ?? 0)
        groupID = UInt32(truncatingIfNeeded: integer(5) ?? 0)
        device = UInt64(bitPattern: integer(6) ?? 0)
        accessNanoseconds = integer(7) ?? 0
        modificationNanoseconds = integer(8) ?? 0
        size = integer(9) ?? 0
        chunks = bytes(10) ?? []
        target = bytes(11).map { FileSystemPath.string(fromBytes: $0) }
        version = integer(12) ?? 0
        contentVersion = integer(13) ?? 0
    }

    /// The name a row may be mirrored under in the folder at `folder` (a store path), or why not.
    /// Never mirrored: a row whose name is no file name (`..`, `a/b`, a NUL byte, more than 255
    /// bytes) or names the store's private area; whose path would be longer than a path Linux
    /// takes (4,095 bytes: a chain of rows a million folders deep would otherwise cost the
    /// mirror's walk its stack); whose mode is no type of file; or whose size no file can have.
    static func mirroredName(of item: StoredItem, inFolder folder: String) -> Result<FileName, MirrorRefusal> {
        let name: FileName
        do {
            name = try FileName(bytes: item.rawName)
        } catch {
            return .failure(MirrorRefusal(problem: "its name is \(error)"))
        }
        if folder.isEmpty && name == DirectoryStore.privateName {
            return .failure(MirrorRefusal(problem: "\(DirectoryStore.privateAreaName) is the name of DocFS's private area, which no row may take"))
        }
        let pathLength = StorePath.join(folder, name).utf8.count
        guard pathLength <= maximumPathLength else {
            return .failure(MirrorRefusal(problem: "its path would be \(pathLength) bytes long (\(maximumPathLength) at most)"))
        }
        guard fileTypes.contains(item.mode & UInt32(S_IFMT)) else {
            return .failure(MirrorRefusal(problem: "its mode \(String(item.mode, radix: 8)) is no type of file"))
        }
        guard !item.isRegular || (0...maximumSize).contains(item.size) else {
            return .failure(MirrorRefusal(problem: "its size is \(item.size) bytes (0 to \(maximumSize))"))
        }
        return .success(name)
    }

    private static let fileTypes: Set<UInt32> = Set([S_IFDIR, S_IFREG, S_IFLNK, S_IFIFO, S_IFSOCK, S_IFCHR, S_IFBLK].map { UInt32($0) })

    /// The largest file ext4 holds (16 TiB with 4 KiB blocks); a placeholder is a sparse file of
    /// the row's size.
    static let maximumSize: Int64 = 1 << 44

    /// PATH_MAX less its NUL.
    static let maximumPathLength = Int(PATH_MAX) - 1

    var times: [timespec] { [Self.timespec(accessNanoseconds), Self.timespec(modificationNanoseconds)] }

    /// Nanoseconds since the epoch as a timespec; before the epoch too (the nanoseconds of a
    /// timespec are never negative, or utimensat refuses it).
    static func timespec(_ nanoseconds: Int64) -> Glibc.timespec {
        let (seconds, remainder) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        return remainder < 0
            ? Glibc.timespec(tv_sec: Int(seconds - 1), tv_nsec: Int(remainder + 1_000_000_000))
            : Glibc.timespec(tv_sec: Int(seconds), tv_nsec: Int(remainder))
    }

    /// A time as the database keeps it: nanoseconds since 1970, clamped to what 64 bits hold (1677 to
    /// 2262), as ext4 clamps to its own range. Times come from anyone (`touch -d`): one past the
    /// range trapped the daemon (xfstests generic/634).
    static func nanoseconds(_ time: Glibc.timespec) -> Int64 {
        let (seconds, overflow) = Int64(time.tv_sec).multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return time.tv_sec < 0 ? .min : .max }
        let (sum, beyond) = seconds.addingReportingOverflow(Int64(time.tv_nsec))
        return beyond ? (time.tv_sec < 0 ? .min : .max) : sum
    }
}

/// Why a row is not mirrored.
struct MirrorRefusal: Error {
    let problem: String
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

    /// Adds a row; a second row with an id already added is ignored (ids are the table's primary
    /// key, but a changed schema could repeat one, and a row listed under two parents could make
    /// a walk come round again).
    mutating func add(_ item: StoredItem) {
        guard items[item.id] == nil else { return }
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
