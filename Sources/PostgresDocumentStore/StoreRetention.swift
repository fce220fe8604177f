/// A PostgreSQL store's retention policy, kept in its row so that every mount applies the same:
/// the schedule (`VersionRetention`) and a space cap for the versions of the whole store. A mount's
/// own `--versions-cap` decides nothing there (see `PostgresStore.pruneVersions`), so no mount's
/// disk decides anyone's history.
public enum StoreRetention {
    /// The store's cap in bytes (the content only versions hold), or nil when it has none.
    public static func cap(of location: PostgresLocation) throws -> Int64? {
        // Read as the schema is: a database no DocFS migrated to it (or none at all) is not
        // changed by a look.
        try withStoreRow(of: location, migrating: false) { db, id in
            let rows = try db.execute("SELECT versions_cap FROM docfs_stores WHERE id = $1", [.integer(id)])
            return rows.isNull(0, 0) ? nil : rows.integer(0, 0)
        }
    }

    /// Sets the store's cap (nil: none); every mount applies it at its next retention pass.
    public static func setCap(_ bytes: Int64?, of location: PostgresLocation) throws {
        try withStoreRow(of: location, migrating: true) { db, id in
            try db.execute("UPDATE docfs_stores SET versions_cap = $2 WHERE id = $1", [.integer(id), bytes.map { .integer($0) } ?? .null])
        }
    }

    private static func withStoreRow<T>(of location: PostgresLocation, migrating: Bool, _ body: (PostgresConnection, Int64) throws -> T) throws -> T {
        let connection = try PostgresConnection(parameters: location.connectionParameters)
        if migrating { try StoreSchema.migrate(connection) }
        return try connection.transaction { db in
            let rows = try db.execute("SELECT id FROM docfs_stores WHERE name = $1 FOR UPDATE", [.text(location.storeName)])
            guard rows.count == 1, let id = rows.integer(0, 0) else { throw NoSuchStore(name: location.storeName) }
            return try body(db, id)
        }
    }

    /// The database holds no store of that name (no mount made it yet).
    public struct NoSuchStore: Error, CustomStringConvertible {
        public let name: String
        public var description: String { "the database has no store named '\(name)' (a first mount makes it)" }
    }
}
