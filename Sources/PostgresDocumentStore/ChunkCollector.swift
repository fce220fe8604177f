/// Removes the content chunks no item and no kept version of any store in the database refers to
/// any more (versions dropped, documents removed with versions off): content-addressed chunks are shared, so nothing can be removed
/// when a version goes, only found unused later, by `docfs gc`.
///
/// A chunk an upload found present and is about to refer to must not go: every transaction that
/// uploads holds `uploadLock` shared until it commits, and a collection holds it exclusively, so it
/// waits for the uploads under way to commit (their items then count) and the uploads that begin
/// meanwhile wait for it (their presence check then sees what it removed as missing, and sends it).
/// Mounts that read an old version meanwhile find its chunks gone and fetch the current one.
public enum ChunkCollector {
    /// The advisory lock (PostgreSQL's own) between uploads and a collection.
    static let uploadLock: Int64 = 7_164_919_253_386_240_002

    public struct Result: Sendable {
        public var removedChunks: Int64
        public var removedBytes: Int64
        public var keptChunks: Int64
        public var keptBytes: Int64
    }

    public static func collect(_ location: PostgresLocation) throws -> Result {
        let connection = try PostgresConnection(parameters: location.connectionParameters)
        // The tables that refer to chunks are those of the latest schema.
        try StoreSchema.migrate(connection)
        return try connection.transaction { db in
            try db.execute("SELECT pg_advisory_xact_lock(\(uploadLock))")
            let removed = try db.execute(
                """
                WITH used AS (
                    SELECT DISTINCT substring(i.chunks FROM g * 32 + 1 FOR 32) AS hash
                    FROM (SELECT chunks FROM docfs_items UNION ALL SELECT chunks FROM docfs_version_items) i,
                        generate_series(0, length(i.chunks) / 32 - 1) AS g
                ), gone AS (
                    DELETE FROM docfs_chunks c WHERE NOT EXISTS (SELECT 1 FROM used WHERE used.hash = c.hash) RETURNING length(c.data) AS size
                )
                SELECT count(*), coalesce(sum(size), 0)::bigint FROM gone
                """)
            let kept = try db.execute("SELECT count(*), coalesce(sum(length(data)), 0)::bigint FROM docfs_chunks")
            return Result(
                removedChunks: removed.integer(0, 0) ?? 0, removedBytes: removed.integer(0, 1) ?? 0,
                keptChunks: kept.integer(0, 0) ?? 0, keptBytes: kept.integer(0, 1) ?? 0)
        }
    }
}
