import DocumentStore
import Foundation
import Glibc
import SystemSupport
import Testing

/// A history is kept under its document's number (`VersionArchive`): a rename rewrites the note
/// and moves no version, and an earlier DocFS's history (a folder named by the SHA-256 of the
/// path) is found through its note and joins the document's number at the next save.
@Suite struct HistoryKeyTests {
    private func makeStore() throws -> (DirectoryStore, String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-history-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return (try DirectoryStore(path: folder), folder)
    }

    /// A save as DocFS makes it: the replaced version kept, the new one installed and recorded.
    private func save(_ store: DirectoryStore, _ path: String, _ contents: String) throws {
        let stage = try store.makeStagingFile(seededFrom: nil, for: path)
        try FileIO.writeAll(stage.descriptor.rawValue, Data(contents.utf8))
        try store.keepVersion(of: path)
        _ = try store.install(stage, at: path, durable: false)
        store.recordSave(of: path, by: 1000)
    }

    /// A save by rename as an editor makes it through the mount: a new file (the file system's
    /// number) renamed over the document, the replaced version kept first.
    private func saveByRename(_ store: DirectoryStore, _ root: String, _ path: String, _ contents: String) throws {
        try Data(contents.utf8).write(to: URL(fileURLWithPath: root + "/" + path + ".new"))
        try store.keepVersion(of: path)
        try store.rename(path + ".new", to: path, flags: 0)
        store.recordSave(of: path, by: 1000)
    }

    /// The history folders in the archive, as `SHARD/KEY`.
    private func historyFolders(_ root: String) -> [String] {
        let archive = root + "/.docfs/versions"
        let shards = ((try? FileManager.default.contentsOfDirectory(atPath: archive)) ?? []).filter { $0.utf8.count == 2 }
        return shards.flatMap { shard in ((try? FileManager.default.contentsOfDirectory(atPath: archive + "/" + shard)) ?? []).map { shard + "/" + $0 } }.sorted()
    }

    private func numberFolder(_ store: DirectoryStore, _ path: String) throws -> String {
        let number = String(format: "%016llX", try store.status(of: path).identity)
        return String(number.suffix(2)) + "/" + number
    }

    /// What each version of `document` holds, oldest first ("?" for one that cannot be read).
    private func versionTexts(_ store: DirectoryStore, _ document: String) -> [String]? {
        store.versions?.versions(of: document).map { (try? String(contentsOfFile: $0.location, encoding: .utf8)) ?? "?" }
    }

    /// `cp -a` as root runs it beside the mount: the file with its attributes, DocFS's number too.
    private func copyWithAttributes(_ source: String, _ destination: String) throws -> Bool {
        let copy = try Process.run(URL(fileURLWithPath: "/bin/cp"), arguments: ["-a", source, destination])
        copy.waitUntilExit()
        return copy.terminationStatus == 0
    }

    @Test func aRenameRewritesTheNoteAndMovesNoVersion() throws {
        let (store, root) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("one\n".utf8).write(to: URL(fileURLWithPath: root + "/a.md"))
        try save(store, "a.md", "two\n")
        try save(store, "a.md", "three\n")
        let folder = try numberFolder(store, "a.md")
        #expect(historyFolders(root) == [folder])
        let version = try FileStatus.of(path: root + "/.docfs/versions/" + folder)
        try store.rename("a.md", to: "b.md", flags: 0)
        store.moveVersions(from: "a.md", to: "b.md", exchanging: false)
        #expect(historyFolders(root) == [folder])
        #expect(try FileStatus.of(path: root + "/.docfs/versions/" + folder).inode == version.inode)
        #expect(try String(contentsOfFile: root + "/.docfs/versions/" + folder + "/document", encoding: .utf8) == "b.md")
        #expect(store.versions?.versions(of: "b.md").count == 2)
        #expect(store.versions?.versions(of: "a.md").isEmpty == true)
        // Read afresh from the notes by another opening of the store.
        let reopened = try DirectoryStore(path: root)
        #expect(reopened.versions?.versions(of: "b.md").count == 2)
        #expect(reopened.versions?.index.documents == [Array("b.md".utf8)])
    }

    @Test func anEarlierDocFSsHistoryJoinsItsDocumentsNumberAtTheNextSave() throws {
        let (_, root) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("now\n".utf8).write(to: URL(fileURLWithPath: root + "/a.md"))
        // As an earlier DocFS kept it: a folder named by the SHA-256 of the path.
        let key = SHA256Hex.of(Array("a.md".utf8))
        let legacy = root + "/.docfs/versions/" + String(key.prefix(2)) + "/" + key
        try FileManager.default.createDirectory(atPath: legacy, withIntermediateDirectories: true)
        try Data("a.md".utf8).write(to: URL(fileURLWithPath: legacy + "/document"))
        try Data("before\n".utf8).write(to: URL(fileURLWithPath: legacy + "/20200101T000000.000000Z.md"))
        let store = try DirectoryStore(path: root)
        #expect(store.versions?.versions(of: "a.md").count == 1)
        try save(store, "a.md", "after\n")
        #expect(historyFolders(root) == [try numberFolder(store, "a.md")])
        let kept = versionTexts(store, "a.md")
        #expect(kept == ["before\n", "now\n"])
    }

    /// A save by rename over an empty document keeps no version (nothing to go back to), yet its
    /// history must still take the new number: the save after it found the history under a number
    /// no item at the path had and showed it among the removed.
    @Test func aSaveOverAnEmptyDocumentKeepsItsHistory() throws {
        let (store, root) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("one\n".utf8).write(to: URL(fileURLWithPath: root + "/a.md"))
        for contents in ["two\n", "", "three\n", "four\n"] { try saveByRename(store, root, "a.md", contents) }
        let kept = versionTexts(store, "a.md")
        #expect(kept == ["one\n", "two\n", "three\n"])
        #expect(historyFolders(root) == [try numberFolder(store, "a.md")])
        #expect(store.versions?.index.documents == [Array("a.md".utf8)], "nothing among the removed")
    }

    /// A history set aside (its document removed, its number nobody's) whose note still names the
    /// path it left (the note could not be written: a full disk) is no history of what is at that
    /// path now: read again, it is shown among the removed, never joined to the new document's.
    @Test func aHistorySetAsideIsNeverListedAtThePathItLeft() throws {
        let (first, root) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("new\n".utf8).write(to: URL(fileURLWithPath: root + "/b.md"))
        try save(first, "b.md", "newer\n")
        let aside = root + "/.docfs/versions/AB/00000000000000AB-removed-1"
        try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: true)
        try Data("b.md".utf8).write(to: URL(fileURLWithPath: aside + "/document"))
        try Data("secret\n".utf8).write(to: URL(fileURLWithPath: aside + "/20200101T000000.000000Z.md"))
        let store = try DirectoryStore(path: root)
        #expect(versionTexts(store, "b.md") == ["new\n"])
        #expect(versionTexts(store, VersionArchive.removedPath(of: "b.md", owner: geteuid())) == ["secret\n"])
    }

    /// A document renamed beside the mount, at whose old path its owner had removed another: its
    /// history, shown among the removed when the archive is read, joined that removal's, and its
    /// number's folder was gone, so the document's next save where it went found no history.
    @Test func aHistoryShownAmongTheRemovedComesBackWithItsDocument() throws {
        let (first, root) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("one\n".utf8).write(to: URL(fileURLWithPath: root + "/p.md"))
        try save(first, "p.md", "two\n")
        try save(first, "p.md", "three\n")
        // The owner's earlier removal at p.md, with its own history.
        let removed = VersionArchive.removedPath(of: "p.md", owner: geteuid())
        let earlier = root + "/.docfs/versions/EE/" + String(repeating: "E", count: 64)
        try FileManager.default.createDirectory(atPath: earlier, withIntermediateDirectories: true)
        try Data(removed.utf8).write(to: URL(fileURLWithPath: earlier + "/document"))
        try Data("gone\n".utf8).write(to: URL(fileURLWithPath: earlier + "/20200101T000000.000000Z.md"))
        #expect(rename(root + "/p.md", root + "/q.md") == 0)
        let store = try DirectoryStore(path: root)
        #expect(versionTexts(store, removed)?.sorted() == ["gone\n", "one\n", "two\n"], "shown among the removed until it is found")
        // Read again (a remount): still there, and still the document's to take back.
        let later = try DirectoryStore(path: root)
        #expect(versionTexts(later, removed)?.sorted() == ["gone\n", "one\n", "two\n"])
        try save(later, "q.md", "four\n")
        #expect(versionTexts(later, "q.md") == ["one\n", "two\n", "three\n"])
        #expect(versionTexts(later, removed) == ["gone\n"])
        #expect(historyFolders(root).count == 2, "the document's folder and the removal's: no trace left")
    }

    /// `cp -a` as root copies DocFS's number attribute: the copy carried the document's number,
    /// and its first save took the document's whole history to the copy's path.
    @Test func aCopyCarryingTheNumberGetsNoneOfTheOriginalsHistory() throws {
        let (first, root) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("one\n".utf8).write(to: URL(fileURLWithPath: root + "/p.md"))
        try save(first, "p.md", "two\n")
        try save(first, "p.md", "three\n")
        #expect(try copyWithAttributes(root + "/p.md", root + "/q.md"))
        let store = try DirectoryStore(path: root)
        try save(store, "q.md", "copied on\n")
        #expect(versionTexts(store, "p.md") == ["one\n", "two\n"])
        #expect(versionTexts(store, "q.md") == ["three\n"])
        try save(store, "p.md", "four\n")
        #expect(versionTexts(store, "p.md") == ["one\n", "two\n", "three\n"])
    }

    /// A document moved to another file system and back (here: copied with its attributes, and the
    /// original removed) is a new file carrying the number: it gets a number of its own, and its
    /// history comes along under it, whether it is first looked up or first saved.
    @Test(arguments: [true, false]) func aDocumentCopiedAwayAndBackKeepsItsHistory(lookedUpFirst: Bool) throws {
        let (first, root) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("one\n".utf8).write(to: URL(fileURLWithPath: root + "/p.md"))
        try save(first, "p.md", "two\n")
        try save(first, "p.md", "three\n")
        let before = try first.status(of: "p.md").identity
        #expect(try copyWithAttributes(root + "/p.md", root + "/q.md") && unlink(root + "/p.md") == 0)
        let store = try DirectoryStore(path: root)
        if lookedUpFirst { #expect(try store.status(of: "q.md").identity != before, "a number of its own") }
        try save(store, "q.md", "four\n")
        #expect(try store.status(of: "q.md").identity != before)
        let kept = versionTexts(store, "q.md")
        #expect(kept == ["one\n", "two\n", "three\n"])
        #expect(historyFolders(root) == [try numberFolder(store, "q.md")])
    }

    /// An editor's save that renames the document to its backup first (vim's `backupcopy=no`,
    /// Emacs), then puts a new file at the name: the history stays at the name for the new file,
    /// whether that file is created there or renamed in. A save that found no file at the name
    /// forgot the number the backup's rename noted, and the save after it showed the whole history
    /// among the removed.
    @Test(arguments: [false, true]) func aSaveAfterTheDocumentWentToItsBackupKeepsTheHistory(draftFirst: Bool) throws {
        let (store, root) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("one\n".utf8).write(to: URL(fileURLWithPath: root + "/p.md"))
        try save(store, "p.md", "two\n")
        try save(store, "p.md", "three\n")
        try store.keepVersion(of: "p.md", copying: true)
        try store.rename("p.md", to: "p.md~", flags: 0)
        // The new file: an empty draft made at the name and written over, or renamed in.
        if draftFirst {
            try store.createEmptyFile("p.md", mode: 0o644, owner: nil)
            try save(store, "p.md", "four\n")
        } else {
            try saveByRename(store, root, "p.md", "four\n")
        }
        try saveByRename(store, root, "p.md", "five\n")
        let kept = versionTexts(store, "p.md")
        #expect(kept == ["one\n", "two\n", "three\n", "four\n"])
        #expect(store.versions?.index.documents == [Array("p.md".utf8)], "nothing among the removed")
    }

    /// Two documents that each left `p.md` beside the mount (no mount watching), each found
    /// again elsewhere: each takes back its own versions. The first one's folder was the removal's
    /// history the second joined, so the first, found again, took the second's versions with it.
    @Test func twoHistoriesShownAmongTheRemovedAtOnePathComeBackApart() throws {
        let (first, root) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try Data("m1\n".utf8).write(to: URL(fileURLWithPath: root + "/p.md"))
        try save(first, "p.md", "m2\n")
        try save(first, "p.md", "m3\n")
        #expect(rename(root + "/p.md", root + "/m.md") == 0)
        let second = try DirectoryStore(path: root)
        #expect(second.versions?.versions(of: VersionArchive.removedPath(of: "p.md", owner: geteuid())).count == 2)
        try Data("n1\n".utf8).write(to: URL(fileURLWithPath: root + "/p.md"))
        try save(second, "p.md", "n2\n")
        try save(second, "p.md", "n3\n")
        #expect(rename(root + "/p.md", root + "/n.md") == 0)
        let store = try DirectoryStore(path: root)
        #expect(versionTexts(store, VersionArchive.removedPath(of: "p.md", owner: geteuid()))?.sorted() == ["m1\n", "m2\n", "n1\n", "n2\n"])
        try save(store, "m.md", "m4\n")
        #expect(versionTexts(store, "m.md") == ["m1\n", "m2\n", "m3\n"])
        try save(store, "n.md", "n4\n")
        #expect(versionTexts(store, "n.md") == ["n1\n", "n2\n", "n3\n"])
        #expect(versionTexts(store, VersionArchive.removedPath(of: "p.md", owner: geteuid())) == [])
    }

    /// The archive's small files are opened without waiting (`FileIO.open` refuses all but regular
    /// files and folders): a FIFO put in place of a note or a trace, by whoever can write the store,
    /// would hold the index's lock, and every save, forever. A guard: it passes before this stop too.
    /// (Ten minutes, as the integration suites: in the whole run, unit tests wait minutes for a thread.)
    @Test(.timeLimit(.minutes(10))) func aFIFOInPlaceOfANoteOrATraceIsPassedBy() throws {
        let (_, root) = try makeStore()
        defer { try? FileManager.default.removeItem(atPath: root) }
        for (key, name) in [("0000000000000AB1", "document"), ("0000000000000AB2", "joined")] {
            let folder = root + "/.docfs/versions/B1/" + key
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            if name == "joined" { try Data(".docfs/removed-0/x.md".utf8).write(to: URL(fileURLWithPath: folder + "/document")) }
            #expect(mkfifo(folder + "/" + name, 0o600) == 0)
        }
        let store = try DirectoryStore(path: root)
        #expect(store.versions?.index.documents.isEmpty == true)
    }
}
