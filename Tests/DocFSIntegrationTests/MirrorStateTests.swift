@testable import PostgresDocumentStore
import SystemSupport
import Testing

/// What a PostgreSQL mount knows is under a folder (`MirrorState.keys(under:)`) is found from the
/// folder, through an index of each folder's paths, where it was a scan of every known path (a
/// package opened on a store of 100,000 items looked at each of them). The index must find exactly
/// what the scan found, through every change the mirror takes.
@Suite struct MirrorStateTests {
    /// Names that differ only by their bytes (NFC and NFD, a name that is not UTF-8) are two paths.
    private static let names = ["a", "b", "caf\u{E9}", "cafe\u{301}", FileSystemPath.string(fromBytes: [0x78, 0xFF]), "P.textbundle"]

    private static func scan(_ state: MirrorState, under path: String) -> Set<PathKey> {
        Set(state.allKnown.keys.filter { StorePath.isWithin($0.path, path) })
    }

    @Test func keysUnderAFolderAreWhatAScanFinds() {
        let seed = UInt64.random(in: 0...UInt64.max)
        var generator = ByteNameTests.SeededGenerator(state: seed)
        var state = MirrorState()
        var nextID: Int64 = 1
        func randomPath() -> String {
            (0..<Int.random(in: 1...3, using: &generator)).map { _ in Self.names.randomElement(using: &generator) ?? "a" }.joined(separator: "/")
        }
        for step in 0..<3000 {
            let path = randomPath()
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<6:
                // Folders and files at random, orphans too (an item whose folder is not known).
                state.set(path, KnownItem(id: nextID, version: 1, contentVersion: 1, isFolder: Bool.random(using: &generator)))
                nextID += 1
            case 6:
                state.setFetched(path, Bool.random(using: &generator))
            case 7:
                state.removeSubtree(path)
            default:
                state.moveSubtree(from: path, to: randomPath())
            }
            for folder in ["", path, StorePath.split(path)?.parent ?? "", randomPath()] {
                let found = state.keys(under: folder)
                #expect(Set(found) == Self.scan(state, under: folder) || state[folder]?.isFolder == false, "seed \(seed), step \(step), under \(folder)")
                #expect(found.count == Set(found).count, "seed \(seed), step \(step): a path found twice under \(folder)")
            }
        }
        // Nothing known, nothing indexed: a path's links go with the last item at or below it.
        state.removeSubtree("")
        #expect(state.allKnown.isEmpty && state.indexedFolders == 0, "seed \(seed): \(state.indexedFolders) folders still indexed")
    }
}
