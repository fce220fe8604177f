import DocumentStore
import Foundation
import Glibc
import SystemSupport

/// The statements a store runs, for one store of the database.
struct StoreQueries: Sendable {
    let storeID: Int64
    /// This mount's name in `docfs_changes.origin`, so its own changes are not applied twice.
    let origin: String

    var channel: String { "docfs_store_\(storeID)" }

    // MARK: Reading items

    /// The whole store (`root` nil) or the subtree under `root`, with extended attributes.
    ///
    /// Rows are anyone's to write: the walk down from `root` takes each id once (UNION, not UNION
    /// ALL), so a parent link pointing back into the subtree ends the query instead of looping, and
    /// the root is never listed as a child of anything in it.
    func tree(_ db: PostgresConnection, root: Int64? = nil, storeRoot: Int64) throws -> ItemTree {
        var tree: ItemTree
        if let root {
            let subtree = "WITH RECURSIVE t(id) AS (SELECT $1::bigint UNION SELECT i.id FROM docfs_items i JOIN t ON i.parent = t.id)"
            tree = try items(db, with: subtree, from: "docfs_items WHERE id IN (SELECT id FROM t)", [.integer(root)])
        } else {
            tree = try items(db, from: "docfs_items WHERE store = $1", [.integer(storeID)])
        }
        tree.detachFromParent(root ?? storeRoot)
        return tree
    }

    /// A folder and its children (not their children), with extended attributes.
    func directory(_ db: PostgresConnection, _ id: Int64) throws -> ItemTree {
        try items(db, from: "docfs_items WHERE id = $1 OR parent = $1", [.integer(id)])
    }

    /// The items `source` (a table with a condition) names, and their extended attributes.
    private func items(_ db: PostgresConnection, with prefix: String = "", from source: String, _ parameters: [PostgresValue]) throws -> ItemTree {
        var tree = ItemTree()
        let rows = try db.execute("\(prefix) SELECT \(StoredItem.columns) FROM \(source)", parameters)
        for row in 0..<rows.count { tree.add(StoredItem(rows, row)) }
        let attributes = try db.execute(
            "\(prefix) SELECT x.item, x.name, x.value FROM docfs_xattrs x WHERE x.item IN (SELECT id FROM \(source))", parameters)
        for row in 0..<attributes.count {
            guard let item = attributes.integer(row, 0) else { continue }
            tree.items[item]?.extendedAttributes.append((FileSystemPath.string(fromBytes: attributes.bytes(row, 1)), attributes.bytes(row, 2)))
        }
        return tree
    }

    /// The item named `name` in `parent`, locked until the transaction ends.
    func lockedItem(_ db: PostgresConnection, parent: Int64, name: FileName) throws -> KnownItem? {
        try lockedItem(db, parent: parent, name: name, reservingVersion: false)?.item
    }

    /// The item named `name` in `parent`, locked until the transaction ends; with
    /// `reservingVersion`, also the number of its next version, taken in the same round trip so
    /// that the change itself can go with COMMIT (`updateContent(…, version:)`).
    func lockedItem(_ db: PostgresConnection, parent: Int64, name: FileName, reservingVersion: Bool) throws -> (item: KnownItem, nextVersion: Int64?)? {
        let next = reservingVersion ? ", nextval('docfs_versions')" : ""
        let rows = try db.execute(
            "SELECT id, version, content_version, mode, size\(next) FROM docfs_items WHERE parent = $1 AND name = $2 FOR UPDATE",
            [.integer(parent), .bytes(name.bytes)], prepared: true)
        guard rows.count > 0, let id = rows.integer(0, 0) else { return nil }
        let isFolder = UInt32(truncatingIfNeeded: rows.integer(0, 3) ?? 0) & UInt32(S_IFMT) == UInt32(S_IFDIR)
        let item = KnownItem(
            id: id, version: rows.integer(0, 1) ?? 0, contentVersion: rows.integer(0, 2) ?? 0, isFolder: isFolder,
            size: isFolder ? 0 : max(0, rows.integer(0, 4) ?? 0))
        return (item, reservingVersion ? rows.integer(0, 5) : nil)
    }

    /// An item's version, content version and chunk list, unlocked.
    func contentRow(_ db: PostgresConnection, id: Int64) throws -> (version: Int64, contentVersion: Int64, chunks: [UInt8])? {
        let rows = try db.execute("SELECT version, content_version, chunks FROM docfs_items WHERE id = $1", [.integer(id)])
        guard rows.count == 1, let version = rows.integer(0, 0), let contentVersion = rows.integer(0, 1) else { return nil }
        return (version, contentVersion, rows.bytes(0, 2))
    }

    func hasChildren(_ db: PostgresConnection, _ id: Int64) throws -> Bool {
        try db.execute("SELECT 1 FROM docfs_items WHERE parent = $1 LIMIT 1", [.integer(id)]).count > 0
    }

    // MARK: Writing items

    /// Inserts an item with the attributes of `status`; returns what the mount should know of it.
    func insert(
        _ db: PostgresConnection, parent: Int64, name: FileName, status: FileStatus, chunks: [UInt8] = [], target: String? = nil
    ) throws -> KnownItem {
        let rows = try db.execute(Self.insertItem, Self.insertParameters(storeID, parent, name, status, chunks, target), prepared: true)
        return Self.inserted(rows, status: status, chunks: chunks)
    }

    /// `insert`, held for the next round trip (the COMMIT): `item` is filled in when the answer
    /// arrives. A name another mount took meanwhile fails that round trip with a unique violation.
    func insertLater(_ db: PostgresConnection, parent: Int64, name: FileName, status: FileStatus, target: String?, into item: AnsweredItem) {
        db.executeLater(Self.insertItem, Self.insertParameters(storeID, parent, name, status, [], target), prepared: true) { rows in
            item.known = Self.inserted(rows, status: status, chunks: [])
        }
    }

    private static let insertItem = """
        INSERT INTO docfs_items (store, parent, name, mode, uid, gid, rdev, atime_ns, mtime_ns, size, chunks, target, version, content_version)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, nextval('docfs_versions'), currval('docfs_versions'))
        RETURNING id, version
        """

    private static func insertParameters(
        _ storeID: Int64, _ parent: Int64, _ name: FileName, _ status: FileStatus, _ chunks: [UInt8], _ target: String?
    ) -> [PostgresValue] {
        [
            .integer(storeID), .integer(parent), .bytes(name.bytes), .integer(Int64(status.mode)),
            .integer(Int64(status.userID)), .integer(Int64(status.groupID)), .integer(Int64(bitPattern: status.specialDevice)),
            .integer(StoredItem.nanoseconds(status.accessTime)), .integer(StoredItem.nanoseconds(status.modificationTime)),
            .integer(status.kind == .regular ? status.size : 0), .bytes(chunks), target.map { .bytes(FileSystemPath.bytes(of: $0)) } ?? .null,
        ]
    }

    private static func inserted(_ rows: borrowing PostgresRows, status: FileStatus, chunks: [UInt8]) -> KnownItem {
        let version = rows.integer(0, 1) ?? 0
        return KnownItem(
            id: rows.integer(0, 0) ?? 0, version: version, contentVersion: version, isFolder: status.kind == .directory,
            size: status.kind == .regular ? status.size : 0, contentKey: ContentKey(chunks: chunks))
    }

    /// Sets an item's attributes (mode, owner, times) from `status`; a new version, and with
    /// `newContent` a new content version too. Returns the version, nil when the row is gone.
    func updateAttributes(_ db: PostgresConnection, id: Int64, status: FileStatus, newContent: Bool = false) throws -> Int64? {
        let content = newContent ? ", content_version = currval('docfs_versions'), saved_ns = NULL, saved_by = NULL, saved_unreachable = NULL" : ""
        let rows = try db.execute(
            """
            UPDATE docfs_items SET mode = $2, uid = $3, gid = $4, atime_ns = $5, mtime_ns = $6, version = nextval('docfs_versions')\(content)
            WHERE id = $1 RETURNING version
            """,
            [
                .integer(id), .integer(Int64(status.mode)), .integer(Int64(status.userID)), .integer(Int64(status.groupID)),
                .integer(StoredItem.nanoseconds(status.accessTime)), .integer(StoredItem.nanoseconds(status.modificationTime)),
            ])
        return rows.count > 0 ? rows.integer(0, 0) : nil
    }

    /// Sets a file's content (and its times from `status`); a new content version. With `version`
    /// (reserved by `lockedItem` for this locked row), the statement is held for the next round
    /// trip, usually the COMMIT.
    /// `saver`: who saves it, and when (see `PostgresStore.recordSave`); nil leaves the new content
    /// version with none.
    func updateContent(_ db: PostgresConnection, id: Int64, status: FileStatus, chunks: [UInt8], saver: SaveRecord? = nil, version: Int64? = nil) throws -> KnownItem? {
        if let version {
            db.executeLater(
                """
                UPDATE docfs_items SET size = $2, chunks = $3, atime_ns = $4, mtime_ns = $5, saved_ns = $7, saved_by = $8, saved_unreachable = $9,
                    version = $6, content_version = $6
                WHERE id = $1
                """,
                [
                    .integer(id), .integer(status.size), .bytes(chunks), .integer(StoredItem.nanoseconds(status.accessTime)),
                    .integer(StoredItem.nanoseconds(status.modificationTime)), .integer(version),
                ] + Self.saverParameters(saver), prepared: true)
            return KnownItem(id: id, version: version, contentVersion: version, size: status.size, contentKey: ContentKey(chunks: chunks))
        }
        let rows = try db.execute(
            """
            UPDATE docfs_items SET size = $2, chunks = $3, atime_ns = $4, mtime_ns = $5, saved_ns = $6, saved_by = $7, saved_unreachable = $8,
                version = nextval('docfs_versions'), content_version = currval('docfs_versions')
            WHERE id = $1 RETURNING version
            """,
            [
                .integer(id), .integer(status.size), .bytes(chunks), .integer(StoredItem.nanoseconds(status.accessTime)),
                .integer(StoredItem.nanoseconds(status.modificationTime)),
            ] + Self.saverParameters(saver), prepared: true)
        guard rows.count > 0, let version = rows.integer(0, 0) else { return nil }
        return KnownItem(id: id, version: version, contentVersion: version, size: status.size, contentKey: ContentKey(chunks: chunks))
    }

    /// `saved_ns`, `saved_by` and `saved_unreachable` of a content version saved by `saver` (all
    /// NULL for none), as `recordSave` writes them.
    static func saverParameters(_ saver: SaveRecord?) -> [PostgresValue] {
        guard let saver else { return [.null, .null, .null] }
        return [.integer(StoredItem.nanoseconds(saver.time)), saver.userID.map { .integer(Int64($0)) } ?? .null, .integer(Int64(saver.unreachable))]
    }

    /// `updateContent` of the file the mount knows as `base`, held for the next round trip (the
    /// COMMIT) with its check: the row must still be `base`'s, at `parent`/`name`, with `base`'s
    /// content version (what `lockedItem` and `checkConflict` find out in a round trip of their
    /// own). Otherwise that round trip fails with division_by_zero (`StoreQueries.isStaleBase`).
    /// `item` is filled in from the answer.
    func updateContentLater(
        _ db: PostgresConnection, base: KnownItem, parent: Int64, name: FileName, status: FileStatus, chunks: [UInt8], saver: SaveRecord?,
        into item: AnsweredItem
    ) {
        db.executeLater(
            Self.exactlyOneRow(
                """
                UPDATE docfs_items SET size = $2, chunks = $3, atime_ns = $4, mtime_ns = $5, saved_ns = $9, saved_by = $10, saved_unreachable = $11,
                    version = nextval('docfs_versions'), content_version = currval('docfs_versions')
                WHERE id = $1 AND content_version = $6 AND parent = $7 AND name = $8
                RETURNING version
                """, answering: "max(version)"),
            [
                .integer(base.id), .integer(status.size), .bytes(chunks), .integer(StoredItem.nanoseconds(status.accessTime)),
                .integer(StoredItem.nanoseconds(status.modificationTime)), .integer(base.contentVersion), .integer(parent), .bytes(name.bytes),
            ] + Self.saverParameters(saver), prepared: true
        ) { rows in
            guard let version = rows.integer(0, 0) else { return }
            item.known = KnownItem(id: base.id, version: version, contentVersion: version, size: status.size, contentKey: ContentKey(chunks: chunks))
        }
    }

    /// Moves the item `id` from `from` (its folder's id and its name, where the mount knows it) to
    /// `to`, held for the next round trip. An item no longer there (another mount's rename or
    /// removal, not applied here yet) fails that round trip with division_by_zero, as
    /// `updateContentLater` does: before, the rename still removed the file it replaced, and
    /// moved nothing into its place.
    func moveLater(_ db: PostgresConnection, id: Int64, from: (parent: Int64, name: [UInt8]), to: (parent: Int64, name: [UInt8])) {
        db.executeLater(
            Self.exactlyOneRow("UPDATE docfs_items SET parent = $2, name = $3 WHERE id = $1 AND parent = $4 AND name = $5 RETURNING id"),
            [.integer(id), .integer(to.parent), .bytes(to.name), .integer(from.parent), .bytes(from.name)], prepared: true)
    }

    /// Locks the item `id` at `at` (its folder's id and name, where the mount knows it) until the
    /// transaction ends, held for the next round trip; fails that round trip with division_by_zero,
    /// as `moveLater` does, where it is not there. A change to the item's history comes after it:
    /// a save of the item through another mount, which keeps a version into that history, then
    /// commits before it or waits for it, never in between.
    func lockItemLater(_ db: PostgresConnection, id: Int64, at: (parent: Int64, name: [UInt8])) {
        db.executeLater(
            Self.exactlyOneRow("SELECT id FROM docfs_items WHERE id = $1 AND parent = $2 AND name = $3 FOR UPDATE"),
            [.integer(id), .integer(at.parent), .bytes(at.name)], prepared: true)
    }

    /// Removes the file `id` from `from` (its folder's id and name, where the mount knows it), held
    /// for the next round trip; fails that round trip with division_by_zero, as `moveLater` does,
    /// where it is not there. Before, a removal that matched nothing still moved the history at the
    /// name, which could be a new document's, into the remover's area under the removed one's record.
    func removeFileLater(_ db: PostgresConnection, id: Int64, from: (parent: Int64, name: [UInt8])) {
        db.executeLater(
            Self.exactlyOneRow("DELETE FROM docfs_items WHERE id = $1 AND parent = $2 AND name = $3 RETURNING id"),
            [.integer(id), .integer(from.parent), .bytes(from.name)], prepared: true)
    }

    /// `change` (an UPDATE or DELETE … RETURNING) as a statement that answers `value` of the one row
    /// it changed, and fails with division_by_zero (`isStaleBase`) where it changed none: a held
    /// statement's check, which the round trip it travels in (the COMMIT, usually) fails with.
    static func exactlyOneRow(_ change: String, answering value: String = "1") -> String {
        "WITH changed AS (\(change)) SELECT CASE WHEN count(*) = 1 THEN \(value) ELSE 1 / (count(*) - count(*)) END FROM changed"
    }

    /// The failure of a statement made with `exactlyOneRow` (`updateContentLater`, `moveLater`,
    /// `removeFileLater`, `updateAttributesLater`) when the row is no longer the one the mount knew.
    static func isStaleBase(_ error: PostgresError) -> Bool { error.sqlState == "22012" }

    /// A new version of a folder replaced whole (a package commit), its attributes from `status`.
    /// The rows below it are the caller's to change (see `removeRows` and `moveKeptFileLater`).
    func replaceFolder(_ db: PostgresConnection, id: Int64, status: FileStatus) throws -> KnownItem? {
        guard let version = try updateAttributes(db, id: id, status: status, newContent: true) else { return nil }
        try db.execute("DELETE FROM docfs_xattrs WHERE item = $1", [.integer(id)])
        return KnownItem(id: id, version: version, contentVersion: version, isFolder: true)
    }

    /// Removes every row below the folders `folders` (and so everything below those rows) but
    /// those in `keeping`.
    func removeRows(_ db: PostgresConnection, below folders: [Int64], keeping: [Int64]) throws {
        func list(_ ids: [Int64]) -> PostgresValue { .text("{" + ids.map(String.init).joined(separator: ",") + "}") }
        try db.execute(
            "DELETE FROM docfs_items WHERE parent = ANY($1::text::bigint[]) AND NOT (id = ANY($2::text::bigint[]))",
            [list(folders), list(keeping)])
    }

    /// Moves the item `item` to `to`, held for the next round trip, which fails with division_by_zero
    /// (`isStaleBase`) where the row is gone (another mount removed it since this mount knew it) or,
    /// for a file, no longer at `item`'s version (another mount changed its content or attributes).
    func moveKeptItemLater(_ db: PostgresConnection, item: KnownItem, to: (parent: Int64, name: [UInt8])) {
        let check = item.isFolder ? "" : " AND version = $4 AND content_version = $5"
        db.executeLater(
            Self.exactlyOneRow("UPDATE docfs_items SET parent = $2, name = $3 WHERE id = $1\(check) RETURNING id"),
            [.integer(item.id), .integer(to.parent), .bytes(to.name)] + (item.isFolder ? [] : [.integer(item.version), .integer(item.contentVersion)]),
            prepared: true)
    }

    /// Moves the folder `id` to `to` with the attributes of `status`: its new version, or nil where
    /// the row is gone.
    func moveFolder(_ db: PostgresConnection, id: Int64, to: (parent: Int64, name: [UInt8]), status: FileStatus) throws -> Int64? {
        let rows = try db.execute(
            """
            UPDATE docfs_items SET parent = $2, name = $3, mode = $4, uid = $5, gid = $6, atime_ns = $7, mtime_ns = $8, version = nextval('docfs_versions')
            WHERE id = $1 RETURNING version
            """,
            [
                .integer(id), .integer(to.parent), .bytes(to.name), .integer(Int64(status.mode)), .integer(Int64(status.userID)),
                .integer(Int64(status.groupID)), .integer(StoredItem.nanoseconds(status.accessTime)),
                .integer(StoredItem.nanoseconds(status.modificationTime)),
            ], prepared: true)
        return rows.count > 0 ? rows.integer(0, 0) : nil
    }

    /// A name no file can have (it holds a NUL byte) for the row `id` while a change moves it.
    static func parkedName(_ id: Int64) -> [UInt8] { [0] + Array("parked-\(id)".utf8) }

    /// `updateAttributes` of an attribute change, held for the next round trip (its COMMIT):
    /// `version` is filled in from the answer. A row that is gone (another mount removed the item,
    /// not applied here yet) fails that round trip with division_by_zero (`isStaleBase`).
    func updateAttributesLater(_ db: PostgresConnection, id: Int64, status: FileStatus, into version: AnsweredVersionNumber) {
        db.executeLater(
            Self.exactlyOneRow(
                """
                UPDATE docfs_items SET mode = $2, uid = $3, gid = $4, atime_ns = $5, mtime_ns = $6, version = nextval('docfs_versions')
                WHERE id = $1 RETURNING version
                """, answering: "max(version)"),
            [
                .integer(id), .integer(Int64(status.mode)), .integer(Int64(status.userID)), .integer(Int64(status.groupID)),
                .integer(StoredItem.nanoseconds(status.accessTime)), .integer(StoredItem.nanoseconds(status.modificationTime)),
            ], prepared: true
        ) { rows in version.number = rows.integer(0, 0) }
    }

    /// Held for the next round trip, as the attribute change it belongs to. Nothing for an item that
    /// is gone: the change's own check of the row (`updateAttributesLater`) answers that with ENOENT,
    /// where the foreign key's refusal would have made it an outage.
    func setExtendedAttribute(_ db: PostgresConnection, id: Int64, name: String, value: [UInt8]) {
        db.executeLater(
            """
            INSERT INTO docfs_xattrs (item, name, value) SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM docfs_items WHERE id = $1)
            ON CONFLICT (item, name) DO UPDATE SET value = excluded.value
            """,
            [.integer(id), .bytes(FileSystemPath.bytes(of: name)), .bytes(value)], prepared: true)
    }

    /// Held for the next round trip, as the attribute change it belongs to.
    func removeExtendedAttribute(_ db: PostgresConnection, id: Int64, name: String) {
        db.executeLater("DELETE FROM docfs_xattrs WHERE item = $1 AND name = $2", [.integer(id), .bytes(FileSystemPath.bytes(of: name))], prepared: true)
    }

    // MARK: Content

    /// Stores the content of the file open at `descriptor` (`size` bytes) as chunks, those the
    /// database does not hold yet sent; returns the chunk list. The file is read a window at a time,
    /// so memory stays bounded whatever its size. Chunks are cut exactly as
    /// `ContentChunks.boundaries` cuts the whole content: where a chunk ends depends only on the bytes
    /// from its start to at most `ContentChunks.maximum` past it, and a chunk is only cut once the
    /// window holds a later cut (or the file's end).
    func upload(_ db: PostgresConnection, descriptor: OwnedDescriptor, size: Int64, path: String) throws -> [UInt8] {
        // Chunks found present stay until this transaction commits its reference (ChunkCollector).
        db.executeLater("SELECT pg_advisory_xact_lock_shared(\(ChunkCollector.uploadLock))", prepared: true)
        var list: [UInt8] = []
        // The window: bytes [0, held) of `buffer` are the file's from `read - held` on.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.uploadWindow + ContentChunks.maximum, alignment: 16)
        defer { buffer.deallocate() }
        guard let base = buffer.baseAddress else { return [] }
        var held = 0
        var read: Int64 = 0
        var zeroChunkStored = false
        while true {
            // A hole at the next chunk's start, `maximum` bytes or more: its chunks are known
            // without reading them.
            if let zero = ContentChunks.zeroChunk {
                let start = read - Int64(held)
                let holes = Self.wholeChunksOfHole(descriptor.rawValue, from: start, size: size, chunk: zero.size)
                if holes > 0 {
                    var listed = 0
                    if !zeroChunkStored {
                        // Sent once, if the database lacks it; listed like any chunk.
                        let zeros = UnsafeMutableRawBufferPointer.allocate(byteCount: zero.size, alignment: 16)
                        defer { zeros.deallocate() }
                        zeros.initializeMemory(as: UInt8.self, repeating: 0)
                        try storeChunks(db, UnsafeRawBufferPointer(zeros), [0..<zero.size], into: &list)
                        zeroChunkStored = true
                        listed = 1
                    }
                    for _ in listed..<holes { list += zero.hash }
                    held = 0
                    read = start + Int64(holes * zero.size)
                }
            }
            while read < size && held < buffer.count {
                let wanted = Int(min(Int64(buffer.count - held), size - read))
                let count = try retryingOnInterrupt("pread", path: path) { pread(descriptor.rawValue, base + held, wanted, off_t(read)) }
                guard count > 0 else { throw SystemCallError(errno: EIO, operation: "read (the file is shorter than its \(size) bytes)", path: path) }
                held += count
                read += Int64(count)
            }
            let atEnd = read >= size
            let window = UnsafeRawBufferPointer(start: base, count: held)
            let ranges = ContentChunks.boundaries(of: window)
            let complete = atEnd ? ranges[...] : ranges.dropLast()
            try storeChunks(db, window, Array(complete), into: &list)
            if atEnd { return list }
            let cut = complete.last?.upperBound ?? 0
            memmove(base, base + cut, held - cut)
            held -= cut
        }
    }

    /// How many whole chunks of `chunk` bytes from `start` lie in a hole of the file (none where the
    /// file system cannot tell holes).
    private static func wholeChunksOfHole(_ descriptor: Int32, from start: Int64, size: Int64, chunk: Int) -> Int {
        guard size - start >= Int64(chunk) else { return 0 }
        let data = FileIO.nextData(descriptor, from: off_t(start)).map { Int64($0) }
        guard let data, data > start else { return data == nil ? Int((size - start) / Int64(chunk)) : 0 }
        return Int((min(data, size) - start) / Int64(chunk))
    }

    /// How much of a file `upload` reads at a time.
    static let uploadWindow = 4 << 20

    /// Up to how many bytes of chunks are sent without asking first which the database holds.
    static let sentWithoutAsking = 16 << 10

    /// Stores the chunks at `ranges` of `bytes` that the database does not hold yet, and appends
    /// their hashes to `list`.
    private func storeChunks(_ db: PostgresConnection, _ bytes: UnsafeRawBufferPointer, _ ranges: [Range<Int>], into list: inout [UInt8]) throws {
        guard !ranges.isEmpty else { return }
        var hashes: [UInt8] = []
        hashes.reserveCapacity(ranges.count * ContentChunks.hashLength)
        for range in ranges { hashes += ContentChunks.sha256(UnsafeRawBufferPointer(rebasing: bytes[range])) }
        var stored = Set<[UInt8]>()
        // Asking which chunks the database holds saves sending them, and costs a round trip: for a
        // few kilobytes, sending them (held for the next round trip) is cheaper.
        if ranges.reduce(0, { $0 + $1.count }) > Self.sentWithoutAsking {
            let present = try db.execute(
                "SELECT c.hash FROM generate_series(0, $2::int - 1) AS i JOIN docfs_chunks c ON c.hash = substring($1::bytea FROM i * 32 + 1 FOR 32)",
                [.bytes(hashes), .integer(Int64(ranges.count))], prepared: true)
            for row in 0..<present.count { stored.insert(present.bytes(row, 0)) }
        }
        for (index, range) in ranges.enumerated() {
            let hash = Array(hashes[index * 32..<(index + 1) * 32])
            guard stored.insert(hash).inserted else { continue }
            db.executeLater(
                "INSERT INTO docfs_chunks (hash, data) VALUES ($1, $2) ON CONFLICT (hash) DO NOTHING",
                [.bytes(hash), .bytes(Array(UnsafeRawBufferPointer(rebasing: bytes[range]).bindMemory(to: UInt8.self)))], prepared: true)
        }
        list += hashes
    }

    /// Writes the content a chunk list names to `descriptor` (a new, empty file), a batch of chunks
    /// per query; chunks of zeros are left as holes.
    func download(_ db: PostgresConnection, chunks: [UInt8], to descriptor: Int32, path: String) throws {
        let length = ContentChunks.hashLength
        let count = chunks.count / length
        let zero = ContentChunks.zeroChunk
        func isZero(_ index: Int) -> Bool {
            zero.map { chunks[index * length..<(index + 1) * length].elementsEqual($0.hash) } ?? false
        }
        var offset: Int64 = 0
        var first = 0
        while first < count {
            if let zero, isZero(first) {
                offset += Int64(zero.size)
                first += 1
                continue
            }
            var end = first + 1
            while end < count && end - first < 64 && !isZero(end) { end += 1 }
            let rows = try db.execute(
                """
                SELECT c.data FROM generate_series(0, $2::int - 1) AS i
                JOIN docfs_chunks c ON c.hash = substring($1::bytea FROM i * 32 + 1 FOR 32) ORDER BY i
                """,
                [.bytes(Array(chunks[first * length..<end * length])), .integer(Int64(end - first))])
            guard rows.count == end - first else {
                throw PostgresStoreError.missingContent(path: path)
            }
            for row in 0..<rows.count {
                try rows.withBytes(row, 0) { bytes in
                    try FileIO.writeAll(descriptor, bytes, offset: offset, path: path)
                    offset += Int64(bytes.count)
                }
            }
            first = end
        }
        // Holes at the end: the size says they are there.
        guard ftruncate(descriptor, off_t(offset)) == 0 else { throw SystemCallError.last("ftruncate", path: path) }
    }

    // MARK: Changes

    /// Records that the listed folders changed, for the other mounts: a row each, with its number
    /// and its transaction's id by default (see the schema and `ChangeCursor`: nothing here waits
    /// for another change to commit), and a notification once committed (`CommitNotifier`).
    func recordChange(_ db: PostgresConnection, folders: [Int64]) {
        // One statement, sent with the next (the COMMIT, usually).
        let list = "{" + Set(folders).map(String.init).joined(separator: ",") + "}"
        db.executeLater(
            "INSERT INTO docfs_changes (store, directory, origin) SELECT $1, folder, $2 FROM unnest($3::text::bigint[]) AS folder",
            [.integer(storeID), .text(origin), .text(list)], prepared: true)
        // Names this mount, whose own change feed has nothing to apply for it (see `ChangeFeed`).
        db.notifyAfterCommit(channel: channel, payload: origin)
    }
}

/// An item a held statement (`insertLater`, `updateContentLater`) wrote, known once its round trip
/// is answered.
final class AnsweredItem: @unchecked Sendable {
    var known: KnownItem?
}

/// An item's new version number, as a held statement's answer gives it.
final class AnsweredVersionNumber: @unchecked Sendable {
    var number: Int64?
}
