import DocumentStore
import SystemSupport

/// The rows below a folder that a change replacing it whole keeps (a package changed through its
/// clone, or re-encoded by its type): the files the new folder only carried over (linked: the same
/// file, the same content) and the folders still at their place. Each keeps its id, so its number
/// in every mount, and a file's content is neither uploaded nor fetched again.
struct KeptRows {
    /// The files, by the path each has once the change is made: where it was, and what it is.
    var files: [PathKey: (from: String, item: KnownItem)] = [:]
    /// The folders, by their path.
    var folders: [PathKey: KnownItem] = [:]

    /// Makes room for the new folder's rows below `root`: every file kept goes to a name no file
    /// can have, under `root`, checked to hold still the content this mount knows (each then goes
    /// to its place, `PostgresStore.publishChildren`: the names it goes to are free, as when an
    /// exchange swaps two, and no folder removed takes it along); then every other row below goes.
    func clearWay(_ db: PostgresConnection, _ queries: StoreQueries, root: Int64) throws {
        for file in files.values {
            queries.moveKeptFileLater(db, id: file.item.id, contentVersion: file.item.contentVersion, to: (root, StoreQueries.parkedName(file.item.id)))
        }
        try queries.removeRows(db, below: [root] + folders.values.map(\.id), keeping: files.values.map(\.item.id) + folders.values.map(\.id))
    }
}

extension PostgresStore {
    /// The rows below `path` that `prepared`, about to take its place, keeps: `carried` (see
    /// `carriedFiles`) and the folders `prepared` has at the same place.
    func rowsToKeep(below path: String, preparedAt prepared: String, carried: [(String, String)]) -> KeptRows {
        guard !carried.isEmpty || (try? mirror.status(of: prepared))?.kind == .directory else { return KeptRows() }
        let known = state.withLock { $0.items(below: path) }
        var kept = KeptRows()
        let byPath = Dictionary(known.map { (PathKey($0.path), $0.item) }, uniquingKeysWith: { first, _ in first })
        for (from, to) in carried {
            guard let item = byPath[PathKey(from)], !item.isFolder else { continue }
            kept.files[PathKey(to)] = (from, item)
        }
        for (folder, item) in known where item.isFolder {
            if (try? mirror.status(of: StorePath.replacingFolder(path, with: prepared, in: folder)))?.kind == .directory { kept.folders[PathKey(folder)] = item }
        }
        return kept
    }
}
