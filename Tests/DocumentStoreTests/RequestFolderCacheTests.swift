import Foundation
import Glibc
import SystemSupport
import Testing

/// `ConfinedTree.keepingFoldersResolved`: within one request, a folder resolved beneath a tree is
/// used again instead of being opened once a call (issue 37: a save in a subfolder made 99 system
/// calls, 72 with it). What it keeps must never outlive what it stands for.
@Suite struct RequestFolderCacheTests {
    private func tree(with files: [String]) throws -> (ConfinedTree, String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docfs-cache-\(UUID().uuidString.prefix(8))").path
        for path in files {
            let url = URL(fileURLWithPath: folder + "/" + path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(path.utf8).write(to: url)
        }
        return (try ConfinedTree(path: folder), folder)
    }

    @Test func aFolderRenamedInTheRequestIsResolvedAgain() throws {
        let (tree, folder) = try tree(with: ["a/x", "b/y"])
        defer { tree.release(); try? FileManager.default.removeItem(atPath: folder) }
        try ConfinedTree.keepingFoldersResolved {
            #expect(try FileIO.readFile(folder + "/a/x") == Data("a/x".utf8))
            try FileIO.rename(folder + "/a", folder + "/moved")
            // Not read through the folder kept for "a", which is "moved" now.
            #expect(throws: SystemCallError.self) { try FileIO.readFile(folder + "/a/x") }
            #expect(try FileIO.readFile(folder + "/moved/x") == Data("a/x".utf8))
        }
    }

    /// A review of 3cc6c81: a rename on another thread (another request, the database's changes
    /// applied) left this thread's folder kept, so a request could write into a folder that had
    /// just moved (into the versions archive, say) for up to a millisecond.
    @Test func aFolderRenamedByAnotherThreadIsResolvedAgain() throws {
        let (tree, folder) = try tree(with: ["a/x"])
        defer { tree.release(); try? FileManager.default.removeItem(atPath: folder) }
        try ConfinedTree.keepingFoldersResolved { () throws in
            #expect(try FileIO.readFile(folder + "/a/x") == Data("a/x".utf8))
            let renamed = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                #expect((try? FileIO.rename(folder + "/a", folder + "/moved")) != nil)
                renamed.signal()
            }
            renamed.wait()
            #expect(throws: SystemCallError.self) { try FileIO.readFile(folder + "/a/x") }
        }
    }

    @Test func aFolderInUseByAnOuterCallSurvivesAClearInsideIt() throws {
        let (tree, folder) = try tree(with: ["a/x", "a/y", "c/z"])
        defer { tree.release(); try? FileManager.default.removeItem(atPath: folder) }
        try ConfinedTree.keepingFoldersResolved {
            try FileSystemPath.at(folder + "/a/x") { directory, name in
                // A rename clears what is kept while this call still uses its folder, and more
                // folders are resolved meanwhile than are kept.
                try FileIO.rename(folder + "/a/y", folder + "/a/w")
                for other in ["c/z", "a/w", "c/z"] { _ = try FileIO.readFile(folder + "/" + other) }
                var status = stat()
                #expect(fstatat(directory, name, &status, AT_SYMLINK_NOFOLLOW) == 0, "the outer call's folder is still open")
            }
        }
    }

    @Test func aFolderIsKeptWithinARequestOnly() throws {
        let (tree, folder) = try tree(with: ["a/x"])
        defer { tree.release(); try? FileManager.default.removeItem(atPath: folder) }
        func folderDescriptor() throws -> Int32 { try FileSystemPath.at(folder + "/a/x") { directory, _ in directory } }
        try ConfinedTree.keepingFoldersResolved {
            let first = try folderDescriptor()
            #expect(fcntl(first, F_GETFD) >= 0, "still open after the call, for the rest of the request")
            #expect(try folderDescriptor() == first, "and used again")
        }
    }
}
