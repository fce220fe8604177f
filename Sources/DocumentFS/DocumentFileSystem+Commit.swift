import DocumentModel
import DocumentStore
import Foundation
import FUSE
import Glibc
import SystemSupport

/// Committing a stage: judged by what the file is when it is committed (its current name and type,
/// its current package), decoded with no lock held that `stat`, `lookup` or reads need, and
/// installed at the name it has at that instant.
extension DocumentFileSystem {
    /// What judging a stage decided.
    private enum Verdict {
        /// Store the staged bytes as they are.
        case asStaged
        /// Store what the document type returned instead.
        case reencoded(FileWrapper)
        case refused(String)
    }

    /// Validates and persists the stage, if it changed. Call with the node's `staging` lock held.
    /// `closing`: the last writable handle is gone, so a refused stage is dropped (into the
    /// quarantine); otherwise it is kept for its writer and a copy is quarantined.
    func commit(_ slot: inout StageSlot, node: Node, durable: Bool, closing: Bool) throws(FUSEError) {
        guard let stage = slot.stage, stage.isDirty, stage.failure == nil else { return }
        try DocumentMetrics.timed(DocumentMetrics.commits) { () throws(FUSEError) in
            try commitDirty(&slot, stage: stage, node: node, durable: durable, closing: closing)
        }
    }

    /// `commit`, for a stage that changed since its last commit. First judged holding nothing a
    /// rename needs (a decode may take seconds); a rename that lands between the judgement and
    /// the install makes the commit judge again, this time with renames held off (`packageLayout`,
    /// then `changes`), so that judgement is the last.
    private func commitDirty(_ slot: inout StageSlot, stage: Stage, node: Node, durable: Bool, closing: Bool) throws(FUSEError) {
        // Judged with its writer's rights, whoever's request this is.
        let requester = Requester.current
        if let writer = stage.writer { Requester.set(writer) }
        defer { Requester.set(requester) }
        if try commitOnce(&slot, stage: stage, node: node, durable: durable, closing: closing, holdingRenames: false) { return }
        let committed = try packageLayout.reading { () throws(FUSEError) -> Bool in
            try commitOnce(&slot, stage: stage, node: node, durable: durable, closing: closing, holdingRenames: true)
        }
        // Renames through the mount cannot move the document while they are held off; a change
        // beside the mount can (and a removal there is dropped as one: `dropRemoved`).
        guard committed else {
            logger.error("could not commit \(path(orRemoved: node)): its name changed while renames were held off")
            throw .busy
        }
    }

    /// One judgement and install of the stage at the name the document has; false when a rename
    /// moved it between the two. `holdingRenames`: called with `packageLayout` held, and every
    /// rename held off (`changes`) from resolving the name to installing there.
    private func commitOnce(_ slot: inout StageSlot, stage: Stage, node: Node, durable: Bool, closing: Bool, holdingRenames: Bool) throws(FUSEError) -> Bool {
        guard let path = nodes.path(of: node.inode) else {
            dropRemoved(&slot, stage: stage, node: node, closing: closing)
            return true
        }
        if case .packageMember = classifier.role(forPath: path) {
            // Resolved again with folder renames held off, so the commit lands in the package the
            // member is in now, under its current name. (A member never leaves its package by a
            // rename: that is refused, EXDEV.)
            func commitInPackage() throws(FUSEError) -> Bool {
                guard let now = nodes.path(of: node.inode), case .packageMember(let member) = classifier.role(forPath: now) else { return false }
                try commitMember(&slot, node: node, path: now, member: member, durable: durable, closing: closing)
                return true
            }
            return holdingRenames ? try commitInPackage() : try packageLayout.reading { () throws(FUSEError) -> Bool in try commitInPackage() }
        }
        guard holdingRenames else { return try judgeAndInstall(&slot, stage: stage, node: node, path: path, durable: durable, closing: closing, holdingRenames: false) }
        return try changes.reading { () throws(FUSEError) -> Bool in
            guard let now = nodes.path(of: node.inode) else {
                dropRemoved(&slot, stage: stage, node: node, closing: closing)
                return true
            }
            return try judgeAndInstall(&slot, stage: stage, node: node, path: now, durable: durable, closing: closing, holdingRenames: true)
        }
    }

    /// Removed while open: there is no document left to commit to. The stage stays the file's
    /// content for its writers (reads, fstat) until the last of them closes; then its space is
    /// given back. (Dropping it at the first close leaked it until the next mount, which took it
    /// for a crash's leftover.)
    private func dropRemoved(_ slot: inout StageSlot, stage: Stage, node: Node, closing: Bool) {
        guard closing else { return }
        store.discard(stage.file)
        slot.stage = nil
        node.state.withLock { $0.stagedFile = nil }
    }

    /// Judges the stage as the document at `path` and installs what the judgement decided there;
    /// false when the document's name is no longer `path` (only when not `holdingRenames`).
    private func judgeAndInstall(
        _ slot: inout StageSlot, stage: Stage, node: Node, path: String, durable: Bool, closing: Bool, holdingRenames: Bool
    ) throws(FUSEError) -> Bool {
        let verdict: Verdict
        var isDocument = false
        switch classifier.role(forPath: path) {
        case .packageMember:
            return false
        case .raw:
            verdict = .asStaged
        case .document(let claim):
            isDocument = true
            if let refusal = stage.refusal, refusal.generation == stage.generation, FileSystemPath.same(refusal.path, path) {
                verdict = .refused(refusal.reason)
            } else {
                verdict = judge(stage, path: path, claim: claim)
            }
        }
        if !holdingRenames { TestHook.commitAfterJudge.pause() }
        if case .refused(let reason) = verdict {
            try refuse(&slot, node: node, path: path, reason: reason, cause: .invalid, closing: closing)
        }
        var refusedByStore: String?
        // Renames and removals wait (`changes`): the path stays the node's until installed.
        func install() throws(FUSEError) -> FileStatus? {
            guard let now = nodes.path(of: node.inode), FileSystemPath.same(now, path) else { return nil }
            let status: FileStatus
            do {
                status = try pipeline.commit(replacing: isDocument ? [.init(path: path)] : [], saving: isDocument ? [path] : []) {
                    if case .reencoded(let wrapper) = verdict { return try store.persist(wrapper, at: path, durable: durable) }
                    return try store.install(stage.file, at: path, durable: durable)
                }
            } catch let refusal as StoreRefusal {
                refusedByStore = refusal.reason
                return nil
            } catch {
                throw FUSEError(error)
            }
            installed(node, stage: stage, status: status, verdict: verdict, path: path)
            return status
        }
        let stored = holdingRenames ? try install() : try changes.reading { () throws(FUSEError) -> FileStatus? in try install() }
        if let reason = refusedByStore {
            try refuse(&slot, node: node, path: path, reason: reason, cause: .store, closing: closing)
        }
        guard stored != nil else {
            // Removed beside the mount while it was judged with renames held off.
            guard holdingRenames, nodes.path(of: node.inode) == nil else { return false }
            dropRemoved(&slot, stage: stage, node: node, closing: closing)
            return true
        }
        slot.stage = nil
        return true
    }

    private func path(orRemoved node: Node) -> String { nodes.path(of: node.inode) ?? "(removed)" }

    /// Decodes the staged bytes with the claiming type and encodes what it would save.
    private func judge(_ stage: Stage, path: String, claim: DocumentClaim) -> Verdict {
        let staged = try? stage.file.status()
        if (staged?.size ?? 0) == 0, ((try? store.status(of: path))?.size ?? 0) == 0 {
            // Created and closed empty (`touch`, `: > new.json`): a draft, stored as it is.
            return .asStaged
        }
        do {
            let file = try codec.wrapper(for: stage.file.descriptor, name: StorePath.lastComponent(path), status: staged)
            let stagedBytes = file.regularFileContents ?? Data()
            let result = try pipeline.judge(file, claim: claim, existingAt: path)
            return DocumentCodec.wrapper(result, holdsExactly: stagedBytes) ? .asStaged : .reencoded(result)
        } catch {
            return .refused("it does not decode as \(claim.type.name) (\(claim.contentType.identifier)): \(describe(error))")
        }
    }

    /// The node's bookkeeping after a version was stored.
    private func installed(_ node: Node, stage: Stage, status: FileStatus, verdict: Verdict, path: String) {
        let live: OwnedDescriptor?
        let reencoded: Bool
        if case .reencoded = verdict {
            reencoded = true
            store.discard(stage.file)
            live = try? store.openForReading(path)
        } else {
            reencoded = false
            // The staged file is the stored one now; it serves reads until the next write stages anew.
            live = stage.file.descriptor
        }
        let (dropPages, previous) = node.state.withLock { state in
            if !stage.onlyAppends { state.holdForCachedReaders() }
            let previous = state.live
            state.live = live
            state.decodedVersion = status.version
            // After an append, what cached readers hold is a prefix of the new version: it is the
            // cached one now, so a change made beside the mount later is still recognized.
            let appendedUnderReaders = stage.onlyAppends && state.cachedReaders > 0 && state.heldStatus == nil
            state.cachedVersion = appendedUnderReaders ? status.version : nil
            state.cachedAtCommit = state.commits + 1
            state.stagedFile = nil
            state.commits += 1
            if !stage.onlyAppends { state.lastRewrite = state.commits }
            defer { state.pageCacheInUse = false }
            return (state.pageCacheInUse, previous)
        }
        notifier.invalidateAttributes(of: node.inode)
        // A save through a name of a file with several links made that name a file of its own, with
        // a number of its own (`install`'s status has the file system's); the others keep the old
        // file, with one link fewer.
        if nodes.isLinked(node.inode), let saved = try? store.status(of: path) {
            for other in nodes.renumber(node.inode, to: saved.identity) { notifier.invalidateAttributes(of: other) }
        }
        if stage.onlyAppends { carryAppend(of: node, from: previous, to: live) }
        // Write-only handles bypass the page cache, so pages cached from before hold the old version.
        if dropPages || reencoded { invalidateContentUnlessHeld(node) }
    }

    /// Refuses the stage: EIO, the stored document unchanged, the refused bytes in the quarantine
    /// (moved there when closing, copied while the writer may still complete them).
    private func refuse(
        _ slot: inout StageSlot, node: Node, path: String, reason: String, cause: DocumentMetrics.RefusalCause, closing: Bool
    ) throws(FUSEError) -> Never {
        guard var stage = slot.stage else { throw .ioError }
        if stage.refusal?.generation != stage.generation {
            DocumentMetrics.refused(cause)
            let kept = closing
                ? try? store.quarantine(stage.file, for: path, reason: reason, owner: quarantineOwner(stage.writer, for: path))
                : try? store.quarantineCopy(of: stage.file, for: path, reason: reason, owner: quarantineOwner(stage.writer, for: path))
            let later = closing ? "" : " The staged bytes are kept: later writes to the open file still land on them."
            logger.error("refused a write to \(path): \(reason). The stored document is unchanged; the refused bytes are in \(kept ?? "(could not be kept)").\(later)")
        } else if closing {
            store.discard(stage.file)
            logger.notice("refused \(path) again at its last close, unchanged since it was quarantined")
        }
        stage.refusal = (stage.generation, path, reason)
        slot.stage = closing ? nil : stage
        let dropPages = node.state.withLock { state in
            if closing { state.stagedFile = nil }
            // A read-write handle's refused bytes may be in the page cache: the next open drops it.
            state.cachedVersion = nil
            return state.pageCacheInUse
        }
        if dropPages { invalidateContentUnlessHeld(node) }
        throw .ioError
    }

    /// A copy of the stage with its times (`cp -p` and `tar` set them on the open descriptor).
    private func copyOfStage(_ stage: Stage, for path: String) throws(FUSEError) -> StagingFile {
        let copy = try storeCall { try store.makeStagingFile(seededFrom: stage.file.descriptor, for: path) }
        if let status = try? stage.file.status() {
            var times = [status.accessTime, status.modificationTime]
            futimens(copy.descriptor.rawValue, &times)
        }
        return copy
    }

    /// Commits a member's stage as a change to its package. The change consumes a staging file: the
    /// stage itself when closing, else a copy, so a refused change leaves the writer's stage intact.
    private func commitMember(
        _ slot: inout StageSlot, node: Node, path: String, member: PackageMember, durable: Bool, closing: Bool
    ) throws(FUSEError) {
        guard let stage = slot.stage else { return }
        // A member is a document of its own type too (assets/x.json must be JSON), judged before
        // the package's type judges the package with it.
        if let own = classifier.claim(forPath: path, isDirectory: false), case .refused(let reason) = judge(stage, path: path, claim: own) {
            try refuse(&slot, node: node, path: path, reason: reason, cause: .invalid, closing: closing)
        }
        try packages.withPackage(member.root) { () throws(FUSEError) in
            if let outcome = try packages.commitInPlace(.replaceFile(member.member, stage.file), root: member.root, claim: member.claim, durable: durable) {
                if case .refusedByStore(let reason) = outcome {
                    try refuse(&slot, node: node, path: path, reason: reason, cause: .store, closing: closing)
                }
                slot.stage = nil
                memberCommitted(node, installed: stage.file, outcome: outcome, path: path)
                return
            }
            let file = closing ? stage.file : try copyOfStage(stage, for: path)
            if durable { try storeCall { try FileIO.synchronize(file.descriptor.rawValue, dataOnly: true, path: file.path) } }
            let outcome: PackageCoordinator.Outcome
            do throws(FUSEError) {
                outcome = try packages.commit(
                    .replaceFile(member.member, file), root: member.root, claim: member.claim, durable: durable, inPlaceTried: true)
            } catch {
                if closing {
                    slot.stage = nil
                    node.state.withLock { $0.stagedFile = nil }
                } else if (try? FileStatus.of(path: file.path)) != nil {
                    store.discard(file)
                }
                node.state.withLock { $0.cachedVersion = nil }
                notifier.invalidateContent(of: node.inode)
                throw error
            }
            if !closing { store.discard(stage.file) }
            slot.stage = nil
            memberCommitted(node, installed: file, outcome: outcome, path: path)
        }
        rewatchPackage(member.root)
    }

    /// The member's bookkeeping once its package took the write (`installed`: the staging file that
    /// became the member, when it went in as written).
    private func memberCommitted(_ node: Node, installed: StagingFile, outcome: PackageCoordinator.Outcome, path: String) {
        node.state.withLock { state in
            state.holdForCachedReaders()
            switch outcome {
            case .asApplied: state.live = installed.descriptor
            case .reencoded: state.live = try? store.openForReading(path)
            case .refusedByStore: break
            }
            state.decodedVersion = nil
            state.cachedVersion = nil
            state.stagedFile = nil
            state.commits += 1
            state.lastRewrite = state.commits
        }
        notifier.invalidateAttributes(of: node.inode)
        invalidateContentUnlessHeld(node)
    }
}


extension DocumentFileSystem {
    /// Whom refused bytes for the document at `path` are quarantined for: their writer, who then
    /// reads them in the mount's quarantine view, but only if the writer may read the document. A
    /// stage is seeded with the whole stored document, so a writer with write permission alone
    /// (a 0622 file) would otherwise get to read it by saving one bad byte. Otherwise root's.
    func quarantineOwner(_ writer: Ownership?, for path: String) -> Ownership? {
        guard let writer, writer.userID != 0 else { return writer }
        // A document whose name went: who may read it is not known any more.
        guard let stored = try? store.status(of: path) else { return nil }
        let bit: UInt32 = stored.userID == writer.userID ? 0o400 : stored.groupID == writer.groupID ? 0o040 : 0o004
        return stored.permissions & bit != 0 ? writer : nil
    }
}
