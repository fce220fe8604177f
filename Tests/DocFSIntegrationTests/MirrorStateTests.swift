@testable import PostgresDocumentStore
import SystemSupport
import Testing

/// What a PostgreSQL mount knows of the database (`MirrorState`) is a tree of names holding rows,
/// each row found by its id. Through every change the mirror takes, it must hold exactly what a
/// plain table of paths holds (the model here): each row at one path, found from its id, from
/// its path and from every folder above it, and the bytes of fetched content counted once.
@Suite struct MirrorStateTests {
    /// Names that differ only by their bytes (NFC and NFD, a name that is not UTF-8) are two paths.
    private static let names = ["a", "b", "caf\u{E9}", "cafe\u{301}", FileSystemPath.string(fromBytes: [0x78, 0xFF]), "P.textbundle"]

    /// The table of paths the mirror's state must agree with.
    private struct Model {
        var known: [PathKey: KnownItem] = [:]

        func under(_ path: String) -> [PathKey] { known.keys.filter { StorePath.isWithin($0.path, path) } }

        mutating func set(_ path: String, _ item: KnownItem) {
            var item = item
            if let old = known[PathKey(path)], old.id == item.id, old.contentVersion == item.contentVersion {
                item.isFetched = old.isFetched
                item.lastUse = old.lastUse
            }
            // A row is at one path: set at another, it left the first.
            for (key, other) in known where other.id == item.id { known[key] = nil }
            known[PathKey(path)] = item
        }

        mutating func remove(_ path: String) { for key in under(path) { known[key] = nil } }

        mutating func move(_ source: String, to destination: String) {
            let moving = under(source)
            guard !StorePath.isWithin(destination, source), !moving.isEmpty else { return }
            let items = moving.compactMap { key in known[key].map { (key, $0) } }
            for key in moving { known[key] = nil }
            remove(destination)
            for (key, item) in items { known[PathKey(StorePath.replacingFolder(source, with: destination, in: key.path))] = item }
        }

        mutating func exchange(_ first: String, _ second: String) {
            guard !StorePath.isWithin(first, second), !StorePath.isWithin(second, first) else { return }
            let firstItems = under(first).compactMap { key in known[key].map { (key, $0) } }
            let secondItems = under(second).compactMap { key in known[key].map { (key, $0) } }
            remove(first)
            remove(second)
            for (key, item) in firstItems { known[PathKey(StorePath.replacingFolder(first, with: second, in: key.path))] = item }
            for (key, item) in secondItems { known[PathKey(StorePath.replacingFolder(second, with: first, in: key.path))] = item }
        }
    }

    @Test func theTreeOfRowsHoldsWhatATableOfPathsHolds() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var generator = ByteNameTests.SeededGenerator(state: seed)
        var state = MirrorState()
        var model = Model()
        var nextID: Int64 = 1
        func randomPath() -> String {
            (0..<Int.random(in: 1...3, using: &generator)).map { _ in Self.names.randomElement(using: &generator) ?? "a" }.joined(separator: "/")
        }
        for step in 0..<3000 {
            let path = randomPath()
            switch Int.random(in: 0..<12, using: &generator) {
            case 0..<6:
                // Folders and files at random, orphans too (an item whose folder is not known), and
                // now and then a row known elsewhere (another mount moved it).
                let id = Int.random(in: 0..<4, using: &generator) == 0 ? Int64.random(in: 1...nextID, using: &generator) : nextID
                if id == nextID { nextID += 1 }
                let size = Int64.random(in: 0...4096, using: &generator)
                let item = KnownItem(
                    id: id, version: 1, contentVersion: Int64.random(in: 1...2, using: &generator), isFolder: Bool.random(using: &generator),
                    size: size, contentKey: ContentKey(chunks: [UInt8(truncatingIfNeeded: id)]), isFetched: Bool.random(using: &generator))
                state.set(path, item)
                model.set(path, item)
            case 6:
                let fetched = Bool.random(using: &generator)
                state.setFetched(path, fetched)
                model.known[PathKey(path)]?.isFetched = fetched
            case 7:
                state.removeSubtree(path)
                model.remove(path)
            case 8:
                let other = randomPath()
                state.exchange(path, other)
                model.exchange(path, other)
            default:
                let destination = randomPath()
                state.moveSubtree(from: path, to: destination)
                model.move(path, to: destination)
            }
            let context = "seed \(seed), step \(step)"
            let problems = state.problems()
            #expect(problems.isEmpty, "\(context): \(problems)")
            #expect(state.allKnown.mapValues(\.id) == model.known.mapValues(\.id), "\(context)")
            for (key, item) in model.known {
                #expect(state.path(of: item.id).map(PathKey.init) == key, "\(context): row \(item.id) is at \(key)")
                let known = state[key.path]
                #expect(known?.id == item.id && known?.isFetched == item.isFetched && known?.contentVersion == item.contentVersion, "\(context): \(key) holds row \(item.id)")
                if let (folder, name) = StorePath.split(key.path) {
                    #expect(state[name, inFolder: folder]?.id == item.id, "\(context): \(name) in \(folder)")
                }
            }
            let fetchedRows = Set(model.known.values.filter { $0.isFetched && $0.contentKey != nil }.map(\.id))
            #expect(Set(state.evictionOrder()) == fetchedRows, "\(context): the rows eviction may take")
            let unfetched = model.under(path).contains { model.known[$0]?.isFetched == false }
            #expect(state.isFetched(under: path) == !unfetched || state[path]?.isFolder == false, "\(context): whether \(path) is fetched")
            let fetchedBytes = model.known.values.filter { $0.isFetched && $0.contentKey != nil }.reduce(0) { $0 + $1.size }
            #expect(state.fetchedBytes == fetchedBytes, "\(context): fetched bytes")
            for folder in ["", path, StorePath.split(path)?.parent ?? "", randomPath()] {
                let found = state.keys(under: folder)
                #expect(Set(found) == Set(model.under(folder)) || state[folder]?.isFolder == false, "\(context), under \(folder)")
                #expect(found.count == Set(found).count, "\(context): a path found twice under \(folder)")
            }
        }
        // Nothing known, nothing indexed: a folder's place goes with the last item at or below it.
        state.removeSubtree("")
        #expect(state.allKnown.isEmpty && state.indexedFolders == 0 && state.fetchedBytes == 0, "seed \(seed): \(state.indexedFolders) folders still indexed")
    }

    /// A save the document type re-encodes (`PostgresStore.persist`) finds the version its write
    /// began from by the document's row: another mount may have renamed the document since (this
    /// mount follows it) and saved it, which must be a conflict, not a save over the other's. By
    /// path, the write was not found at the new name, and the row as it is now was taken as the base.
    @Test func aWritesBaseIsFoundByItsRowWhereverTheDocumentWent() {
        var state = MirrorState()
        let begun = KnownItem(id: 7, version: 1, contentVersion: 1)
        state.set("a.txt", begun)
        state.set("b.txt", KnownItem(id: 8, version: 1, contentVersion: 1))
        state.bases[PathKey(".docfs/tmp/stage-1")] = ("a.txt", begun)
        state.bases[PathKey(".docfs/tmp/stage-2")] = ("c.txt", nil)
        // Another mount renames a.txt to moved.txt and saves it; a new row takes a.txt.
        state.moveSubtree(from: "a.txt", to: "moved.txt")
        state.set("moved.txt", KnownItem(id: 7, version: 2, contentVersion: 2))
        state.set("a.txt", KnownItem(id: 9, version: 1, contentVersion: 1))
        #expect(state.base(forDocument: "moved.txt")??.version == 1, "the write's base is the version it began from")
        // At the old name, another row: the write begun there is its base still (a conflict).
        #expect(state.base(forDocument: "a.txt")??.id == 7)
        // A write begun on no row (a new document), and none at all.
        #expect(state.base(forDocument: "c.txt").map { $0 == nil } == true)
        #expect(state.base(forDocument: "b.txt") == nil)
    }
}
