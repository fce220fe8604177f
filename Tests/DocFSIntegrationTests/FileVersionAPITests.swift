import DocumentModel
import Foundation
import Testing

/// `NSFileVersion` over a DocFS mount (issue 22): what a document app calls for "Revert To".
@Suite(.timeLimit(.minutes(10))) struct FileVersionAPITests {
    @Test func listsRevertsAndRemovesTheVersionsOfADocument() throws {
        let mount = try MountedStore(texts: ["notes/a.md": "first\n"])
        defer { mount.unmount() }
        #expect(try mount.shell("echo second > notes/a.md && echo third > notes/a.md").succeeded)
        let url = URL(fileURLWithPath: mount.inMount("notes/a.md"))

        let current = try #require(NSFileVersion.currentVersionOfItem(at: url))
        #expect(current.url == url)
        let mtime = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date)
        #expect(abs((current.modificationDate ?? .distantPast).timeIntervalSince(mtime)) < 0.001)
        #expect(current.localizedName == "a.md")

        let others = try #require(NSFileVersion.otherVersionsOfItem(at: url))
        #expect(try others.map { try String(contentsOf: $0.url, encoding: .utf8) } == ["first\n", "second\n"])
        // Oldest first, dated by their saves, the newest before the current version's save.
        let dates = others.compactMap(\.modificationDate)
        #expect(dates.count == 2 && dates[0] < dates[1] && dates[1] <= mtime)
        #expect(others.allSatisfy { !$0.isConflict && $0.hasLocalContents })
        #expect(NSFileVersion.unresolvedConflictVersionsOfItem(at: url)?.isEmpty == true)
        #expect(NSFileVersion.version(itemAt: url, forPersistentIdentifier: others[0].persistentIdentifier)?.url == others[0].url)

        // Revert To: the first version's contents, saved; "third" becomes a version in turn.
        #expect(try others[0].replaceItem(at: url) == url)
        #expect(try String(contentsOf: url, encoding: .utf8) == "first\n")
        let afterRevert = try #require(NSFileVersion.otherVersionsOfItem(at: url))
        #expect(try afterRevert.map { try String(contentsOf: $0.url, encoding: .utf8) } == ["first\n", "second\n", "third\n"])

        try NSFileVersion.removeOtherVersionsOfItem(at: url)
        #expect(NSFileVersion.otherVersionsOfItem(at: url)?.isEmpty == true)
        #expect(throws: (any Error).self) { try current.remove() }
        #expect(try String(contentsOf: url, encoding: .utf8) == "first\n")
    }

    @Test func aPackageIsRevertedWhole() throws {
        let mount = try MountedStore(texts: VersionTests.textBundle("Trip.textbundle", text: "# Trip\n"))
        defer { mount.unmount() }
        #expect(try mount.shell("echo '# Trip, changed' > Trip.textbundle/text.md && echo asset > Trip.textbundle/new.txt").succeeded)
        let url = URL(fileURLWithPath: mount.inMount("Trip.textbundle"))
        let first = try #require(NSFileVersion.otherVersionsOfItem(at: url)?.first)
        try first.replaceItem(at: url)
        #expect(try mount.read("Trip.textbundle/text.md") == "# Trip\n")
        #expect(!FileManager.default.fileExists(atPath: mount.inMount("Trip.textbundle/new.txt")))
    }

    @Test func anItemOutsideADocFSMountHasNoVersions() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-plain-\(UUID().uuidString.prefix(8)).md")
        try Data("plain\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(NSFileVersion.otherVersionsOfItem(at: file) == nil)
        #expect(NSFileVersion.currentVersionOfItem(at: file) != nil)
    }
}
