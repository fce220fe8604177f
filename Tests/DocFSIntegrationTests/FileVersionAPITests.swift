import DocumentModel
import Foundation
import SystemSupport
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

    /// A member the version lacks goes, though a `String` holds its name equal to one the version
    /// has: reverting to a version with `assets/café.txt` in NFC left the live package's NFD
    /// spelling beside it, a package of two versions at once (fails on bf6f8b7).
    @Test func aPackageRevertedWholeKeepsNoMemberTheVersionLacksByItsBytes() throws {
        let mount = try MountedStore(texts: VersionTests.textBundle("Trip.textbundle", text: "# Trip\n"))
        defer { mount.unmount() }
        let nfc = "Trip.textbundle/assets/caf\u{E9}.txt", nfd = "Trip.textbundle/assets/cafe\u{301}.txt"
        #expect(try mount.shell("mkdir Trip.textbundle/assets && echo one > '\(nfc)' && echo '# Trip, changed' > Trip.textbundle/text.md").succeeded)
        let url = URL(fileURLWithPath: mount.inMount("Trip.textbundle"))
        let version = try #require(NSFileVersion.otherVersionsOfItem(at: url)?.last)
        #expect(try mount.shell("mv '\(nfc)' '\(nfd)'").succeeded)
        try version.replaceItem(at: url)
        let members = try FileIO.directoryEntries(mount.inMount("Trip.textbundle/assets")).map { Array($0.utf8) }
        #expect(members == [Array("caf\u{E9}.txt".utf8)], "\(members)")
        #expect(try mount.read(nfc) == "one\n")
    }

    @Test func anItemOutsideADocFSMountHasNoVersions() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-plain-\(UUID().uuidString.prefix(8)).md")
        try Data("plain\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(NSFileVersion.otherVersionsOfItem(at: file) == nil)
        #expect(NSFileVersion.currentVersionOfItem(at: file) != nil)
    }
}
