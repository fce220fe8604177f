@_spi(DocumentStore) import DocumentModel
import DocumentStore
import FUSE
import Foundation
import Logging
import Synchronization
import SystemSupport

/// Keeps packages whole. Decides whether a package is valid, a draft or corrupt; decodes it once
/// per stored version; and commits changes inside it: a draft takes changes as they come, a
/// package that decodes takes them only once the changed package decodes — a write to one member
/// by renaming its stage into place, any other change through a private clone that is decoded,
/// re-encoded with `existingFile` set, and swapped in whole with RENAME_EXCHANGE — or refused and
/// quarantined.
/// Whether a package has ever decoded is kept with it (`PackageMarker`).
final class PackageCoordinator: Sendable {
    enum State: Sendable {
        case valid
        case draft(reason: String)
        case corrupt(reason: String)
    }

    private let pipeline: CommitPipeline
    private var store: any DocumentStore { pipeline.store }
    private var codec: DocumentCodec { pipeline.codec }
    private var logger: Logger { pipeline.logger }
    private let locks = OrderedMutex<[PathKey: PackageLock]>(.leaf, [:])
    private let decodedVersions = OrderedMutex<[PathKey: FileVersion]>(.leaf, [:])

    private final class PackageLock: Sendable {
        let mutex = OrderedMutex<Void>(.package, ())
    }

    init(pipeline: CommitPipeline) {
        self.pipeline = pipeline
    }

    /// Runs `body` holding the package's lock, so its commits are serialized.
    func withPackage<T>(_ root: String, _ body: () throws(FUSEError) -> T) throws(FUSEError) -> T {
        let lock = locks.withLock { locks in
            if let existing = locks[PathKey(root)] { return existing }
            let created = PackageLock()
            locks[PathKey(root)] = created
            return created
        }
        return try lock.mutex.withLock { _ throws(FUSEError) in try body() }
    }

    /// The package's state now; decodes only when its stored version changed since the last decode.
    /// A reader holds no package lock. It reads the package by its path, as any read is; when that
    /// read was cut (a rename moved the folder, a commit swapped a new version in), it reads once
    /// more, through one descriptor of the folder under the name then (`withFolderWrapper`), which
    /// a commit replacing it meanwhile leaves whole until the read ends: the answer is that folder's,
    /// a version the name held during this call. A name that leads nowhere holds no package.
    func state(of root: String, claim: DocumentClaim) -> State {
        guard let status = try? store.status(of: root) else { return .draft(reason: "it does not exist") }
        if decodedVersions.withLock({ $0[PathKey(root)] }) == status.version { return .valid }
        // The common case, nothing moving: whole if the name still holds the folder read, unchanged.
        if (try? codec.decode(store.fileWrapper(at: root), claim: claim)) != nil, let now = try? store.status(of: root),
           now.inode == status.inode, now.version == status.version
        {
            return validated(root, claim: claim, read: status)
        }
        var folder: FileStatus?
        do {
            try store.withFolderWrapper(at: root) { wrapper, opened in
                folder = opened
                _ = try codec.decode(wrapper, claim: claim)
            }
        } catch {
            // The name held nothing when the read began (a rename moved the folder away, and maybe
            // back since): no package was there to judge.
            let notThere = (error as? SystemCallError).map { [ENOENT, ENOTDIR].contains($0.errno) } ?? false
            guard folder != nil || !notThere, let now = try? store.status(of: root) else { return .draft(reason: "it does not exist") }
            // A folder replaced beside the mount (by another program, not by a commit here) may have
            // been emptied as it was read, and one changed in place (a member saved, made or removed
            // meanwhile) read half changed: served as it is, as a draft is, and judged at the next
            // open, never called broken for it.
            if let folder, now.inode != folder.inode || now.version != folder.version {
                return .draft(reason: "it changed while it was read")
            }
            // Not read at all (no descriptor, content that could not be fetched), or read whole.
            let reason = describe(error)
            return PackageMarker.isMarked(root, in: store) ? .corrupt(reason: reason) : .draft(reason: reason)
        }
        guard let folder else { return .draft(reason: "it does not exist") }
        return validated(root, claim: claim, read: folder)
    }

    /// `root` decoded, read as the folder `read`: marked as a package, and remembered as valid only
    /// while it is the folder under the name, as it was read (one swapped in or changed while it was
    /// read is decoded in its turn).
    private func validated(_ root: String, claim: DocumentClaim, read: FileStatus) -> State {
        guard let now = try? store.status(of: root), now.inode == read.inode, now.version == read.version else { return .valid }
        if !PackageMarker.isMarked(root, in: store) {
            try? PackageMarker.mark(root, in: store)
            logger.info("\(root) decodes as \(claim.type.name): it is a package now, no longer a draft")
        }
        if let marked = try? store.status(of: root) { decodedVersions.withLock { $0[PathKey(root)] = marked.version } }
        return .valid
    }

    /// The outcome of a committed change: how the member's new content is stored.
    enum Outcome {
        /// The change went in as made (a draft, or the type returned exactly what it decoded).
        case asApplied
        /// The type returned other bytes than were written: caches of the package must be dropped.
        case reencoded
        /// The store refused the commit (a shared store: another mount changed the member since
        /// this write began); nothing changed.
        case refusedByStore(String)
    }

    /// Commits `change` to the package at `root`: in place when it can be (`commitInPlace`), unless
    /// the caller tried that already. `publish` runs once, with the store's step that makes the
    /// change (see `PackageChange.apply`): the caller's names move with it. Call with the
    /// package's lock held.
    func commit(
        _ change: PackageChange, root: String, claim: DocumentClaim, durable: Bool = false, inPlaceTried: Bool = false,
        publishing publish: Publication = { try $0() }
    ) throws(FUSEError) -> Outcome {
        let state = state(of: root, claim: claim)
        if case .draft = state {
            try apply(change, in: root, publishing: publish)
            _ = self.state(of: root, claim: claim)
            return .asApplied
        }
        if change.isRemoval {
            do {
                try pipeline.commit(replacing: versions(replacedBy: change, root: root), saving: [root], package: root) {
                    try change.apply(in: root, store: store, publishing: publish)
                }
            } catch {
                throw FUSEError(error)
            }
            if case .draft(let reason) = self.stateAfterRemoval(root, claim: claim) {
                logger.notice("\(root) no longer decodes after \(change.member) was removed (\(reason)); it is a draft again")
            }
            return .asApplied
        }

        if case .valid = state, !inPlaceTried, let outcome = try commitInPlace(change, root: root, claim: claim, durable: durable, publishing: publish) {
            if case .refusedByStore(let reason) = outcome {
                DocumentMetrics.refused(.store)
                logger.error("refused a change to \(change.member) in \(root): \(reason)")
                throw .ioError
            }
            return outcome
        }
        let clone: String
        do { clone = try store.cloneDirectory(root) } catch { throw FUSEError(error) }
        do {
            try change.apply(in: clone, store: store)
        } catch {
            store.removePrivateItem(clone)
            throw FUSEError(error)
        }
        let result: FileWrapper
        let file: FileWrapper
        do {
            file = try store.fileWrapper(at: clone)
            result = try pipeline.judge(file, claim: claim, existingAt: root)
        } catch {
            DocumentMetrics.refused(.invalid)
            let reason = "the package would not decode as \(claim.type.name) (\(claim.contentType.identifier)): \(describe(error))"
            let kept = try? store.quarantineItem(clone, for: root, reason: "change to \(change.member): \(reason)", owner: Requester.current)
            logger.error("refused a change to \(change.member) in \(root): \(reason). The stored package is unchanged; the refused package is in \(kept ?? "(could not be kept)")")
            if kept == nil { store.removePrivateItem(clone) }
            throw .ioError
        }
        TestHook.packageCloneJudged.pause()
        // Once swapped in, the clone's path holds the folder it replaced, which the store removes
        // (after the folder reads under way).
        var swapped = false
        do {
            try pipeline.commit(
                replacing: versions(replacedBy: change, root: root), saving: savedPaths(change, root: root), package: packageToPrepare(after: change, root: root)
            ) {
                if result === file {
                    try store.replaceDirectory(at: root, with: clone, publishing: publish)
                    swapped = true
                    if durable { try store.synchronize(root) }
                } else {
                    try store.persist(result, at: root, durable: durable, publishing: publish)
                    store.removePrivateItem(clone)
                    try? PackageMarker.mark(root, in: store)
                }
            }
        } catch let refusal as StoreRefusal {
            DocumentMetrics.refused(.store)
            // The changed package is the user's work: kept whole, never dropped.
            let kept = try? store.quarantineItem(clone, for: root, reason: "change to \(change.member): \(refusal.reason)", owner: Requester.current)
            logger.error("refused a change to \(change.member) in \(root): \(refusal.reason). The refused package is in \(kept ?? "(could not be kept)")")
            if kept == nil { store.removePrivateItem(clone) }
            throw .ioError
        } catch {
            if !swapped { store.removePrivateItem(clone) }
            throw FUSEError(error)
        }
        if let status = try? store.status(of: root) { decodedVersions.withLock { $0[PathKey(root)] = status.version } }
        return result === file ? .asApplied : .reencoded
    }

    /// A change that puts one item into a package that decodes — a write to a member, a new file or
    /// folder — needs no clone: the stored package, read lazily with the item in its place, is
    /// decoded as a tree of wrappers (reading only what the type reads: a TextBundle's root, never
    /// its thousands of assets), and when the type keeps it as it is, making that one change in
    /// the store is the whole commit, so a reader sees the old package or the new one. A write's
    /// stage is consumed only when this returns an outcome. Returns nil to leave the change to
    /// `commit` (its clone path): for a draft, a member that is not where it was, a name taken, a
    /// package the type rewrites, or one that would not decode (`commit` judges it again and keeps
    /// the refused package whole in the quarantine). `publish` as for `commit`, and only when this
    /// returns an outcome. Call with the package's lock held.
    func commitInPlace(
        _ change: PackageChange, root: String, claim: DocumentClaim, durable: Bool, publishing publish: Publication = { try $0() }
    ) throws(FUSEError) -> Outcome? {
        guard case .valid = state(of: root, claim: claim), let package = try? store.fileWrapper(at: root) else { return nil }
        // The folder holding a member, and the member's name, in the lazily read package.
        func place(_ member: String) -> (folder: FileWrapper, name: String)? {
            let components = StorePath.names(member)
            var directory = package
            for component in components.dropLast() {
                guard let next = directory.child(named: component), next.isDirectory else { return nil }
                directory = next
            }
            return components.last.map { (directory, $0) }
        }
        guard let (directory, name) = place(change.member) else { return nil }
        let existing = directory.child(named: name)
        let item: FileWrapper
        switch change {
        case .rename(let source, _, let flags):
            // A file saved by renaming a new version over it (sed -i, vim, os.replace): the one
            // rename is the whole commit. Folders, exchanges and RENAME_NOREPLACE take the copy.
            guard flags == 0, let (sourceFolder, sourceName) = place(source), let moved = sourceFolder.child(named: sourceName),
                  !moved.isDirectory, existing.map({ !$0.isDirectory }) ?? true
            else { return nil }
            sourceFolder.replaceChild(named: sourceName, with: nil)
            item = moved
        case .replaceFile(_, let staging):
            guard let existing, existing.isRegularFile, let staged = try? codec.wrapper(for: staging.descriptor, name: name) else { return nil }
            item = staged
        case .createFile(_, let mode, _):
            guard existing == nil else { return nil }
            item = FileWrapper(regularFileWithContents: Data())
            item.fileAttributes = [FileAttributeKey.posixPermissions.rawValue: NSNumber(value: mode)]
        case .makeDirectory(_, let mode, _):
            guard existing == nil else { return nil }
            item = FileWrapper(directoryWithFileWrappers: [:])
            item.fileAttributes = [FileAttributeKey.posixPermissions.rawValue: NSNumber(value: mode)]
        default:
            return nil
        }
        item.preferredFilename = name
        directory.replaceChild(named: name, with: item)
        guard let result = try? pipeline.judge(package, claim: claim, existingAt: root) else { return nil }
        // A change other than a write that the type rewrites takes `commit`'s clone.
        if result !== package && !change.isReplaceFile { return nil }
        do {
            let replaced = versions(replacedBy: change, root: root)
            // A first write into a member just made, stored as written, adds a file and nothing
            // else: the version made before it is completed with it (see `packageToPrepare`).
            let addsOnly = change.isReplaceFile && replaced.isEmpty && result === package
            try pipeline.commit(
                replacing: replaced, saving: savedPaths(change, root: root), package: addsOnly ? nil : packageToPrepare(after: change, root: root)
            ) {
                switch (change, result === package) {
                case (.replaceFile(let member, let staging), true):
                    try store.install(staging, at: root + "/" + member, durable: durable)
                    try publish {}
                case (.replaceFile(_, let staging), false):
                    try store.persist(result, at: root, durable: durable, publishing: publish)
                    store.discard(staging)
                    try? PackageMarker.mark(root, in: store)
                default:
                    try change.apply(in: root, store: store, publishing: publish)
                }
            }
        } catch let refusal as StoreRefusal {
            return .refusedByStore(refusal.reason)
        } catch {
            throw FUSEError(error)
        }
        if let status = try? store.status(of: root) { decodedVersions.withLock { $0[PathKey(root)] = status.version } }
        return result === package ? .asApplied : .reencoded
    }

    /// The package whose next version a commit of `change` makes ahead (`prepareVersion`): none
    /// after a change that only adds an item, nor (`commitInPlace`) after a first write into a file
    /// just made, which replaces nothing. A version made after those was made again before anything
    /// used it: a save by rename inside a package made three and used one. The version made before
    /// the new items came is completed with them when it is used.
    private func packageToPrepare(after change: PackageChange, root: String) -> String? {
        switch change {
        case .createFile, .makeDirectory, .makeSpecialFile, .makeSymbolicLink: nil
        case .replaceFile, .rename, .removeFile, .removeDirectory: root
        }
    }

    /// What a saved change records as saved: the package, and the member a write replaced (whose
    /// own version it becomes in a package kept member by member).
    private func savedPaths(_ change: PackageChange, root: String) -> [String] {
        if case .replaceFile(let member, _) = change { return [root, root + "/" + member] }
        return [root]
    }

    /// The versions `change` replaces: the whole package, as a folder of links; or, for a package
    /// too large to link every file of at every save (`DocumentStore.keepsWholeVersion`), the
    /// member the change replaces or removes, as a version of that member's own.
    private func versions(replacedBy change: PackageChange, root: String) -> [CommitPipeline.Replaced] {
        guard replacesContent(change, root: root) else { return [] }
        if store.keepsWholeVersion(ofPackage: root) { return [.init(path: root)] }
        switch change {
        case .replaceFile(let member, _), .removeFile(let member):
            return [.init(path: root + "/" + member)]
        case .rename(let source, let destination, let flags):
            // An exchange leaves both files in the package: each is kept as a copy.
            let exchange = flags & 2 != 0
            return (exchange ? [.init(path: root + "/" + source, copying: true)] : []) + [.init(path: root + "/" + destination, copying: exchange)]
        case .removeDirectory, .createFile, .makeSpecialFile, .makeDirectory, .makeSymbolicLink:
            return []
        }
    }

    /// Whether `change` replaces or removes something the package holds, so that the package before
    /// it is a version to keep: not a new item, nor a first write over a member just made empty.
    private func replacesContent(_ change: PackageChange, root: String) -> Bool {
        switch change {
        case .replaceFile(let member, _): ((try? store.status(of: root + "/" + member))?.size ?? 0) > 0
        case .rename(_, let destination, let flags): flags & 2 != 0 || (try? store.status(of: root + "/" + destination)) != nil
        case .removeFile, .removeDirectory: true
        case .createFile, .makeSpecialFile, .makeDirectory, .makeSymbolicLink: false
        }
    }

    private func stateAfterRemoval(_ root: String, claim: DocumentClaim) -> State {
        let state = state(of: root, claim: claim)
        if case .corrupt(let reason) = state {
            PackageMarker.unmark(root, in: store)
            return .draft(reason: reason)
        }
        return state
    }

    private func apply(_ change: PackageChange, in root: String, publishing publish: Publication) throws(FUSEError) {
        do { try change.apply(in: root, store: store, publishing: publish) } catch { throw FUSEError(error) }
    }

    /// A package moved or removed: forget what was known of its old path.
    func forget(_ root: String) {
        decodedVersions.withLock { $0[PathKey(root)] = nil }
    }
}
