import SystemSupport

/// What a mount knows of the database: which row and version each mirrored path holds, which
/// files' content the mirror holds (and how much), what each write in progress is based on, and how
/// far the change log has been read.
struct MirrorState {
    /// A name in the mirror's tree of folders, and the row mirrored under it, if one is known. A
    /// place is kept while it holds a row or a place below does (a row may be known before the
    /// folder above it: a manifest is read in no order, a folder is recorded after its entries).
    private struct Place {
        var parent: Int
        /// Nil for the store's root only.
        var name: FileName?
        var item: KnownItem?
        var children: [FileName: Int] = [:]
    }

    /// The tree of places, by number; the root is `rootPlace`, a freed number is nil until reused.
    /// A path is where its place is: a folder renamed (here, or by another mount) moves one place,
    /// and everything below it goes along (a table of every known path had to re-key each one).
    private var places: [Place?] = [Place(parent: 0, name: nil)]
    private var freePlaces: [Int] = []
    private static let rootPlace = 0
    /// Where each known row is, by the row's id: the identity of an item in every mount.
    private var placeOfRow: [Int64: Int] = [:]
    /// How many places list places below them (none once nothing is known).
    var indexedFolders: Int { places.reduce(0) { $0 + ($1.map { $0.children.isEmpty ? 0 : 1 } ?? 0) } }
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

    subscript(path: String) -> KnownItem? { place(of: path).flatMap { places[$0]?.item } }

    /// What `name` in the folder at `folder` holds.
    subscript(name: FileName, inFolder folder: String) -> KnownItem? {
        place(of: folder).flatMap { places[$0]?.children[name] }.flatMap { places[$0]?.item }
    }

    /// What each of `names` in the folder at `folder` holds, the folder found once.
    func items(named names: [FileName], inFolder folder: String) -> [KnownItem?] {
        guard let place = place(of: folder), let children = places[place]?.children else { return names.map { _ in nil } }
        return names.map { name in children[name].flatMap { places[$0]?.item } }
    }

    /// What is known, by path: the manifest a clean unmount leaves.
    var allKnown: [PathKey: KnownItem] {
        Dictionary(uniqueKeysWithValues: knownPlaces(under: Self.rootPlace).compactMap { place in places[place]?.item.map { (PathKey(path(ofPlace: place)), $0) } })
    }

    func path(of id: Int64) -> String? { placeOfRow[id].map(path(ofPlace:)) }

    /// Whether the row `id` is known in a folder other than the row `folder`: another mount moved it
    /// into `folder`, and this mount has not applied the move yet.
    func isKnown(_ id: Int64, outsideFolder folder: Int64) -> Bool {
        guard let place = placeOfRow[id], let parent = places[place]?.parent else { return false }
        return places[parent]?.item?.id != folder
    }

    /// Records what `path` holds. A new version of the same content (an attribute change) keeps
    /// whether its content was fetched, and when it was last used. A row known at another path is
    /// there no more (another mount moved it, and the move arrives as the row at its new path).
    mutating func set(_ path: String, _ item: KnownItem) {
        guard let place = makePlace(path) else { return }
        var item = item
        if let old = places[place]?.item {
            if old.id == item.id, old.contentVersion == item.contentVersion {
                item.isFetched = old.isFetched
                item.lastUse = old.lastUse
            }
            forget(at: place)
        }
        let elsewhere = placeOfRow[item.id].flatMap { $0 == place ? nil : $0 }
        if let elsewhere { forget(at: elsewhere) }
        remember(item, at: place)
        // After the row is here: the place it left may be the only thing below this one.
        if let elsewhere { prune(elsewhere) }
    }

    private mutating func remember(_ item: KnownItem, at place: Int) {
        clock = max(clock, item.lastUse)
        if placeOfRow[item.id] != place { placements &+= 1 }
        placeOfRow[item.id] = place
        places[place]?.item = item
        guard item.isFetched, let key = item.contentKey else { return }
        fetched[key, default: []].insert(item.id)
        fetchedBytes += item.size
    }

    /// `place` holds its row no more.
    private mutating func forget(at place: Int) {
        guard let item = places[place]?.item else { return }
        places[place]?.item = nil
        if placeOfRow[item.id] == place { placeOfRow[item.id] = nil }
        guard item.isFetched, let key = item.contentKey else { return }
        fetched[key]?.remove(item.id)
        if fetched[key]?.isEmpty == true { fetched[key] = nil }
        fetchedBytes -= item.size
    }

    /// Forgets `path` and everything under it.
    mutating func removeSubtree(_ path: String) {
        placements &+= 1
        guard let place = place(of: path) else { return }
        if place == Self.rootPlace {
            forget(at: place)
            for child in places[place]?.children.values.map({ $0 }) ?? [] { free(child) }
            places[place]?.children = [:]
        } else {
            detach(place)
            free(place)
        }
    }

    /// `from` and everything under it now have `to` in its place (what was at `to` is forgotten).
    /// A folder cannot move into itself (rename(2) refuses it): such a move changes nothing.
    mutating func moveSubtree(from source: String, to destination: String) {
        guard !StorePath.isWithin(destination, source), let moving = place(of: source), moving != Self.rootPlace else { return }
        placements &+= 1
        detach(moving)
        attach(moving, at: destination)
        // `fetched` is by row, which a rename keeps.
    }

    /// What is at `first` is at `second` now, and the other way round (rename(2)'s
    /// RENAME_EXCHANGE: neither holds the other).
    mutating func exchange(_ first: String, _ second: String) {
        guard !StorePath.isWithin(first, second), !StorePath.isWithin(second, first) else { return }
        placements &+= 1
        let firstPlace = place(of: first), secondPlace = place(of: second)
        for place in [firstPlace, secondPlace].compactMap({ $0 }) { detach(place) }
        if let firstPlace { attach(firstPlace, at: second) }
        if let secondPlace { attach(secondPlace, at: first) }
    }

    // MARK: The tree of places

    /// The place of `path`, where anything is known at or below it.
    private func place(of path: String) -> Int? {
        var place = Self.rootPlace
        for component in path.utf8.split(separator: UInt8(ascii: "/")) {
            guard let name = try? FileName(String(Substring(component))), let child = places[place]?.children[name] else { return nil }
            place = child
        }
        return place
    }

    /// The place of `path`, made with those of the folders above it where missing; nil for a path
    /// that is not one (DocFS names every path it records).
    private mutating func makePlace(_ path: String) -> Int? {
        // Every name checked before any place is made: a path refused halfway left a place holding
        // nothing.
        guard let names = try? StorePath.components(path) else {
            assertionFailure("\(path) is not a store path")
            return nil
        }
        var place = Self.rootPlace
        for name in names {
            if let child = places[place]?.children[name] {
                place = child
            } else {
                let child = allocate(Place(parent: place, name: name))
                places[place]?.children[name] = child
                place = child
            }
        }
        return place
    }

    private mutating func allocate(_ place: Place) -> Int {
        if let reused = freePlaces.popLast() {
            places[reused] = place
            return reused
        }
        places.append(place)
        return places.count - 1
    }

    /// Forgets the rows at and below `place`, which is out of the tree, and frees its places.
    private mutating func free(_ place: Int) {
        var pending = [place]
        while let next = pending.popLast() {
            forget(at: next)
            pending.append(contentsOf: places[next]?.children.values.map { $0 } ?? [])
            places[next] = nil
            freePlaces.append(next)
        }
    }

    /// Takes `place` out of its folder's place, which goes too if nothing is known at or below it.
    private mutating func detach(_ place: Int) {
        guard let parent = places[place]?.parent, let name = places[place]?.name else { return }
        places[parent]?.children[name] = nil
        prune(parent)
    }

    /// Frees `place` and the folders' places above it, up to the first that holds a row or more.
    private mutating func prune(_ place: Int) {
        var current = place
        while current != Self.rootPlace, let found = places[current], found.item == nil, found.children.isEmpty, let name = found.name {
            places[found.parent]?.children[name] = nil
            places[current] = nil
            freePlaces.append(current)
            current = found.parent
        }
    }

    /// Puts `place`, out of the tree, at `path`, in the place of whatever was there.
    private mutating func attach(_ place: Int, at path: String) {
        guard let (folder, name) = StorePath.split(path) else {
            free(place)
            return
        }
        removeSubtree(path)
        guard let parent = makePlace(folder) else {
            free(place)
            return
        }
        places[place]?.parent = parent
        places[place]?.name = name
        places[parent]?.children[name] = place
        // Every row below moved: where each is known is the place it always was.
    }

    private func path(ofPlace place: Int) -> String {
        var names: [String] = []
        var current = place
        while let found = places[current], let name = found.name {
            names.append(name.string)
            current = found.parent
        }
        return names.reversed().joined(separator: "/")
    }

    /// The places holding a row at or below `place`.
    private func knownPlaces(under place: Int) -> [Int] {
        var found: [Int] = []
        var pending = [place]
        while let next = pending.popLast() {
            guard let current = places[next] else { continue }
            if current.item != nil { found.append(next) }
            pending.append(contentsOf: current.children.values)
        }
        return found
    }

    /// The place of `path`, if known, and of every known path below it; only `path`'s where it
    /// holds a file. (Paths are made only for what a caller needs: a package of 20,000 files is
    /// looked at twice at each open.)
    private func known(under path: String) -> [Int] {
        guard let place = place(of: path) else { return [] }
        if !path.isEmpty, let item = places[place]?.item, !item.isFolder { return [place] }
        return knownPlaces(under: place)
    }

    // MARK: The content cache

    /// Marks the files at or under `path` used now; returns those whose content is not fetched.
    mutating func use(under path: String) -> [String] {
        clock += 1
        var unfetched: [String] = []
        for place in known(under: path) where places[place]?.item?.isFolder == false {
            places[place]?.item?.lastUse = clock
            if places[place]?.item?.isFetched == false { unfetched.append(self.path(ofPlace: place)) }
        }
        return unfetched
    }

    /// The content of `path` is in the mirror now (or, `isFetched` false, a placeholder stands there).
    mutating func setFetched(_ path: String, _ isFetched: Bool) {
        guard let place = place(of: path), var item = places[place]?.item else { return }
        forget(at: place)
        item.isFetched = isFetched
        clock += 1
        item.lastUse = clock
        remember(item, at: place)
    }

    /// A path in the mirror that holds content with `key`, to copy instead of fetching.
    func fetchedPath(withKey key: ContentKey?) -> String? {
        guard let key, let id = fetched[key]?.first else { return nil }
        return path(of: id)
    }

    /// The rows whose content is in the mirror, least recently used first.
    func evictionOrder() -> [Int64] {
        fetchedUses().sorted { $0.lastUse < $1.lastUse }.map(\.id)
    }

    /// The path of the content in the mirror used last (being read: eviction spares it).
    func lastUsedFetchedPath() -> String? { fetchedUses().max { $0.lastUse < $1.lastUse }.flatMap { path(of: $0.id) } }

    private func fetchedUses() -> [(id: Int64, lastUse: UInt64)] {
        fetched.values.flatMap { $0 }.compactMap { id in placeOfRow[id].flatMap { places[$0]?.item }.map { (id, $0.lastUse) } }
    }

    /// What the mirror holds at or under `path`: the newest content version among its items, and
    /// their count (see `ContentFingerprint`).
    func content(under path: String) -> ContentFingerprint {
        let items = known(under: path).compactMap { places[$0]?.item }
        return ContentFingerprint(newest: items.map(\.contentVersion).max() ?? 0, items: items.count)
    }

    /// What is known below the folder `path` (not `path` itself), by path.
    func items(below path: String) -> [(path: String, item: KnownItem)] {
        let folder = place(of: path)
        return known(under: path).compactMap { place in
            place == folder ? nil : places[place]?.item.map { (self.path(ofPlace: place), $0) }
        }
    }

    /// Whether the mirror holds the content of every regular file at or under `path`.
    func isFetched(under path: String) -> Bool {
        !known(under: path).contains { places[$0]?.item?.isFetched == false }
    }

    /// The base of a write for `document`, when one is in progress: the write begun on the row
    /// `document` holds now, wherever it was then (another mount may have renamed it since), else
    /// one begun at `document` (on a row gone since, or on no row: a conflict, or a new document).
    func base(forDocument document: String) -> KnownItem?? {
        if let row = self[document]?.id, let write = bases.values.first(where: { $0.base?.id == row }) { return write.base }
        return bases.values.first { FileSystemPath.same($0.document, document) }.map { $0.base }
    }

    /// `path`, if known, and every known path below it, found folder by folder.
    func keys(under path: String) -> [PathKey] { known(under: path).map { PathKey(self.path(ofPlace: $0)) } }

    /// What is wrong with the tree of places, if anything (for tests): every place but the root
    /// holds a row or has places below; each is listed in its folder's place under its name; each
    /// number is in the tree or free, once; rows and their places agree.
    func problems() -> [String] {
        var problems: [String] = []
        var reached = Set<Int>()
        var pending = [Self.rootPlace]
        while let next = pending.popLast() {
            guard reached.insert(next).inserted else {
                problems.append("place \(next) is reached twice")
                continue
            }
            guard let place = places[next] else {
                problems.append("place \(next) is listed but free")
                continue
            }
            if next != Self.rootPlace, place.item == nil, place.children.isEmpty { problems.append("place \(next) holds nothing") }
            if let item = place.item, placeOfRow[item.id] != next { problems.append("row \(item.id) is at place \(next), known at \(placeOfRow[item.id] ?? -1)") }
            for (name, child) in place.children {
                if places[child]?.parent != next || places[child]?.name != name { problems.append("place \(child) does not name its folder \(next) and \(name)") }
                pending.append(child)
            }
        }
        let free = Set(freePlaces)
        if free.count != freePlaces.count { problems.append("a free place is listed twice") }
        if reached.count + free.count != places.count || !reached.isDisjoint(with: free) { problems.append("\(places.count) places, \(reached.count) in the tree, \(free.count) free") }
        for (id, place) in placeOfRow where places[place]?.item?.id != id { problems.append("row \(id) is known at place \(place), which holds another") }
        return problems
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
