import SystemSupport

/// What a mount knows of the database: which row and version each mirrored path holds, which
/// files' content the mirror holds (and how much), what each write in progress is based on, and how
/// far the change log has been read.
struct MirrorState {
    private(set) var known: [PathKey: KnownItem] = [:]
    private var paths: [Int64: String] = [:]
    /// The known paths in each folder, by the folder's path (`""` for the root): what is under a
    /// folder is found from it, not by a scan of everything known (a package opened on a store of
    /// 100,000 items looked at every one of them).
    private var children: [PathKey: Set<PathKey>] = [:]
    /// How many folders the index lists paths of (none once nothing is known).
    var indexedFolders: Int { children.count }
    /// The rows whose content the mirror holds, by content key: where a file with that content can
    /// be copied from, and the candidates for eviction.
    private var fetched: [ContentKey: Set<Int64>] = [:]
    /// The bytes of content the mirror holds (placeholders take none).
    private(set) var fetchedBytes: Int64 = 0
    private var clock: UInt64 = 0
    /// The stored version each write in progress began from, by staging file or clone path.
    var bases: [PathKey: (document: String, base: KnownItem?)] = [:]
    /// What each package's clone (or folder a type's encoding built) took over when it was made,
    /// by its path and the items' inodes in it (see `PostgresStore.linkedItems`).
    var linkedItems: [PathKey: [UInt64: LinkedItem]] = [:]
    /// How many local changes the mirror has taken: what another mount's changes were read
    /// against is stale once it moved (see `catchUp`).
    var localChanges: UInt64 = 0
    /// The folders of local changes committed, or being committed, whose mirror part has not been
    /// made yet (see `PostgresStore.publishingAfterCommit`), each with how many: no other mount's
    /// change to them (or to a folder holding them) is applied meanwhile, nor a whole comparison.
    var foldersPublishing: [PathKey: Int] = [:]

    /// Whether applying the database's state of `folder` could make a local change not yet
    /// published, out of turn.
    func isPublishing(within folder: String) -> Bool {
        foldersPublishing.keys.contains { StorePath.isWithin($0.path, folder) || StorePath.isWithin(folder, $0.path) }
    }
    /// How far `docfs_changes` has been read.
    var changeCursor = ChangeCursor()
    /// Counts the times an item's path changed here (moved, removed, or first known): where a
    /// history keyed by an item is shown follows it (`PostgresStore.followItems`).
    private(set) var placements: UInt64 = 0
    /// How many history moves the change log showed (`StoreQueries.recordHistoryMove`), counted
    /// once more at each whole comparison, which reads no log.
    var historyMovesRead: Int64 = 0
    /// When the mirror last read the change log to its end and applied it (the change feed's lag
    /// is the time since).
    var currentAt = ContinuousClock.now
    /// Set when the mirror may differ from the database (a commit failed after the mirror changed):
    /// the whole tree is compared again once the database answers.
    var needsFullSynchronization = false
    /// Rows that are never mirrored (see `PostgresStore.acceptedName`), by id.
    var invalidRows: [Int64: InvalidRow] = [:]

    subscript(path: String) -> KnownItem? { known[PathKey(path)] }

    /// What is known, for the manifest a clean unmount leaves.
    var allKnown: [PathKey: KnownItem] { known }

    func path(of id: Int64) -> String? { paths[id] }

    /// Records what `path` holds. A new version of the same content (an attribute change) keeps
    /// whether its content was fetched, and when it was last used.
    mutating func set(_ path: String, _ item: KnownItem) {
        var item = item
        if let old = known[PathKey(path)] {
            if old.id == item.id, old.contentVersion == item.contentVersion {
                item.isFetched = old.isFetched
                item.lastUse = old.lastUse
            }
            forget(old, at: path)
        }
        remember(path, item)
    }

    private mutating func remember(_ path: String, _ item: KnownItem) {
        clock = max(clock, item.lastUse)
        place(PathKey(path), item)
        if paths[item.id].map({ !FileSystemPath.same($0, path) }) ?? true { placements &+= 1 }
        paths[item.id] = path
        guard item.isFetched, let key = item.contentKey else { return }
        fetched[key, default: []].insert(item.id)
        fetchedBytes += item.size
    }

    /// `path` holds `item` no more. (A row that moved elsewhere, as a folder renamed by another
    /// mount arrives — at its new path before it leaves its old one — keeps its new path.)
    private mutating func forget(_ item: KnownItem, at path: String) {
        if let known = paths[item.id], FileSystemPath.same(known, path) { paths[item.id] = nil }
        guard item.isFetched, let key = item.contentKey else { return }
        fetched[key]?.remove(item.id)
        if fetched[key]?.isEmpty == true { fetched[key] = nil }
        fetchedBytes -= item.size
    }

    /// Forgets `path` and everything under it.
    mutating func removeSubtree(_ path: String) {
        placements &+= 1
        for key in keys(under: path) {
            if let item = displace(key) { forget(item, at: key.path) }
        }
    }

    /// `key` holds `item` in `known`, and is listed in its folder, and each folder on the way in
    /// its own (known or not: a path is found from every folder above it).
    private mutating func place(_ key: PathKey, _ item: KnownItem) {
        known[key] = item
        var child = key
        while !child.path.isEmpty {
            let folder = Self.folder(of: child)
            guard children[folder, default: []].insert(child).inserted else { return }
            child = folder
        }
    }

    /// `key` leaves `known`, and its folder's list once nothing is known at or below it (and so on
    /// up); what it held, if anything.
    private mutating func displace(_ key: PathKey) -> KnownItem? {
        let item = known.removeValue(forKey: key)
        var child = key
        while !child.path.isEmpty, known[child] == nil, children[child] == nil {
            let folder = Self.folder(of: child)
            children[folder]?.remove(child)
            if children[folder]?.isEmpty == true { children[folder] = nil }
            child = folder
        }
        return item
    }

    private static func folder(of key: PathKey) -> PathKey { PathKey(StorePath.split(key.path)?.parent ?? "") }

    // MARK: The content cache

    /// Marks the files at or under `path` used now; returns those whose content is not fetched.
    mutating func use(under path: String) -> [String] {
        clock += 1
        var unfetched: [String] = []
        for key in keys(under: path) where known[key]?.isFolder == false {
            known[key]?.lastUse = clock
            if known[key]?.isFetched == false { unfetched.append(key.path) }
        }
        return unfetched
    }

    /// The content of `path` is in the mirror now (or, `isFetched` false, a placeholder stands there).
    mutating func setFetched(_ path: String, _ isFetched: Bool) {
        guard var item = known[PathKey(path)] else { return }
        forget(item, at: path)
        item.isFetched = isFetched
        clock += 1
        item.lastUse = clock
        remember(path, item)
    }

    /// A path in the mirror that holds content with `key`, to copy instead of fetching.
    func fetchedPath(withKey key: ContentKey?) -> String? {
        guard let key, let id = fetched[key]?.first else { return nil }
        return paths[id]
    }

    /// Every path whose content is in the mirror, least recently used first.
    func evictionOrder() -> [String] {
        let items = fetched.values.flatMap { $0 }.compactMap { id in paths[id].flatMap { path in known[PathKey(path)].map { (path, $0.lastUse) } } }
        return items.sorted { $0.1 < $1.1 }.map(\.0)
    }

    /// What the mirror holds at or under `path`: the newest content version among its items, and
    /// their count (see `ContentFingerprint`).
    func content(under path: String) -> ContentFingerprint {
        let items = keys(under: path).compactMap { known[$0] }
        return ContentFingerprint(newest: items.map(\.contentVersion).max() ?? 0, items: items.count)
    }

    /// What is known below the folder `path` (not `path` itself), by path.
    func items(below path: String) -> [(path: String, item: KnownItem)] {
        keys(under: path).compactMap { key in
            FileSystemPath.same(key.path, path) ? nil : known[key].map { (key.path, $0) }
        }
    }

    /// The regular files at or under `path` whose content is not in the mirror.
    func unfetched(under path: String) -> [String] {
        keys(under: path).filter { known[$0]?.isFetched == false }.map(\.path)
    }

    /// `from` and everything under it now have `to` in its place.
    mutating func moveSubtree(from source: String, to destination: String) {
        placements &+= 1
        let moved = keys(under: source).compactMap { key in displace(key).map { (key, $0) } }
        for (key, item) in moved {
            let renamed = StorePath.replacingFolder(source, with: destination, in: key.path)
            place(PathKey(renamed), item)
            paths[item.id] = renamed
        }
        // `fetched` is by row, which a rename keeps.
    }

    /// The base of a write for `document`, when one is in progress.
    func base(forDocument document: String) -> KnownItem?? {
        bases.values.first { FileSystemPath.same($0.document, document) }.map { $0.base }
    }

    /// `path`, if known, and every known path below it, found folder by folder.
    func keys(under path: String) -> [PathKey] {
        let key = PathKey(path)
        if !path.isEmpty, let item = known[key], !item.isFolder { return [key] }
        var found = known[key] == nil ? [] : [key]
        var folders = [key]
        while let folder = folders.popLast() {
            for child in children[folder] ?? [] {
                if known[child] != nil { found.append(child) }
                if children[child] != nil { folders.append(child) }
            }
        }
        return found
    }
}

/// A row of `docfs_items` the mirror refuses to show, and why.
public struct InvalidRow: Sendable, Equatable {
    public let id: Int64
    public let parent: Int64?
    /// The name's bytes as the row holds them.
    public let name: [UInt8]
    /// The store path of the folder it is in.
    public let folder: String
    public let problem: String

    /// The name's bytes, printable: hexadecimal, so no byte of it can start a new line or field.
    public var nameDescription: String {
        name.isEmpty ? "(none)" : name.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
