import DocumentModel
import DocumentStore
import Foundation
import Logging
import SystemSupport

/// The one commit pipeline. Every change that replaces what a document was runs through it — a
/// save through the mount (`DocumentFileSystem+Commit`), a change to a package
/// (`PackageCoordinator`), a save through `DocumentLibrary`, a rename over a document and a
/// removal (`DocumentFileSystem+Entries`):
///
/// 1. judged: new content is decoded by the type that claims its name (`DocumentClassifier`), and
///    what that type encodes, with the stored item as `existingFile`, is what gets stored;
/// 2. committed: the versions the change replaces are kept, the store changes, and the saves it
///    makes are recorded as their saver's. Versions are kept here alone, for every path.
struct CommitPipeline: Sendable {
    let store: any DocumentStore
    let codec: DocumentCodec
    let logger: Logger

    /// An item a change replaces or removes, kept as a version of its own.
    struct Replaced: Sendable {
        var path: String
        /// The item stays in use under another name (renamed away, exchanged): its version is a copy.
        var copying = false
        /// The item is being removed, its history going to this path of its owner's removal area
        /// (and who could read it): its version is kept there at once.
        var removed: (history: String, document: RemovedDocument)?
    }

    // MARK: Judging

    /// Decodes `file` with `claim`'s type and returns what the type encodes to store in its place,
    /// with the item now at `existingPath` (if any) as `existingFile`. Throws what refuses it.
    func judge(_ file: FileWrapper, claim: DocumentClaim, existingAt existingPath: String?) throws -> FileWrapper {
        let document = try codec.decode(file, claim: claim)
        return try codec.encode(document, claim: claim) { [store] in
            // An empty file is a draft: nothing stored to build on.
            existingPath.flatMap { path in (try? store.fileWrapper(at: path)).flatMap(Self.storedContent) }
        }
    }

    /// A stored item a type may build on: a folder, or a file with bytes.
    private static func storedContent(_ wrapper: FileWrapper) -> FileWrapper? {
        if wrapper.isDirectory { return wrapper }
        let size = (wrapper.fileAttributes[FileAttributeKey.size.rawValue] as? NSNumber)?.int64Value ?? 0
        return wrapper.isRegularFile && size > 0 ? wrapper : nil
    }

    /// Decodes `file` with `claim`'s type, as a read would: throws what refuses it.
    func check(_ file: FileWrapper, claim: DocumentClaim) throws {
        _ = try codec.decode(file, claim: claim)
    }

    // MARK: Committing

    /// Runs `change` (the store's part of a commit) after keeping `replaced` among the versions,
    /// then records each of `saved` as saved by `saver` (the requester of the calling thread, where
    /// nil). A version that cannot be kept is logged and the change goes on — the change is what
    /// the user asked for — unless `versionsRequired` (a library's caller, who can save again).
    /// `package`: the package the change is in, whose next version the store makes ahead.
    @discardableResult
    func commit<T>(
        replacing replaced: [Replaced], saving saved: [String], by saver: uid_t? = nil, versionsRequired: Bool = false,
        package: String? = nil, _ change: () throws -> T
    ) throws -> T {
        // A store that keeps versions in the change's own transaction (PostgreSQL) holds them till then.
        defer { if !replaced.isEmpty { store.dropPendingVersions(of: replaced.map(\.path)) } }
        for item in replaced {
            do {
                // No room is made here: a removal or a rename runs this holding `changes`, which
                // every save waits for, and making room walks the archive. A version that does
                // not fit is recorded as not kept; writes make room (see `modifyStage`).
                if let removed = item.removed {
                    try store.keepVersion(ofRemoved: item.path, joining: removed.history, as: removed.document)
                } else {
                    try store.keepVersion(of: item.path, copying: item.copying)
                }
            } catch {
                if versionsRequired { throw error }
                StoreMetrics.versionsNotKept.increment()
                if let error = error as? SystemCallError, error.isOutOfSpace {
                    // The change goes on (a disk of the same size would take it); the user sees why
                    // there is no version of it in docfs status and docfs versions.
                    store.versionNotKept(of: item.path)
                }
                logger.warning("could not keep the version of \(item.path) that this change replaces: \(error)")
            }
        }
        let user = saver ?? Requester.current?.userID ?? geteuid()
        let result = try saved.isEmpty ? change() : store.recordingSaves(of: saved, by: user, change)
        if !saved.isEmpty { DocumentMetrics.saves.increment(by: saved.count) }
        for path in saved { store.recordSave(of: path, by: user) }
        // The next save of a package finds its version ready (see `DirectoryStore.prepareVersion`).
        if let package { store.prepareVersion(of: package) }
        return result
    }
}
