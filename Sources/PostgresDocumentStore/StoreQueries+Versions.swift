import DocumentStore
import Glibc
import SystemSupport

/// A version row as a mount reads it, before it is checked (see `PostgresStore+Versions`).
struct StoredVersion: Sendable {
    var id: Int64
    /// The row of the document whose history it is in (`docfs_histories.item`); nil for a history
    /// no item holds: a removed document's (at its path in a removal area) or one left at its path
    /// (see `followRename`).
    var item: Int64?
    /// Where the history is when `item` is nil; otherwise where the document was when the version
    /// was kept (shown there only while this mount does not know the item).
    var document: [UInt8]
    var saved: SaveRecord
    /// What the version holds, as the newest content version among its items and their count:
    /// the mirror may link its own files as the version only where it holds the same.
    var content = ContentFingerprint(newest: 0, items: 0)
}

/// See `StoredVersion.content`.
struct ContentFingerprint: Equatable, Sendable {
    var newest: Int64
    var items: Int
}

/// One item of a version: the document itself (`path` empty) or, in a package's version, a member
/// at its path inside the package.
struct StoredVersionItem: Sendable {
    var path: [UInt8]
    var mode: UInt32
    var userID: uid_t
    var groupID: gid_t
    var modificationTime: timespec
    var size: Int64
    var chunks: [UInt8]
    var target: [UInt8]?
}

/// The statements of document versions: rows that copy an item's (and its members') attributes and
/// chunk list, so a version shares every chunk with the content it was.
extension StoreQueries {
    /// The deepest member a package's version walks to: rows are anyone's to write, and a parent
    /// link that points back into the package must end the walk.
    static let versionDepthLimit = 256

    /// Keeps the item `id` (a non-empty file, or a folder with everything in it) as a version of
    /// `document`, kept at `now`. Nil when the item is neither (nothing to go back to), or when the
    /// version could not be kept: the change it belongs to goes on all the same.
    /// The savepoint and its release travel with the statements around them: one round trip, not three.
    func keepVersion(_ db: PostgresConnection, of id: Int64, document: String, now: Int64) throws -> StoredVersion? {
        db.executeLater("SAVEPOINT docfs_keep_version")
        do {
            let kept = try insertVersion(db, of: id, document: document, now: now)
            db.executeLater("RELEASE SAVEPOINT docfs_keep_version")
            return kept
        } catch let error as PostgresError where !error.isConnectionFailure {
            do {
                try db.execute("ROLLBACK TO SAVEPOINT docfs_keep_version")
            } catch let lost as PostgresError where lost.isConnectionFailure {
                throw lost
            } catch {
                // A statement held before the savepoint failed, so it never ran: the transaction
                // is lost, and the failure is that statement's, not the version's.
                throw error
            }
            // Gone, so that no later failure can roll back to it.
            db.executeLater("RELEASE SAVEPOINT docfs_keep_version")
            throw VersionNotKept(cause: error)
        }
    }

    private func insertVersion(_ db: PostgresConnection, of id: Int64, document: String, now: Int64) throws -> StoredVersion? {
        let rows = try db.execute(Self.insertVersionStatement, insertVersionParameters(id, document, now), prepared: true)
        return Self.insertedVersion(rows, of: id, document: document)
    }

    /// `keepVersion`, held for the next round trip (a save's COMMIT): `kept` is filled in when the
    /// answer arrives. With no savepoint of its own, a failure fails that round trip, and so the
    /// change it goes with (see `PostgresStore.install`, which then keeps it as `keepVersion` does).
    func keepVersionLater(_ db: PostgresConnection, of id: Int64, document: String, now: Int64, into kept: AnsweredVersion) {
        kept.answered = false
        db.executeLater(Self.insertVersionStatement, insertVersionParameters(id, document, now), prepared: true) { rows in
            kept.answered = true
            kept.version = Self.insertedVersion(rows, of: id, document: document)
        }
    }

    /// The walk carries each item's columns, and reaches each folder's items through a subquery the
    /// planner keeps (`OFFSET 0`): a prepared statement soon runs on a generic plan, which, not
    /// knowing how few items a package has, joined the walk with every row of `docfs_items` at each
    /// level (a hash join over a sequential scan: 12 ms a package version on a store of 20,000
    /// items, growing with the store). This way each level is an index lookup by parent.
    static let insertVersionStatement = """
        WITH RECURSIVE tree(id, path, depth, mode, uid, gid, mtime_ns, size, chunks, target, content_version) AS (
            SELECT id, ''::bytea, 0, mode, uid, gid, mtime_ns, size, chunks, target, content_version FROM docfs_items WHERE id = $1
            UNION ALL
            SELECT c.id, CASE WHEN t.path = ''::bytea THEN c.name ELSE t.path || '/'::bytea || c.name END, t.depth + 1,
                c.mode, c.uid, c.gid, c.mtime_ns, c.size, c.chunks, c.target, c.content_version
            FROM tree t CROSS JOIN LATERAL (SELECT * FROM docfs_items i WHERE i.parent = t.id OFFSET 0) c WHERE t.depth < \(versionDepthLimit)
        ), keeps AS (
            SELECT coalesce(saved_ns, mtime_ns) AS saved_ns, saved_by, saved_unreachable FROM docfs_items
            WHERE id = $1 AND (mode & 61440 = 16384 OR (mode & 61440 = 32768 AND size > 0))
        ), history AS (
            SELECT min(id) AS id FROM docfs_histories WHERE item = $1
        ), made AS (
            INSERT INTO docfs_histories (store, item) SELECT $2, $1 FROM keeps WHERE (SELECT id FROM history) IS NULL RETURNING id
        ), kept AS (
            INSERT INTO docfs_document_versions (store, history, document, saved_ns, saved_by, kept_ns, unreachable)
            SELECT $2, coalesce((SELECT id FROM history), (SELECT id FROM made)), $3, saved_ns, saved_by, $4, saved_unreachable FROM keeps
            RETURNING id, saved_ns, saved_by, unreachable
        ), members AS (
            INSERT INTO docfs_version_items (version, path, mode, uid, gid, mtime_ns, size, chunks, target)
            SELECT DISTINCT ON (t.path) kept.id, t.path, t.mode, t.uid, t.gid, t.mtime_ns, t.size, t.chunks, t.target
            FROM kept, tree t
        )
        SELECT kept.id, kept.saved_ns, kept.saved_by, max(t.content_version), count(*), kept.unreachable
        FROM kept, tree t GROUP BY kept.id, kept.saved_ns, kept.saved_by, kept.unreachable
        """

    private func insertVersionParameters(_ id: Int64, _ document: String, _ now: Int64) -> [PostgresValue] {
        [.integer(id), .integer(storeID), .bytes(FileSystemPath.bytes(of: document)), .integer(now)]
    }

    private static func insertedVersion(_ rows: borrowing PostgresRows, of item: Int64, document: String) -> StoredVersion? {
        guard rows.count == 1, let version = rows.integer(0, 0) else { return nil }
        let saved = SaveRecord(
            time: StoredItem.timespec(rows.integer(0, 1) ?? 0), userID: rows.integer(0, 2).flatMap(uid_t.init(exactly:)),
            unreachable: Self.unreachable(rows.integer(0, 5)))
        let content = ContentFingerprint(newest: rows.integer(0, 3) ?? 0, items: Int(clamping: rows.integer(0, 4) ?? 0))
        return StoredVersion(id: version, item: item, document: FileSystemPath.bytes(of: document), saved: saved, content: content)
    }

    /// How many versions the store has, the newest's id, the sum of their ids and how many times
    /// histories moved: what changes whenever one is kept, dropped or renamed.
    func versionSummary(_ db: PostgresConnection) throws -> VersionSummary {
        let rows = try db.execute(
            """
            SELECT count(*), coalesce(max(id), 0), coalesce(sum(id), 0)::text,
                (SELECT history_moves FROM docfs_stores WHERE id = $1)
            FROM docfs_document_versions WHERE store = $1 AND id > 0
            """,
            [.integer(storeID)])
        return VersionSummary(
            count: rows.integer(0, 0) ?? 0, newest: rows.integer(0, 1) ?? 0, idSum: rows.text(0, 2) ?? "", historyMoves: rows.integer(0, 3) ?? 0)
    }

    /// What a rename does to histories, in its transaction: `moved` is the item renamed, `replaced`
    /// the item it replaced at `destination` (if any). A history (`docfs_histories`, which its
    /// versions name) held by an item goes wherever the item goes, so most renames change no row.
    /// The rows changed here are the histories the rename hands on, one row each however many
    /// versions they have: with `carrying` (a document renamed as a document, or a folder), the
    /// replaced item's history joins the moved one's, and one left at a path (item NULL) moves
    /// with the path; without it (vim's `a.md` renamed to its backup `a.md~`, whose `a.md` is
    /// written anew at once) the moved item's history stays at `source`, for the next document
    /// there, and the name's history becomes the moved item's. An exchange swaps what it swaps.
    /// Held for the next round trip (the COMMIT), after the lock of the moved item
    /// (`lockItemLater`), whose check fails a rename whose item another mount moved or removed
    /// first; a history move is noted only where a row changed.
    func followRename(
        _ db: PostgresConnection, moved: Int64, replaced: Int64?, from source: [UInt8], to destination: [UInt8], exchanging: Bool, carrying: Bool
    ) {
        let items: [PostgresValue] = [.integer(moved), replaced.map { .integer($0) } ?? .null]
        switch (exchanging, carrying) {
        case (false, true):
            changeHistoriesLater(
                db,
                """
                UPDATE docfs_histories SET
                    item = CASE WHEN item IS NULL AND path <> $5::bytea AND path <> $6::bytea THEN NULL ELSE $3::bigint END,
                    path = CASE WHEN item IS NULL AND path <> $5::bytea AND path <> $6::bytea
                        THEN $6::bytea || substring(path FROM length($5::bytea) + 1) END
                WHERE store = $1::bigint AND (item = $4::bigint OR (item IS NULL AND (path = $6::bytea OR \(Self.within("$5::bytea")))))
                """,
                items + [.bytes(source), .bytes(destination)])
        case (false, false):
            changeHistoriesLater(
                db,
                """
                UPDATE docfs_histories SET
                    item = CASE WHEN item = $3::bigint THEN NULL ELSE $3::bigint END,
                    path = CASE WHEN item = $3::bigint THEN $5::bytea END
                WHERE store = $1::bigint AND (item = $3::bigint OR item = $4::bigint OR (item IS NULL AND path = $6::bytea))
                """,
                items + [.bytes(source), .bytes(destination)])
        case (true, true):
            changeHistoriesLater(
                db,
                """
                UPDATE docfs_histories SET path = CASE WHEN \(Self.within("$3::bytea"))
                    THEN $4::bytea || substring(path FROM length($3::bytea) + 1) ELSE $3::bytea || substring(path FROM length($4::bytea) + 1) END
                WHERE store = $1::bigint AND item IS NULL AND (\(Self.within("$3::bytea")) OR \(Self.within("$4::bytea")))
                """,
                [.bytes(source), .bytes(destination)])
        case (true, false):
            changeHistoriesLater(
                db,
                """
                UPDATE docfs_histories SET item = CASE WHEN item = $3::bigint THEN $4::bigint ELSE $3::bigint END
                WHERE store = $1::bigint AND (item = $3::bigint OR item = $4::bigint)
                """,
                items)
        }
    }

    /// A history's path is the given path or below it: equal, or after `path/` and before `path0`
    /// ('0' follows '/'; bytea compares bytes), a range the (store, path) index serves.
    private static func within(_ parameter: String) -> String {
        "(path = \(parameter) OR (path > \(parameter) || '\\x2f'::bytea AND path < \(parameter) || '\\x30'::bytea))"
    }

    /// The item `id` leaves `path` without its history going among the removed (a file that no
    /// longer is a document, or a row replaced by another at the path): what the item held stays
    /// at the path, where the next item there takes it (`adoptHistoryLater`). Held.
    func leaveHistoryLater(_ db: PostgresConnection, of id: Int64, at path: [UInt8]) {
        changeHistoriesLater(
            db, "UPDATE docfs_histories SET item = NULL, path = $4::bytea WHERE store = $1::bigint AND item = $3::bigint",
            [.integer(id), .bytes(path)])
    }

    /// The item now named `name` in the folder `parent` (the store path `path`) takes the history
    /// left at that path, if any. Held, after the statement that made the item.
    func adoptHistoryLater(_ db: PostgresConnection, parent: Int64, name: FileName, at path: [UInt8]) {
        changeHistoriesLater(
            db,
            """
            UPDATE docfs_histories SET item = (SELECT id FROM docfs_items WHERE parent = $3::bigint AND name = $4::bytea), path = NULL
            WHERE store = $1::bigint AND item IS NULL AND path = $5::bytea
                AND EXISTS (SELECT 1 FROM docfs_items WHERE parent = $3::bigint AND name = $4::bytea)
            """,
            [.integer(parent), .bytes(name.bytes), .bytes(path)])
    }

    /// Moves the history of the removed item `id`, with any left at or below its `path`, among
    /// the removed, to `removed` (see `VersionArchive.removedPath(of:owner:)`): no item holds it
    /// from now on. Returns how many histories moved; a history move is noted where any did. A
    /// history whose versions retention dropped stays behind (its row's deletion leaves it no
    /// place): a removal that keeps nothing among the removed narrows nobody's record there.
    func retireHistory(_ db: PostgresConnection, of id: Int64, at path: [UInt8], to removed: [UInt8]) throws -> Int {
        let moved = try db.execute(
            """
            UPDATE docfs_histories SET
                path = CASE WHEN item = $2::bigint THEN $4::bytea ELSE $4::bytea || substring(path FROM length($3::bytea) + 1) END,
                item = NULL
            WHERE store = $1::bigint AND (item = $2::bigint OR (item IS NULL AND \(Self.within("$3::bytea"))))
                AND EXISTS (SELECT 1 FROM docfs_document_versions v WHERE v.history = docfs_histories.id)
            RETURNING id
            """,
            [.integer(storeID), .integer(id), .bytes(path), .bytes(removed)], prepared: true
        ).count
        if moved > 0 { recordHistoryMove(db) }
        return moved
    }

    /// Runs `update` (a change of history rows, whose parameters begin at `$3`), held for the next
    /// round trip, with the change log's history move where it changed any row, in the same
    /// statement: nothing to wait for, and nothing noted where nothing moved. No notification of
    /// its own: each change that runs it records itself (`recordChange`), which wakes the other
    /// mounts, and they count the move as they read the log.
    private func changeHistoriesLater(_ db: PostgresConnection, _ update: String, _ parameters: [PostgresValue]) {
        db.executeLater(
            """
            WITH changed AS (\(update) RETURNING 1)
            INSERT INTO docfs_changes (store, directory, origin)
            SELECT $1::bigint, \(Self.historyMoveFolder), $2::text WHERE EXISTS (SELECT 1 FROM changed)
            """,
            [.integer(storeID), .text(origin)] + parameters, prepared: true)
    }

    /// The change log's row for folder 0 (no item's id) says histories moved in its transaction:
    /// every mount's change feed counts it, and the next version synchronization compares the
    /// archive's paths again (`PostgresStore.synchronizeVersions`). A row, not a counter in the
    /// store's row (as `history_moves` was): a counter's row lock made every rename and removal
    /// that moved a history, in any mount, wait for the one before to commit.
    /// Held for the next round trip: nothing is read from it.
    func recordHistoryMove(_ db: PostgresConnection) {
        db.executeLater(
            "INSERT INTO docfs_changes (store, directory, origin) VALUES ($1, $2, $3)",
            [.integer(storeID), .integer(Self.historyMoveFolder), .text(origin)], prepared: true)
    }

    static let historyMoveFolder: Int64 = 0

    /// Wakes the other mounts to compare their archives with the database once this commits.
    func notifyVersionsChanged(_ db: PostgresConnection) {
        db.notifyAfterCommit(channel: channel, payload: "versions")
    }

    /// Records who could reach the document or folder removed to `path` (in a removal area,
    /// `VersionArchive.removedPath(of:owner:)`), with an earlier record of that path in the same
    /// statement as `VersionArchive.Readers.removedAgain(as:inAreaOf:)` does, and counts it as a
    /// history move so other mounts look. Returns the record as it stands.
    func recordRemoval(_ db: PostgresConnection, folder: Bool, path: [UInt8], readers: VersionArchive.Readers) throws -> VersionArchive.Readers {
        let rows = try db.execute(Self.recordRemovalStatement, recordRemovalParameters(folder, path, readers), prepared: true)
        recordHistoryMove(db)
        return Self.readers(rows, 0) ?? .rootAlone
    }

    /// `recordRemoval`, held for the next round trip (a removal's COMMIT): `record` is filled in
    /// when the answer arrives (not at all where it was lost: the record is then the database's
    /// alone until the archive is next compared with it, and the history root's meanwhile).
    func recordRemovalLater(_ db: PostgresConnection, folder: Bool, path: [UInt8], readers: VersionArchive.Readers, into record: AnsweredReaders) {
        db.executeLater(Self.recordRemovalStatement, recordRemovalParameters(folder, path, readers), prepared: true) { rows in
            record.readers = Self.readers(rows, 0) ?? .rootAlone
        }
        recordHistoryMove(db)
    }

    private static let recordRemovalStatement: String = {
        let owner = "docfs_removals.uid = excluded.uid", group = "docfs_removals.gid = excluded.gid"
        // $7: the uid whose removal area the path is in; NULL in the shared area of an older DocFS.
        let areaOwner = "excluded.uid = $7"
        return """
            INSERT INTO docfs_removals (store, kind, path, uid, gid, mode) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (store, kind, path) DO UPDATE SET
                uid = CASE WHEN NOT \(owner) AND \(areaOwner) THEN excluded.uid ELSE docfs_removals.uid END,
                gid = CASE WHEN \(owner) AND \(group) THEN excluded.gid WHEN \(owner) THEN 0
                    WHEN \(areaOwner) THEN excluded.gid ELSE docfs_removals.gid END,
                mode = CASE WHEN \(owner) AND \(group) THEN docfs_removals.mode & excluded.mode
                    WHEN \(owner) THEN docfs_removals.mode & excluded.mode & \(0o707)
                    WHEN \(areaOwner) THEN excluded.mode ELSE docfs_removals.mode END
            RETURNING uid, gid, mode
            """
    }()

    private func recordRemovalParameters(_ folder: Bool, _ path: [UInt8], _ readers: VersionArchive.Readers) -> [PostgresValue] {
        [
            .integer(storeID), .text(folder ? "f" : "d"), .bytes(path), .integer(Int64(readers.userID)), .integer(Int64(readers.groupID)),
            .integer(Int64(readers.permissions)),
            VersionArchive.removalAreaOwner(of: FileSystemPath.string(fromBytes: path)).map { .integer(Int64($0)) } ?? .null,
        ]
    }

    /// The removal areas (`VersionArchive.removedPath(of:owner:)`) that hold versions of the store.
    func removalAreas(_ db: PostgresConnection) throws -> [String] {
        // `.docfs/` is 7 bytes: an area is those and the name up to the next slash.
        let rows = try db.execute(
            """
            SELECT DISTINCT substring(place FROM 1 FOR 6 + position('\\x2f'::bytea IN substring(place FROM 8)))
            FROM (\(Self.places(between: "'.docfs/removed'::bytea", and: "'.docfs/removee'::bytea"))) found
            WHERE position('\\x2f'::bytea IN substring(place FROM 8)) > 0
            """,
            [.integer(storeID)])
        return (0..<rows.count).map { FileSystemPath.string(fromBytes: rows.bytes($0, 0)) }.filter { area in
            StorePath.names(area).count == 2 && VersionArchive.pathBeforeRemoval(area) == ""
        }
    }

    /// Every removal record of the store: whether a folder's, its path, and who could reach it.
    func removals(_ db: PostgresConnection) throws -> [(folder: Bool, path: [UInt8], readers: VersionArchive.Readers)] {
        // Results are binary: a boolean would be one byte; an integer says it plainly.
        let rows = try db.execute("SELECT (kind = 'f')::int, path, uid, gid, mode FROM docfs_removals WHERE store = $1", [.integer(storeID)])
        return (0..<rows.count).compactMap { row in
            Self.readers(rows, row, from: 2).map { (rows.integer(row, 0) == 1, rows.bytes(row, 1), $0) }
        }
    }

    /// The readers in columns `from`, `from + 1` and `from + 2` of a row; nil where one is not an
    /// owner, group or mode.
    private static func readers(_ rows: borrowing PostgresRows, _ row: Int, from column: Int = 0) -> VersionArchive.Readers? {
        guard let user = rows.integer(row, column).flatMap(uid_t.init(exactly:)), let group = rows.integer(row, column + 1).flatMap(gid_t.init(exactly:)),
              let mode = rows.integer(row, column + 2).flatMap(mode_t.init(exactly:))
        else { return nil }
        return VersionArchive.Readers(userID: user, groupID: group, permissions: mode & 0o777)
    }

    /// Each version's size: the sum of its files' sizes, as the database holds them (the same for
    /// every mount, whatever its mirror holds of them).
    func versionSizes(_ db: PostgresConnection) throws -> [Int64: Int64] {
        let rows = try db.execute(
            """
            SELECT i.version, coalesce(sum(i.size), 0)::bigint FROM docfs_version_items i
            JOIN docfs_document_versions v ON v.id = i.version WHERE v.store = $1 GROUP BY i.version
            """,
            [.integer(storeID)])
        var sizes: [Int64: Int64] = [:]
        for row in 0..<rows.count {
            if let id = rows.integer(row, 0) { sizes[id] = rows.integer(row, 1) ?? 0 }
        }
        return sizes
    }

    /// The places (as `place`) of the histories with versions between two paths (SQL expressions),
    /// exclusive: a history's path where no item holds it, and a version row's own where it names
    /// no history (an earlier DocFS still running wrote it, or a hand). Served by the (store, path)
    /// index of histories and the (store, document) index of versions.
    private static func places(between low: String, and high: String) -> String {
        """
        SELECT h.path AS place FROM docfs_histories h WHERE h.store = $1 AND h.path > \(low) AND h.path < \(high)
            AND EXISTS (SELECT 1 FROM docfs_document_versions v WHERE v.history = h.id)
        UNION ALL
        SELECT document FROM docfs_document_versions WHERE store = $1 AND history IS NULL AND document > \(low) AND document < \(high)
        """
    }

    /// Whether any version's history is below `folder` (a path's bytes).
    func hasVersions(_ db: PostgresConnection, below folder: [UInt8]) throws -> Bool {
        let rows = try db.execute(
            "SELECT EXISTS (\(Self.places(between: "$2 || '\\x2f'::bytea", and: "$2 || '\\x30'::bytea")))::int",
            [.integer(storeID), .bytes(folder)])
        return rows.integer(0, 0) == 1
    }

    /// The store's space cap for versions (`StoreRetention`), nil when it has none.
    func versionsCap(_ db: PostgresConnection) throws -> Int64? {
        let rows = try db.execute("SELECT versions_cap FROM docfs_stores WHERE id = $1", [.integer(storeID)])
        return rows.count == 1 && !rows.isNull(0, 0) ? rows.integer(0, 0) : nil
    }

    /// Every version of the store, each with the place of its history. A history whose row was
    /// deleted some way that did not hand it on or retire it (`ON DELETE SET NULL`) has no place:
    /// its versions are shown among root's removed documents, at the paths they were kept at, never
    /// at a path where another document may be now.
    func versions(_ db: PostgresConnection) throws -> [StoredVersion] {
        let rows = try db.execute(
            """
            SELECT v.id, CASE WHEN h.id IS NOT NULL AND h.item IS NULL AND h.path IS NULL
                    THEN '\(VersionArchive.removedPath(of: "", owner: 0))/'::bytea || v.document ELSE coalesce(h.path, v.document) END,
                v.saved_ns, v.saved_by, v.unreachable, h.item
            FROM docfs_document_versions v LEFT JOIN docfs_histories h ON h.id = v.history WHERE v.store = $1 AND v.id > 0
            """,
            [.integer(storeID)])
        return (0..<rows.count).compactMap { row in
            // Ids are bigserial's, from 1; another (written by hand) is not a version's.
            guard let id = rows.integer(row, 0), id > 0 else { return nil }
            let saved = SaveRecord(
                time: StoredItem.timespec(rows.integer(row, 2) ?? 0), userID: rows.integer(row, 3).flatMap(uid_t.init(exactly:)),
                unreachable: Self.unreachable(rows.integer(row, 4)))
            return StoredVersion(id: id, item: rows.isNull(row, 5) ? nil : rows.integer(row, 5), document: rows.bytes(row, 1), saved: saved)
        }
    }

    /// The items of the version `id`, parents before their members.
    func versionItems(_ db: PostgresConnection, of id: Int64) throws -> [StoredVersionItem] {
        let rows = try db.execute(
            "SELECT path, mode, uid, gid, mtime_ns, size, chunks, target FROM docfs_version_items WHERE version = $1 ORDER BY path",
            [.integer(id)])
        return (0..<rows.count).map { row in
            StoredVersionItem(
                path: rows.bytes(row, 0), mode: UInt32(truncatingIfNeeded: rows.integer(row, 1) ?? 0),
                userID: rows.integer(row, 2).flatMap(uid_t.init(exactly:)) ?? 0, groupID: rows.integer(row, 3).flatMap(gid_t.init(exactly:)) ?? 0,
                modificationTime: StoredItem.timespec(rows.integer(row, 4) ?? 0), size: max(0, rows.integer(row, 5) ?? 0),
                chunks: rows.bytes(row, 6), target: rows.isNull(row, 7) ? nil : rows.bytes(row, 7))
        }
    }

    /// Drops the versions `ids` (their items go with them). Returns how many there were.
    @discardableResult
    func dropVersions(_ db: PostgresConnection, _ ids: [Int64]) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        let list = ids.map(String.init).joined(separator: ",")
        let dropped = try db.execute(
            "DELETE FROM docfs_document_versions WHERE store = $1 AND id = ANY('{\(list)}'::bigint[]) RETURNING history", [.integer(storeID)])
        // A removed document's history (or one left at a path) whose last version went goes too:
        // nothing keeps a version into a history no item holds.
        let histories = Set((0..<dropped.count).compactMap { dropped.isNull($0, 0) ? nil : dropped.integer($0, 0) })
        if !histories.isEmpty {
            try db.execute(
                """
                DELETE FROM docfs_histories h WHERE h.store = $1 AND h.item IS NULL AND h.id = ANY('{\(histories.map(String.init).joined(separator: ","))}'::bigint[])
                    AND NOT EXISTS (SELECT 1 FROM docfs_document_versions v WHERE v.history = h.id)
                """,
                [.integer(storeID)])
        }
        return dropped.count
    }

    /// Records who saved the content version `contentVersion` of the item `id`, and when; nothing if
    /// the item has moved on to another content version since.
    func recordSave(_ db: PostgresConnection, of id: Int64, contentVersion: Int64, _ record: SaveRecord) throws {
        try db.execute(Self.recordSaveStatement, [.integer(id), .integer(contentVersion)] + Self.saverParameters(record), prepared: true)
    }

    /// `recordSave`, held for the next round trip (the COMMIT of the change that makes the save).
    func recordSaveLater(_ db: PostgresConnection, of id: Int64, contentVersion: Int64, _ record: SaveRecord) {
        db.executeLater(Self.recordSaveStatement, [.integer(id), .integer(contentVersion)] + Self.saverParameters(record), prepared: true)
    }

    private static let recordSaveStatement =
        "UPDATE docfs_items SET saved_ns = $3, saved_by = $4, saved_unreachable = $5 WHERE id = $1 AND content_version = $2"

    /// Sets the reach of the version `id` (`SaveRecord.unreachable`), unless its row has one.
    func recordReach(_ db: PostgresConnection, ofVersion id: Int64, _ bits: mode_t) throws {
        try db.execute(
            "UPDATE docfs_document_versions SET unreachable = $3 WHERE id = $1 AND store = $2 AND unreachable IS NULL",
            [.integer(id), .integer(storeID), .integer(Int64(bits))], prepared: true)
    }

    /// A row's `unreachable` bits. The row is anyone's to write: any other value closes both
    /// classes, as a save record's unknown bits do. NULL (a row of a DocFS before them, or whose
    /// saver record was lost) is not known: each mount judges it by its folders when it keeps or
    /// fetches the version.
    private static func unreachable(_ value: Int64?) -> mode_t? { value.map { $0 & ~0o077 == 0 ? mode_t($0) : 0o077 } }
}

/// See `StoreQueries.versionSummary`.
struct VersionSummary: Equatable, Sendable {
    var count: Int64
    var newest: Int64
    /// In decimal: a sum of many ids passes Int64.
    var idSum: String
    /// How many times histories moved to other paths (`StoreQueries.recordHistoryMove`): the
    /// store's counter, which a DocFS before 0.2 kept, plus the moves this mount's change feed read.
    var historyMoves: Int64
}

/// The database refused to keep a version (the change goes on without it).
struct VersionNotKept: Error, CustomStringConvertible {
    let cause: PostgresError
    var description: String { "the version could not be kept: \(cause)" }
}

extension PostgresStore {
    /// How many versions the database keeps of this store, of how many documents, and the bytes of
    /// content only versions refer to (chunks no item of the store shares): for `docfs status`.
    public func versionStatistics() throws -> (versions: Int, documents: Int, bytes: Int64) {
        try pool.withConnection { db in
            let counts = try db.execute(
                "SELECT count(*), count(DISTINCT coalesce(history::text, encode(document, 'hex'))) FROM docfs_document_versions WHERE store = $1",
                [.integer(queries.storeID)])
            let bytes = try db.execute(
                """
                WITH kept AS (
                    SELECT DISTINCT substring(i.chunks FROM g * 32 + 1 FOR 32) AS hash
                    FROM docfs_version_items i JOIN docfs_document_versions v ON v.id = i.version AND v.store = $1,
                        generate_series(0, length(i.chunks) / 32 - 1) AS g
                ), live AS (
                    SELECT DISTINCT substring(i.chunks FROM g * 32 + 1 FOR 32) AS hash
                    FROM docfs_items i, generate_series(0, length(i.chunks) / 32 - 1) AS g WHERE i.store = $1
                )
                SELECT coalesce(sum(length(c.data)), 0)::bigint FROM docfs_chunks c JOIN kept ON c.hash = kept.hash
                WHERE NOT EXISTS (SELECT 1 FROM live WHERE live.hash = c.hash)
                """,
                [.integer(queries.storeID)])
            return (Int(counts.integer(0, 0) ?? 0), Int(counts.integer(0, 1) ?? 0), bytes.integer(0, 0) ?? 0)
        }
    }
}

/// A version kept by a held statement (`keepVersionLater`), once its round trip is answered:
/// whether the statement succeeded, and the version it kept, if any.
final class AnsweredVersion: @unchecked Sendable {
    var answered = false
    var version: StoredVersion?
}

/// Who may reach a removed document's history, as a held `recordRemovalLater` left it.
final class AnsweredReaders: @unchecked Sendable {
    var readers: VersionArchive.Readers?
}
