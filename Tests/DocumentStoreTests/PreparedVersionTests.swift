@testable import DocumentStore
import Foundation
import Glibc
import SystemSupport
import Testing

/// A package's next version is made ahead (`DirectoryStore.prepareVersion`) and renamed into the
/// archive by the next save that keeps one. A save by rename inside a package makes its new file
/// first, which prepares nothing; the version made before it came is then completed with what came
/// (issue 37: each such save made a version, threw the previous one away and made another, 75 of its
/// 377 system calls). What the archive gets is exactly what a copy of the package would be.
@Suite struct PreparedVersionTests {
    private func makeStore(with files: [String: String]) throws -> (DirectoryStore, String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-prepared-\(UUID().uuidString.prefix(8))").path
        for (path, text) in files {
            let url = URL(fileURLWithPath: folder + "/" + path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        return (try DirectoryStore(path: folder), folder)
    }

    private static let package = ["P.textbundle/info.json": "{}", "P.textbundle/text.md": "one\n", "P.textbundle/assets/a.txt": "a\n"]

    /// A store of `package`, and its next version made ahead: the store, its folder, and the
    /// number of the version's folder once it is ready.
    private func storeWithAVersionMadeAhead() throws -> (DirectoryStore, String, UInt64) {
        let (store, folder) = try makeStore(with: Self.package)
        store.prepareVersion(of: "P.textbundle")
        store.preparing.sync {}
        let pending = folder + "/" + DirectoryStore.privateAreaName + "/versions-pending"
        let names = try FileIO.directoryEntries(pending)
        try #require(names.count == 1, "one version made ahead: \(names)")
        return (store, folder, try FileStatus.of(path: pending + "/" + names[0]).inode)
    }

    /// Every item below `folder`: its kind and path, and a file's number (a version links them).
    private func find(_ folder: String) throws -> [String] {
        let enumerator = try #require(FileManager.default.enumerator(atPath: folder))
        var found: [String] = []
        while let path = enumerator.nextObject() as? String {
            let status = try FileStatus.of(path: folder + "/" + path)
            found.append(status.kind == .directory ? "folder \(path)" : "file \(path) \(status.inode)")
        }
        return found.sorted()
    }

    @Test func aVersionMadeAheadIsCompletedWithTheItemsThatCameSince() throws {
        let (store, folder, prepared) = try storeWithAVersionMadeAhead()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // What a save by rename's new file and a new folder bring, made as the mount makes them.
        let live = folder + "/P.textbundle"
        try Data("two\n".utf8).write(to: URL(fileURLWithPath: live + "/text.md.tmp"))
        try FileManager.default.createDirectory(atPath: live + "/assets/more", withIntermediateDirectories: false)
        try Data("b\n".utf8).write(to: URL(fileURLWithPath: live + "/assets/more/b.txt"))
        let expected = try find(live)

        let kept = try #require(try store.keepVersion(of: "P.textbundle", copying: false, as: nil))
        #expect(try FileStatus.of(path: kept).inode == prepared, "the version made ahead was thrown away")
        // The same names and the very same files as the package, folders with their times.
        #expect(try find(kept) == expected)
        for folderPath in ["", "/assets", "/assets/more"] {
            let version = try FileStatus.of(path: kept + folderPath)
            let now = try FileStatus.of(path: live + folderPath)
            #expect(version.modificationTime.tv_sec == now.modificationTime.tv_sec && version.modificationTime.tv_nsec == now.modificationTime.tv_nsec,
                    "the time of \(folderPath.isEmpty ? "the package" : folderPath)")
        }
        #expect(ArchivedLinks.count(of: live + "/text.md.tmp") == 1, "the new file's link in the archive is counted")
    }

    /// Anything else that changed since is not completed: the version is copied from the package.
    @Test func aVersionMadeAheadOfAChangedPackageIsNotUsed() throws {
        let (store, folder, prepared) = try storeWithAVersionMadeAhead()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let live = folder + "/P.textbundle"
        // A member replaced and a new one: the new one alone would be completed.
        try Data("two\n".utf8).write(to: URL(fileURLWithPath: live + "/new.md"))
        try Paths.removeFile(live + "/assets/a.txt")
        try Data("a2\n".utf8).write(to: URL(fileURLWithPath: live + "/assets/a.txt"))
        let expected = try find(live)

        let kept = try #require(try store.keepVersion(of: "P.textbundle", copying: false, as: nil))
        #expect(try FileStatus.of(path: kept).inode != prepared)
        #expect(try find(kept) == expected)
        #expect(try FileIO.directoryEntries(folder + "/" + DirectoryStore.privateAreaName + "/versions-pending").isEmpty)
    }
}

