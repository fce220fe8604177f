import ArgumentParser
import DocumentStore
import Foundation
import Glibc
import SystemSupport

/// `docfs versions --prune`: removes versions now, to give their space back at once (the retention
/// pass runs only every ten minutes, and a full store drops versions only as a write needs room).
/// Each document keeps its newest `keep`; a folder is pruned document by document below it.
struct VersionPruning {
    let keep: Int

    private struct Tally {
        var removed = 0
        var bytes: Int64 = 0
        var refused = 0
    }

    func prune(at place: DocumentPathArgument.Place) throws {
        var tally = Tally()
        switch place {
        case .mount(let mountPoint, let document):
            // Through the view, with the caller's rights: the kernel and the daemon let each user
            // remove their own versions, root all.
            let folder = mountPoint + "/.versions" + (document.isEmpty ? "" : "/" + document)
            guard (try? FileStatus.of(path: folder))?.kind == .directory else {
                throw CommandFailure(message: "\(PrintableText.escaped(document)) has no versions in the mount at \(PrintableText.escaped(mountPoint))", status: ExitCode(1))
            }
            pruneView(folder, &tally)
        case .store(let root, let document):
            let store = try DirectoryStore.opened(at: root)
            guard let archive = store.versions else { throw CommandFailure(message: "\(root) keeps no versions", status: ExitCode(1)) }
            for path in archive.documentPaths() where document.isEmpty || FileSystemPath.same(path, document) || StorePath.isWithin(path, document) {
                for version in archive.versions(of: path).dropLast(keep) {
                    do {
                        try store.removeVersion(version)
                        tally.removed += 1
                        tally.bytes += version.exclusiveBytes
                    } catch {
                        tally.refused += 1
                        printError("cannot remove \(PrintableText.escaped(version.location)): \(error)")
                    }
                }
            }
        }
        let size = ByteCountFormatter.string(fromByteCount: tally.bytes, countStyle: .binary)
        print("removed \(tally.removed) version\(tally.removed == 1 ? "" : "s") (\(size))\(tally.refused > 0 ? "; \(tally.refused) could not be removed" : "")")
        if tally.refused > 0 { throw ExitCode(1) }
    }

    /// Prunes the view's folder `folder`: its versions (entries named by a save time) but the
    /// newest `keep`, then every folder in it.
    private func pruneView(_ folder: String, _ tally: inout Tally) {
        let names: [String]
        do {
            names = try FileIO.directoryEntries(folder).sorted()
        } catch {
            // A folder of another's the caller may not list: what is in it is not theirs to remove.
            tally.refused += 1
            return
        }
        let versions = names.filter { VersionName.savedTime(of: $0) != nil }
        for name in versions.dropLast(keep) {
            let path = folder + "/" + name
            guard let status = try? FileStatus.of(path: path) else { continue }
            do {
                let bytes = Self.bytes(at: path, status: status)
                if status.kind == .directory { try Paths.removeDirectory(path) } else { try Paths.removeFile(path) }
                tally.removed += 1
                tally.bytes += bytes
            } catch let error as SystemCallError where error.errno == EPERM || error.errno == EACCES {
                // Another user's version: theirs to remove.
                tally.refused += 1
            } catch {
                tally.refused += 1
                printError("cannot remove \(PrintableText.escaped(path)): \(error)")
            }
        }
        for name in names where VersionName.savedTime(of: name) == nil {
            let path = folder + "/" + name
            if (try? FileStatus.of(path: path))?.kind == .directory { pruneView(path, &tally) }
        }
    }

    /// The space a version in the view takes: a package's, its files'.
    private static func bytes(at path: String, status: FileStatus) -> Int64 {
        guard status.kind == .directory else { return status.blocks * 512 }
        return ((try? FileIO.directoryEntries(path)) ?? []).reduce(status.blocks * 512) { total, name in
            guard let child = try? FileStatus.of(path: path + "/" + name) else { return total }
            return total + bytes(at: path + "/" + name, status: child)
        }
    }

    private func printError(_ message: String) {
        FileHandle.standardError.write(Data("docfs: \(message)\n".utf8))
    }
}

extension DirectoryStore {
    /// The store at `root`, for a command that changes it with no mount serving it; a store that
    /// cannot be opened ends the command with the store's exit status.
    static func opened(at root: String) throws -> DirectoryStore {
        do {
            return try DirectoryStore(path: root)
        } catch {
            throw CommandFailure(message: "cannot open store \(root): \(error)", status: ExitStatus.badStore)
        }
    }
}
