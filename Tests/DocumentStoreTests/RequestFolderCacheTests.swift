import CSystemShims
import Foundation
import Glibc
import SystemSupport
import Testing

/// `ConfinedTree.keepingFoldersResolved`: within a millisecond, a folder resolved beneath a tree is
/// used again by a thread's calls and requests instead of being opened once a call (issue 37: a
/// save in a subfolder made 99 system calls, 72 with it). What it keeps must never outlive what it
/// stands for.
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
        let (tree, folder) = try tree(with: ["a/x", "c/z", "e/1", "f/2", "g/3", "h/4"])
        defer { tree.release(); try? FileManager.default.removeItem(atPath: folder) }
        try ConfinedTree.keepingFoldersResolved {
            try FileSystemPath.at(folder + "/a/x") { directory, name in
                // A folder renamed clears what is kept while this call still uses its folder, and
                // more folders are resolved meanwhile than are kept.
                try FileIO.rename(folder + "/c", folder + "/c2")
                for other in ["c2/z", "e/1", "f/2", "g/3", "h/4"] { _ = try FileIO.readFile(folder + "/" + other) }
                var status = stat()
                #expect(fstatat(directory, name, &status, AT_SYMLINK_NOFOLLOW) == 0, "the outer call's folder is still open")
            }
        }
    }

    @Test func aFolderIsUsedAgainByTheNextCall() throws {
        let (tree, folder) = try tree(with: ["a/x"])
        defer { tree.release(); try? FileManager.default.removeItem(atPath: folder) }
        #expect(try folderHandedOutAgain(folder + "/a/x", after: {}), "a folder resolved a moment ago was opened again")
    }

    /// A thread's folders serve its next requests too (a save is three to seven requests), and
    /// stop at a folder renamed between them.
    @Test func aFolderRenamedBetweenRequestsIsResolvedAgain() throws {
        let (tree, folder) = try tree(with: ["a/x"])
        defer { tree.release(); try? FileManager.default.removeItem(atPath: folder) }
        try ConfinedTree.keepingFoldersResolved { () throws in #expect(try FileIO.readFile(folder + "/a/x") == Data("a/x".utf8)) }
        try FileIO.rename(folder + "/a", folder + "/moved")
        try FileManager.default.createDirectory(atPath: folder + "/a", withIntermediateDirectories: false)
        try Data("new".utf8).write(to: URL(fileURLWithPath: folder + "/a/x"))
        try ConfinedTree.keepingFoldersResolved { () throws in #expect(try FileIO.readFile(folder + "/a/x") == Data("new".utf8)) }
    }

    /// A file renamed moves no folder: the folders kept stay kept (a save by rename resolved its
    /// folder again in every later request, on every thread).
    @Test func aFileRenamedLeavesFoldersResolved() throws {
        let (tree, folder) = try tree(with: ["a/x"])
        defer { tree.release(); try? FileManager.default.removeItem(atPath: folder) }
        let kept = try folderHandedOutAgain(folder + "/a/x") {
            try FileIO.rename(folder + "/a/x", folder + "/a/y")
            try FileIO.rename(folder + "/a/y", folder + "/a/x")
        }
        #expect(kept, "every rename of a file dropped the folders kept")
    }

    /// A store's private area is a tree of its own: a folder moved within it (a package's version
    /// renamed into the archive, at every save) leaves the store's folders resolved, which every
    /// thread opened again after each such rename (10 `openat2` a save in a package).
    @Test func aFolderMovedInThePrivateAreaLeavesTheStoresFoldersResolved() throws {
        try withPrivateArea(["a/x", ".private/m/y"]) { folder in
            let kept = try folderHandedOutAgain(folder + "/a/x") {
                try FileIO.rename(folder + "/.private/m", folder + "/.private/n")
                try FileIO.rename(folder + "/.private/n", folder + "/.private/m")
            }
            #expect(kept, "a folder moved in the private area dropped the store's folders")
        }
    }

    /// ...and the private area's own folders are resolved again, by every thread.
    @Test func aFolderMovedInThePrivateAreaIsResolvedAgainThere() throws {
        try withPrivateArea(["a/x", ".private/m/y"]) { folder in
            try ConfinedTree.keepingFoldersResolved { () throws in
                #expect(try FileIO.readFile(folder + "/.private/m/y") == Data(".private/m/y".utf8))
                try joinThread { #expect((try? FileIO.rename(folder + "/.private/m", folder + "/.private/moved")) != nil) }
                #expect(throws: SystemCallError.self) { try FileIO.readFile(folder + "/.private/m/y") }
            }
        }
    }

    /// A review of 7218769: a private area that a store writer moved into the store, beside the
    /// mount, is reached by the store's paths too, so a folder moved in it (through its tree, which
    /// follows it) must make every thread resolve the store's folders again.
    @Test func aMoveInAPrivateAreaMovedIntoTheStoreIsResolvedAgainEverywhere() throws {
        try withPrivateArea(["a/x", ".private/m/y"]) { folder in
            #expect(rename(folder + "/.private", folder + "/moved") == 0)
            try ConfinedTree.keepingFoldersResolved { () throws in
                #expect(try FileIO.readFile(folder + "/moved/m/y") == Data(".private/m/y".utf8))
                try FileIO.rename(folder + "/.private/m", folder + "/.private/n")
                #expect(throws: SystemCallError.self) { try FileIO.readFile(folder + "/moved/m/y") }
                #expect(try FileIO.readFile(folder + "/moved/n/y") == Data(".private/m/y".utf8))
            }
        }
    }

    /// ...and so does one in a folder of that private area that is a tree of its own (a store's
    /// staging folder), which is found through the private area's descriptor, wherever it went.
    @Test func aMoveInATreeInsideAPrivateAreaMovedIntoTheStoreIsResolvedAgainEverywhere() throws {
        try withPrivateArea(["a/x", ".private/inner/m/y"]) { folder in
            let inner = try ConfinedTree(path: folder + "/.private/inner", isPrivateArea: true)
            defer { inner.release() }
            #expect(rename(folder + "/.private", folder + "/moved") == 0)
            try ConfinedTree.keepingFoldersResolved { () throws in
                #expect(try FileIO.readFile(folder + "/moved/inner/m/y") == Data(".private/inner/m/y".utf8))
                try FileIO.rename(folder + "/.private/inner/m", folder + "/.private/inner/n")
                #expect(throws: SystemCallError.self) { try FileIO.readFile(folder + "/moved/inner/m/y") }
            }
        }
    }

    /// A folder exchanged between the private area and the store (a package's clone swapped in)
    /// changes the store's paths: every folder is resolved again.
    @Test func aFolderExchangedWithThePrivateAreaIsResolvedAgain() throws {
        try withPrivateArea(["a/x", ".private/clone/x"]) { folder in
            try ConfinedTree.keepingFoldersResolved { () throws in
                #expect(try FileIO.readFile(folder + "/a/x") == Data("a/x".utf8))
                try joinThread { #expect((try? FileIO.exchange(folder + "/.private/clone", folder + "/a")) != nil) }
                #expect(try FileIO.readFile(folder + "/a/x") == Data(".private/clone/x".utf8))
            }
        }
    }

    /// Runs `body` with the folder of a tree holding `files`, whose `.private` is a private area's tree.
    private func withPrivateArea(_ files: [String], _ body: (String) throws -> Void) throws {
        let (tree, folder) = try tree(with: files)
        let privateArea = try ConfinedTree(path: folder + "/.private", isPrivateArea: true)
        defer { privateArea.release(); tree.release(); try? FileManager.default.removeItem(atPath: folder) }
        try body(folder)
    }

    /// A tree opened and released (a package decoded through its folder's descriptor, at every
    /// judgement) leaves the folders of the others resolved: slots name trees by serial number, which
    /// no later tree takes.
    @Test func aTreeOpenedAndReleasedLeavesFoldersResolved() throws {
        let (tree, folder) = try tree(with: ["a/x", "b/y"])
        defer { tree.release(); try? FileManager.default.removeItem(atPath: folder) }
        let kept = try folderHandedOutAgain(folder + "/a/x") {
            let other = try ConfinedTree(path: folder + "/b")
            other.release()
        }
        #expect(kept, "a tree opened and released dropped the folders of the others")
    }

    /// Whether the folder holding `path`, resolved once, is handed out again when `path` is
    /// resolved after `between`, within one request. Tried until a try is clean (10 s at most): one
    /// in which no other test moved a folder (which makes every thread resolve its folders again)
    /// and the machine let no millisecond pass between the calls.
    private func folderHandedOutAgain(_ path: String, after between: () throws -> Void) throws -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let handedOut = try ConfinedTree.keepingFoldersResolved { () throws -> Bool in
                let generation = docfs_folder_cache_generation(0)
                let first = try folderDescriptor(path)
                #expect(fcntl(first, F_GETFD) >= 0, "still open after the call, for the rest of the request")
                // Marked (every folder opens close-on-exec), since a folder dropped and opened
                // again may get the same number.
                #expect(fcntl(first, F_SETFD, 0) == 0)
                try between()
                let second = try folderDescriptor(path)
                defer { _ = fcntl(second, F_SETFD, FD_CLOEXEC) }
                return docfs_folder_cache_generation(0) == generation && second == first && fcntl(second, F_GETFD) == 0
            }
            if handedOut { return true }
        }
        return false
    }

    /// What a thread keeps past its requests closes when it exits (a mount's workers end with it).
    @Test func aThreadsFoldersCloseAsItExits() throws {
        let (tree, folder) = try tree(with: ["a/x"])
        defer { tree.release(); try? FileManager.default.removeItem(atPath: folder) }
        let kept = OneValue()
        try joinThread {
            ConfinedTree.keepingFoldersResolved {
                if let descriptor = try? folderDescriptor(folder + "/a/x") { kept.value = (descriptor, Self.target(of: descriptor)) }
            }
        }
        let (descriptor, target) = try #require(kept.value)
        #expect(target == URL(fileURLWithPath: folder + "/a").resolvingSymlinksInPath().path)
        #expect(Self.target(of: descriptor) != target, "the exited thread's folder is still open")
    }

    private func folderDescriptor(_ path: String) throws -> Int32 { try FileSystemPath.at(path) { directory, _ in directory } }

    private static func target(of descriptor: Int32) -> String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(descriptor)")
    }

    private final class OneValue: @unchecked Sendable {
        var value: (Int32, String?)?
    }

    /// Runs `body` on a thread of its own and returns once that thread has ended (its thread-exit
    /// work done), which a `Thread` cannot wait for.
    private func joinThread(_ body: @escaping @Sendable () -> Void) throws {
        final class Box { let body: @Sendable () -> Void; init(_ body: @escaping @Sendable () -> Void) { self.body = body } }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let created = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            Unmanaged<Box>.fromOpaque(argument).takeRetainedValue().body()
            return nil
        }, box)
        try #require(created == 0)
        pthread_join(thread, nil)
    }
}
