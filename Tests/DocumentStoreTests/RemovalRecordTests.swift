import DocumentStore
import Foundation
import Glibc
import SystemSupport
import Testing

/// Who may read a removed document's versions (`VersionArchive.recordRemovedDocument`): a record
/// only ever narrows, whichever way the history's folder is found.
@Suite struct RemovalRecordTests {
    /// A fresh folder holding `store` (a folder of the store) and room for `versions` (the archive).
    private func withFolder(_ body: (String) throws -> Void) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-removal-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: root + "/store", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try body(root)
    }

    private let removed = VersionArchive.removedPath(of: "doc.md", owner: 0)

    /// A 0644 document in a 0755 folder, owned by root, as a removal through the mount reads them:
    /// it lets everyone read (r-x for each class).
    private func openDocument(in folder: String) throws -> RemovedDocument {
        let file = folder + "/doc.md"
        try Data("text".utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o644)
        chmod(folder, 0o755)
        return RemovedDocument(status: try FileStatus.of(path: file), folder: try FileStatus.of(path: folder))
    }

    /// A history folder made after this archive read its index (here by another reading of the same
    /// archive, as an earlier reading's folder left unlisted beside another) keeps out whom its
    /// record keeps out: the removal that finds it there narrows its record. It was widened to the
    /// new document's readers (r-x for all) by the first form of 3675d7e.
    @Test func aHistoryFolderFoundUnlistedHasItsRecordNarrowedNotReplaced() throws {
        try withFolder { root in
            let ownerOnly = VersionArchive.Readers(userID: 0, groupID: 0, permissions: 0o500)
            let archive = VersionArchive(directory: root + "/versions")
            _ = archive.index
            VersionArchive(directory: root + "/versions").setReadersOfRemovedDocument(removed, ownerOnly, makingFolder: true)
            #expect(!archive.index.documents.contains(Array(removed.utf8)) && archive.index.children.isEmpty)

            archive.recordRemovedDocument(removed, as: try openDocument(in: root + "/store"), makingFolder: true)
            #expect(archive.readersOfRemovedDocument(removed) == ownerOnly)
            #expect(VersionArchive(directory: root + "/versions").readersOfRemovedDocument(removed) == ownerOnly, "as kept on the folder")
        }
    }

    /// The common case, for contrast: a folder made by the removal itself takes the document's readers.
    @Test func aHistoryFolderMadeByTheRemovalTakesTheDocumentsReaders() throws {
        try withFolder { root in
            let archive = VersionArchive(directory: root + "/versions")
            archive.recordRemovedDocument(removed, as: try openDocument(in: root + "/store"), makingFolder: true)
            #expect(archive.readersOfRemovedDocument(removed) == VersionArchive.Readers(userID: 0, groupID: 0, permissions: 0o555))
            #expect(VersionArchive(directory: root + "/versions").readersOfRemovedDocument(removed)?.permissions == 0o555)
        }
    }
}
