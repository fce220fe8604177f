/// The database schema, created on first mount and migrated forward: each migration runs once, in
/// order, in one transaction with the schema's version. Plain SQL that PostgreSQL-compatible
/// engines share (no extensions, no stored procedures); what is PostgreSQL's own is named where used
/// (advisory locks here, LISTEN/NOTIFY in `ChangeFeed`).
enum StoreSchema {
    static let migrations: [String] = [
        """
        CREATE TABLE docfs_stores (
            id bigserial PRIMARY KEY,
            name text NOT NULL UNIQUE,
            root bigint,
            last_change bigint NOT NULL DEFAULT 0
        );
        CREATE SEQUENCE docfs_versions;
        CREATE TABLE docfs_items (
            id bigserial PRIMARY KEY,
            store bigint NOT NULL REFERENCES docfs_stores (id),
            parent bigint REFERENCES docfs_items (id) ON DELETE CASCADE,
            name bytea NOT NULL,
            mode integer NOT NULL,
            uid bigint NOT NULL,
            gid bigint NOT NULL,
            rdev bigint NOT NULL DEFAULT 0,
            atime_ns bigint NOT NULL,
            mtime_ns bigint NOT NULL,
            size bigint NOT NULL DEFAULT 0,
            chunks bytea NOT NULL DEFAULT '',
            target bytea,
            version bigint NOT NULL,
            content_version bigint NOT NULL,
            UNIQUE (parent, name)
        );
        CREATE INDEX docfs_items_by_store ON docfs_items (store);
        CREATE TABLE docfs_xattrs (
            item bigint NOT NULL REFERENCES docfs_items (id) ON DELETE CASCADE,
            name bytea NOT NULL,
            value bytea NOT NULL,
            PRIMARY KEY (item, name)
        );
        CREATE TABLE docfs_chunks (
            hash bytea PRIMARY KEY,
            data bytea NOT NULL
        );
        CREATE TABLE docfs_changes (
            store bigint NOT NULL,
            seq bigint NOT NULL,
            directory bigint NOT NULL,
            origin text NOT NULL
        );
        CREATE INDEX docfs_changes_by_seq ON docfs_changes (store, seq);
        """,
        // Commits marked so that one whose answer was lost can be looked up (`PostgresStore.change`),
        // and how far each store's change log was pruned (`PostgresStore.catchUp`).
        """
        CREATE TABLE docfs_commits (
            id bigint PRIMARY KEY,
            committed_at timestamptz NOT NULL DEFAULT now()
        );
        ALTER TABLE docfs_stores ADD COLUMN pruned_below bigint NOT NULL DEFAULT 0;
        """,
        // Earlier versions of documents (`PostgresStore+Versions`): a version is its document's
        // rows as they were, sharing their content chunks. No index holds a path: a btree entry
        // has a size limit that a deep package's member path can pass. `saved_ns`/`saved_by` on an item say
        // when and by whom DocFS saw it saved; a new content version clears them.
        """
        ALTER TABLE docfs_items ADD COLUMN saved_ns bigint, ADD COLUMN saved_by bigint;
        CREATE TABLE docfs_document_versions (
            id bigserial PRIMARY KEY,
            store bigint NOT NULL REFERENCES docfs_stores (id),
            document bytea NOT NULL,
            saved_ns bigint NOT NULL,
            saved_by bigint,
            kept_ns bigint NOT NULL
        );
        CREATE INDEX docfs_document_versions_by_store ON docfs_document_versions (store, id);
        CREATE TABLE docfs_version_items (
            version bigint NOT NULL REFERENCES docfs_document_versions (id) ON DELETE CASCADE,
            path bytea NOT NULL,
            mode integer NOT NULL,
            uid bigint NOT NULL,
            gid bigint NOT NULL,
            mtime_ns bigint NOT NULL,
            size bigint NOT NULL,
            chunks bytea NOT NULL DEFAULT '',
            target bytea
        );
        CREATE INDEX docfs_version_items_by_version ON docfs_version_items (version);
        """,
        // Versions followed their document through renames by path (until versions named their
        // documents' rows, below); each mount compares its archive's paths again when this count moved.
        "ALTER TABLE docfs_stores ADD COLUMN history_moves bigint NOT NULL DEFAULT 0;",
        // The store's space cap for versions (`StoreRetention`), one for every mount; NULL: none.
        "ALTER TABLE docfs_stores ADD COLUMN versions_cap bigint;",
        // Who could reach a document (kind 'd') or a folder ('f') removed through any mount, by its
        // path among the removed (`StoreQueries.recordRemoval`): every mount's view gates by it.
        """
        CREATE TABLE docfs_removals (
            store bigint NOT NULL REFERENCES docfs_stores (id),
            kind "char" NOT NULL,
            path bytea NOT NULL,
            uid bigint NOT NULL,
            gid bigint NOT NULL,
            mode integer NOT NULL,
            PRIMARY KEY (store, kind, path)
        );
        """,
        // Histories found by path: those no item holds, and a removal's (`StoreQueries.retireHistory`).
        "CREATE INDEX docfs_document_versions_by_document ON docfs_document_versions (store, document);",
        // The change log without a row every change locks: a change took its number from
        // `docfs_stores.last_change`, whose row lock it held to its COMMIT, so every change to a
        // store waited for the one before to commit (one fsync after another: no two saves, from
        // any mount, shared one). Numbers now come from a sequence and only tell rows apart; how
        // far a mount has read is told by transaction ids (`ChangeCursor`), which PostgreSQL's
        // snapshots order (xid8, pg_current_xact_id: PostgreSQL 13 and later). Rows of a DocFS
        // that predates this get both by default, so they are read too.
        """
        CREATE SEQUENCE docfs_change_numbers;
        SELECT setval('docfs_change_numbers', GREATEST(1, (SELECT COALESCE(max(last_change), 0) + 1 FROM docfs_stores)));
        ALTER TABLE docfs_changes ALTER COLUMN seq SET DEFAULT nextval('docfs_change_numbers');
        ALTER TABLE docfs_changes ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
        CREATE INDEX docfs_changes_by_xid ON docfs_changes (store, xid);
        ALTER TABLE docfs_stores ADD COLUMN pruned_below_xid xid8 NOT NULL DEFAULT '0';
        """,
        // Removed documents' histories go to their owner's removal area (`.docfs/removed-UID`,
        // `VersionArchive.removedPath(of:owner:)`). A DocFS before this refuses those rows and
        // would go on putting removals in the shared area, where another owner's removal closes
        // an owner's undo: the schema's version says so, and such a DocFS no longer mounts the
        // store. Nothing in the tables changes.
        "SELECT 1;",
        // What a document's folders kept from its group and from others when it was saved
        // (`SaveRecord.unreachable`, as the bits 0o070 and 0o007), with the saver; copied into
        // each version, which never gives those bits. NULL: not known (a DocFS before this).
        "ALTER TABLE docfs_items ADD COLUMN saved_unreachable smallint; ALTER TABLE docfs_document_versions ADD COLUMN unreachable smallint;",
        // A version belongs to its document's history (`docfs_histories`), and a history to the
        // row of its document (`item`), which a rename keeps, not to a path: a rename moves nothing,
        // a version kept while another mount renamed a folder above its document is that
        // document's wherever it went, and handing a history on (a save by rename) changes one
        // row however many versions it has. A history no item holds has its place in `path`: a
        // removed document's, in a removal area, or one left at its path (`followRename`). A
        // version's `document` is where its document was when it was kept. An item deleted some
        // other way leaves its history at the paths its versions were kept at. Rows of an earlier
        // DocFS become one history per path, held by the item at that path where there is one.
        """
        CREATE TABLE docfs_histories (
            id bigserial PRIMARY KEY,
            store bigint NOT NULL REFERENCES docfs_stores (id),
            item bigint REFERENCES docfs_items (id) ON DELETE SET NULL,
            path bytea
        );
        CREATE INDEX docfs_histories_by_item ON docfs_histories (item);
        CREATE INDEX docfs_histories_by_path ON docfs_histories (store, path);
        ALTER TABLE docfs_document_versions ADD COLUMN history bigint REFERENCES docfs_histories (id);
        CREATE INDEX docfs_document_versions_by_history ON docfs_document_versions (history);
        INSERT INTO docfs_histories (store, path) SELECT DISTINCT store, document FROM docfs_document_versions;
        UPDATE docfs_document_versions v SET history = h.id FROM docfs_histories h WHERE h.store = v.store AND h.path = v.document;
        WITH RECURSIVE paths (id, store, path, depth) AS (
            SELECT i.id, i.store, i.name, 1 FROM docfs_stores s JOIN docfs_items i ON i.parent = s.root
            UNION ALL
            SELECT c.id, c.store, p.path || '\\x2f'::bytea || c.name, p.depth + 1 FROM paths p JOIN docfs_items c ON c.parent = p.id
            WHERE p.depth < 4096
        )
        UPDATE docfs_histories h SET item = p.id, path = NULL FROM paths p WHERE h.store = p.store AND h.path = p.path;
        """,
    ]

    /// Tells the planner that a folder holds few of the store's items: `n_distinct` of
    /// `docfs_items.parent` set to 5% of the rows, and the table analyzed with it. A prepared
    /// statement soon runs on a generic plan, which estimates how many items one folder holds from
    /// the statistics; where a few folders hold most of the store, that estimate made it read the
    /// whole table to find one package's items (a package save 10.5 ms on a store of 20,000 items).
    /// Not a migration: nothing in the tables changes, and a DocFS without it still mounts. Asked at
    /// every mount until the statistics say it (an `ANALYZE` that failed is made again); an
    /// `n_distinct` someone else set is left alone. Returns why it could not be said, for the log.
    static func describeFolders(_ connection: PostgresConnection) -> String? {
        let rows: PostgresRows
        do {
            rows = try connection.execute("""
                SELECT coalesce((SELECT array_to_string(attoptions, ',') FROM pg_attribute
                                 WHERE attrelid = 'docfs_items'::regclass AND attname = 'parent'), ''),
                       coalesce((SELECT n_distinct::text FROM pg_stats
                                 WHERE schemaname = current_schema() AND tablename = 'docfs_items' AND attname = 'parent'), '')
                """)
        } catch {
            return "\(error)"
        }
        let options = rows.text(0, 0) ?? "", statistics = rows.text(0, 1) ?? ""
        if statistics == folderShare { return nil }
        if !options.contains("n_distinct=") {
            do { try connection.execute("ALTER TABLE docfs_items ALTER COLUMN parent SET (n_distinct = \(folderShare))") } catch { return "\(error)" }
        } else if !options.contains("n_distinct=\(folderShare)") {
            return nil
        }
        do { try connection.execute("ANALYZE docfs_items") } catch { return "\(error)" }
        return nil
    }

    /// The share of `docfs_items`' rows that are distinct folders, as the planner is told it.
    private static let folderShare = "-0.05"

    /// Brings the database to the latest schema. Refuses a database a newer DocFS migrated.
    static func migrate(_ connection: PostgresConnection) throws {
        try connection.transaction { db in
            // Two first mounts at once: one migrates, the other waits and finds it done.
            try db.execute("SELECT pg_advisory_xact_lock(7164919253386240001)")
            try db.execute("CREATE TABLE IF NOT EXISTS docfs_schema (version integer NOT NULL)")
            let rows = try db.execute("SELECT version FROM docfs_schema")
            let current: Int
            if rows.count == 0 {
                try db.execute("INSERT INTO docfs_schema (version) VALUES (0)")
                current = 0
            } else {
                current = Int(rows.integer(0, 0) ?? 0)
            }
            guard current <= migrations.count else {
                throw PostgresStoreError.schemaTooNew(found: current, known: migrations.count)
            }
            for migration in migrations[current...] { try db.executeScript(migration) }
            try db.execute("UPDATE docfs_schema SET version = $1", [.integer(Int64(migrations.count))])
        }
    }
}
