import CSystemShims
import DocumentModel
import DocumentStore
import Foundation
import FUSE
import Glibc
import SystemSupport

/// The write path: writes go to a per-inode stage in the store's private area, never to the live
/// document. A changed stage is judged — decoded, re-encoded by the document type with
/// `existingFile` set, and persisted atomically — at the writer's close, at fsync, and at the last
/// release; a refused stage returns EIO and the stored document stays as it was.
///
/// A close is not the end of a write: a child that inherited the descriptor exits, a spawned
/// program's close-on-exec closes it, another process opens and closes the file, all while the
/// writer is half-way. So a close judges the stage only when its process wrote to it, and a refused
/// stage is kept (a copy goes to the quarantine): the writer's later writes land on the same bytes.
/// Only the last release of a writable handle drops an invalid stage, into the quarantine.
extension DocumentFileSystem {
    func create(parent: Inode, name: FileName, mode: mode_t, flags: Int32, context: RequestContext) throws(FUSEError) -> (Entry, OpenReply) {
        try requireWritable()
        let path = try childPath(parent: parent, name: name)
        let mode = creationMode(mode, at: path, context)
        if classifier.packageMember(of: path) != nil {
            let owner = owner(context)
            do {
                _ = try changeInPackage(parent: parent, name: name) { .createFile($0, mode: mode & 0o7777, owner: owner) }
            } catch where error.errno == EEXIST && flags & O_EXCL == 0 {
                // Created since the kernel looked: open what is there.
            }
            return try openCreated(parent: parent, name: name, path: try childPath(parent: parent, name: name), flags: flags, context: context)
        }
        try requireClaimedIfStrict(path, isDirectory: false)
        guard classifier.claim(forPath: path, isDirectory: false) != nil || !store.writesInPlace else {
            let descriptor = try storeCall {
                try store.openInPlace(path, flags: (flags & (O_ACCMODE | O_TRUNC | O_EXCL)) | O_CREAT, mode: mode & 0o7777, owner: owner(context))
            }
            let entry = try countedEntry(parent: parent, name: name, path: path, caller: context.processID)
            guard let node = nodes.node(entry.inode) else { throw .noEntry }
            node.state.withLock { state in
                state.openHandles += 1
                if flags & O_ACCMODE != O_RDONLY { state.writableHandles += 1 }
            }
            nodes.writerArrived(context.processID)
            return (entry, register(OpenFile(node: node, access: .raw(descriptor), flags: flags, view: nil)))
        }
        var created: OwnedDescriptor?
        do {
            // The document exists from now on, as an empty draft, until its first commit.
            created = try storeCall { try store.createEmptyFile(path, mode: mode & 0o7777, owner: owner(context)) }
        } catch where error.errno == EEXIST && flags & O_EXCL == 0 {
            // Created by someone else since the kernel looked: open what is there.
        }
        return try openCreated(parent: parent, name: name, path: path, flags: flags, context: context, created: created)
    }

    /// The entry and open handle for a file `create` just made (or found made). `created`, the new
    /// file's descriptor, serves it as its live version (the open checks it is still the one there).
    private func openCreated(parent: Inode, name: FileName, path: String, flags: Int32, context: RequestContext, created: OwnedDescriptor? = nil) throws(FUSEError) -> (Entry, OpenReply) {
        let (entry, status) = try countedEntryAndStatus(parent: parent, name: name, path: path, caller: context.processID)
        if let created, let node = nodes.node(entry.inode) {
            node.state.withLock { state in
                if state.live == nil { state.live = created }
            }
        }
        do {
            return (entry, try open(inode: entry.inode, flags: flags & ~(O_CREAT | O_EXCL), context: context, created: created == nil ? nil : status))
        } catch {
            nodes.forget(entry.inode, count: 1)
            throw error
        }
    }

    func write(inode: Inode, handle: UInt64, bytes: UnsafeRawBufferPointer, offset: Int64, context: RequestContext) throws(FUSEError) -> Int {
        guard let file = files.get(handle) else { throw .badHandle }
        try requireFits(offset: offset, length: Int64(bytes.count))
        let wroteInPlace = try inPlace(file) { (descriptor: OwnedDescriptor) throws(FUSEError) in
            if context.userID != 0, let status = try? descriptor.status(), status.permissions & (S_ISUID | S_ISGID) != 0,
               let path = nodes.path(of: inode)
            {
                try dropSetIDBits(of: file.node, path: path, writer: owner(context), process: context.processID)
            }
            // O_APPEND at the file's end: the kernel sends its own idea of the size, which another
            // name of the file (an inode of its own) or a program beside the mount may have passed.
            let end = file.appends ? try storeCall { try descriptor.status().size } : offset
            try storeCall { try FileIO.writeAll(descriptor.rawValue, bytes, offset: end) }
            if end != offset {
                notifier.invalidateAttributes(of: file.node.inode)
                notifier.invalidateContent(of: file.node.inode)
            }
        }
        if wroteInPlace {
            otherNamesChanged(of: file.node.inode, content: true)
            return bytes.count
        }
        // Renamed to a name a document type claims while open: its writes are staged from now on.
        var seed: OwnedDescriptor?
        if case .raw(let descriptor) = file.access { seed = descriptor }
        try modifyStage(of: file.node, seed: seed, caller: context.processID) { (stage: inout Stage) throws(FUSEError) in
            // O_APPEND is applied here, at the staged end: the kernel's idea of the size may be the
            // committed one that readers are shown.
            let at = file.appends ? try storeCall { try stage.file.status().size } : offset
            try storeCall { try FileIO.writeAll(stage.file.descriptor.rawValue, bytes, offset: at, path: stage.file.path) }
            stage.lowestChange = min(stage.lowestChange, at)
        }
        return bytes.count
    }

    /// How many times one write makes room on a full store before it fails with ENOSPC.
    static let roomRounds = 8

    /// Runs `body` on a raw handle's store file while its node's writes go there in place, holding
    /// the node's staging lock: a rename that gives the file a document name judges it and marks
    /// its writes staged holding that lock, so no raw write lands between the judgement and the
    /// install. False, with nothing run, once the node's writes are staged (or for a document's handle).
    private func inPlace(_ file: OpenFile, _ body: (OwnedDescriptor) throws(FUSEError) -> Void) throws(FUSEError) -> Bool {
        guard case .raw(let descriptor) = file.access else { return false }
        return try file.node.staging.withLock { (_: inout StageSlot) throws(FUSEError) -> Bool in
            guard !file.node.isStaged.load(ordering: .acquiring) else { return false }
            try body(descriptor)
            return true
        }
    }

    /// Tells the store which item a new stage of `node` changes, from the node's name read under the
    /// namespace, where this mount's renames change the node table and the store's view of names
    /// together: a rename between the stage's first read of the name and the store's look (a
    /// package exchanged by another request) made a PostgreSQL store check the commit against the
    /// other document and refuse it as a conflict. (Another mount's rename reaches the store's view
    /// before the node table: not covered here.)
    func noteBase(of file: StagingFile, node: Node) {
        // A store that checks no bases is not waited on for the namespace.
        guard store.checksBases else { return }
        namespace.reading {
            if let path = nodes.path(of: node.inode) { store.noteBase(of: file, for: path) }
        }
    }

    /// Changes the node's stage (made on first need from the committed content, or from `seed`, or
    /// empty with `startEmpty`) with `body`, and marks it for commit. A failure of `body` poisons the
    /// stage.
    func modifyStage(
        of node: Node, seed: OwnedDescriptor? = nil, startEmpty: Bool = false, caller: pid_t?, _ body: (inout Stage) throws(FUSEError) -> Void
    ) throws(FUSEError) {
        try node.staging.withLock { (slot: inout StageSlot) throws(FUSEError) in
            if let failure = slot.stage?.failure { throw FUSEError(failure) }
            if let path = nodes.path(of: node.inode) {
                try dropSetIDBits(of: node, path: path, writer: Requester.current, process: caller)
            }
            var stage: Stage
            if let existing = slot.stage {
                stage = existing
            } else {
                var storedPath = nodes.path(of: node.inode)
                var source = startEmpty ? nil : node.state.withLock { $0.committed } ?? seed
                if source == nil, !startEmpty {
                    // A writer that does not read opened no committed file (see `open`): the one
                    // at its name now, fetched first, then found with renames held off. Content
                    // that left the mirror in between is downloaded holding it, as an open's is. A
                    // file that cannot be opened fails the write: a stage seeded empty would
                    // commit the write's bytes alone over the document.
                    for downloading in [false, true] {
                        if let path = storedPath { try? store.fetchContent(of: path) }
                        TestHook.seedAfterFetch.pause()
                        let found = try namespace.reading { () throws(FUSEError) -> OwnedDescriptor?? in
                            storedPath = nodes.path(of: node.inode)
                            guard let path = storedPath else { return .some(nil) }
                            if downloading { return .some(try storeCall { try store.openForReading(path) }) }
                            // Not in the mirror, or not opened: looked for again.
                            guard let opened = try? store.openFetchedForReading(path) else { return nil }
                            return .some(opened)
                        }
                        if let found {
                            source = found
                            break
                        }
                    }
                }
                let baseSize = source.flatMap { try? $0.status().size }
                let file = try storeCall { () throws -> StagingFile in
                    do {
                        return try store.makeStagingFile(seededFrom: source, for: storedPath ?? "(removed)")
                    } catch let error as SystemCallError where error.isOutOfSpace && store.makeRoom(bytes: baseSize ?? 0) {
                        return try store.makeStagingFile(seededFrom: source, for: storedPath ?? "(removed)")
                    }
                }
                noteBase(of: file, node: node)
                stage = Stage(file: file, isDirty: false)
                stage.baseSize = baseSize
                stage.startedEmpty = source == nil
                node.state.withLock { $0.stagedFile = file }
            }
            do throws(FUSEError) {
                let sizeBefore = stage.isUntouchedEmpty ? 0 : try? stage.file.status().size
                // Rounds of making room, each twice the last (from 1% of the file system, at least
                // 4 MiB): a large write gets the room it needs in a few, and a request larger than
                // all that (a huge fallocate) fails without emptying the archive.
                var rounds = 0
                while true {
                    do throws(FUSEError) {
                        try body(&stage)
                        break
                    } catch where SystemCallError.isOutOfSpace(error.errno) && rounds < Self.roomRounds && store.makeRoom(bytes: Int64(4 << 20) << rounds) {
                        rounds += 1
                        // The store gave back space it holds for itself (versions, a shared store's
                        // cached content): tried again while it has more to give. What the failed
                        // write got down is cut off first: an append would repeat it.
                        if let sizeBefore { _ = ftruncate(stage.file.descriptor.rawValue, off_t(sizeBefore)) }
                    }
                }
            } catch {
                poison(&stage, node: node, path: nodes.path(of: node.inode) ?? "(removed)", errno: error.errno)
                slot.stage = stage
                throw error
            }
            stage.isDirty = true
            stage.generation += 1
            stage.writer = Requester.current ?? stage.writer
            // A thread new to this stage also joins the node's writers (who see staged attributes).
            if let caller, stage.writers.insert(caller).inserted {
                node.state.withLock { _ = $0.writerThreads.insert(caller) }
            }
            slot.stage = stage
        }
    }

    /// A write into the stage failed: nothing of it will ever be committed. Its space is given back
    /// at once; the partial bytes are kept in the quarantine only when the failure was not a lack
    /// of space (moving them there takes none, but keeping them would hold it).
    private func poison(_ stage: inout Stage, node: Node, path: String, errno: Int32) {
        guard stage.failure == nil else { return }
        stage.failure = errno
        let cause = String(cString: strerror(errno))
        DocumentMetrics.refused(.writeFailed)
        if SystemCallError.isOutOfSpace(errno) {
            store.releaseSpace(of: stage.file)
            logger.error("a write to \(path) failed (\(cause)): the document keeps its previous version and the partial write is dropped to give its space back; the writer sees the error again at close")
        } else {
            let kept = try? store.quarantine(stage.file, for: path, reason: "a write failed (\(cause)); the document kept its previous version", owner: quarantineOwner(stage.writer, for: path))
            logger.error("a write to \(path) failed (\(cause)): the document keeps its previous version; the partial write is in \(kept ?? "(could not be kept)")")
        }
        node.state.withLock { $0.stagedFile = nil }
    }

    func truncate(node: Node, path: String, size: Int64, handle: UInt64?, caller: pid_t) throws(FUSEError) {
        let file = handle.flatMap { files.get($0) }
        if let file, try inPlace(file, { (descriptor: OwnedDescriptor) throws(FUSEError) in
            try storeCall { try retryingOnInterrupt("ftruncate") { ftruncate(descriptor.rawValue, off_t(size)) } }
        }) {
            return
        }
        // Its mode decides, not its number (an attribute read more).
        let status = try storeCall { try store.unnumberedStatus(of: path) }
        switch classifier.role(forPath: path) {
        case .packageMember(let member):
            guard isEditable(member: member, status: status) else { throw .accessDenied }
        case .document(let claim):
            guard isEditable(claim: claim, status: status) else { throw .accessDenied }
        case .raw:
            // In place where the store writes raw files in place; staged where it stages them, as
            // their writes are (a truncation of the stored file alone left a writer's stage to be
            // seeded from the version before it: `echo hi > log` kept the rest of the old log).
            if file == nil && store.writesInPlace {
                // Held still against a rename that gives the file a document name meanwhile (it
                // holds this lock): the kernel looks the name up again and truncates the document.
                try node.staging.withLock { (_: inout StageSlot) throws(FUSEError) in
                    guard let current = nodes.path(of: node.inode), case .raw = classifier.role(forPath: current) else { throw .stale }
                    try storeCall { try store.truncate(current, size: size) }
                }
                return
            }
        }
        // An O_TRUNC open arrives as a truncation to nothing without a handle (the mount declines
        // atomic O_TRUNC), from the thread that just opened the file for writing: it belongs to that
        // writer's stage, as an ftruncate would.
        let byWriter = node.state.withLock { state -> Bool in
            state.holdForCachedReaders()
            return handle != nil || ThreadGroup.sameProcess(caller, asAnyOf: state.writerThreads)
        }
        // A truncation to nothing starts the stage empty: the content it discards is never copied.
        // Only an ftruncate makes its caller one of the stage's writers: the opener's truncation
        // alone, like a shell's `> file` before the command writes, commits nothing at its close.
        try modifyStage(of: node, startEmpty: size == 0, caller: handle == nil ? nil : caller) { (stage: inout Stage) throws(FUSEError) in
            if !(size == 0 && stage.isUntouchedEmpty) {
                try storeCall { try retryingOnInterrupt("ftruncate") { ftruncate(stage.file.descriptor.rawValue, off_t(size)) } }
            }
            stage.lowestChange = min(stage.lowestChange, size)
        }
        // ftruncate on an open file is staged with that file's writes; truncate(2) on a path is a
        // commit of its own, made as if by a handle opened and closed around it — final unless a
        // writer is at work on the same stage.
        guard !byWriter else { return }
        let writersAtWork = node.state.withLock { $0.writableHandles > 0 }
        try node.staging.withLock { (slot: inout StageSlot) throws(FUSEError) in
            try commit(&slot, node: node, durable: false, closing: !writersAtWork)
        }
    }

    func flush(inode: Inode, handle: UInt64, context: RequestContext) throws(FUSEError) {
        guard let file = files.get(handle), file.isWritable else { return }
        try file.node.staging.withLock { (slot: inout StageSlot) throws(FUSEError) in
            guard let stage = slot.stage else { return }
            if let failure = stage.failure { throw FUSEError(failure) }
            // A close by a process that did not write (a child exiting, an exec, another opener,
            // or the shell closing `> file` before the command writes) leaves the stage to its writer.
            guard stage.isDirty, ThreadGroup.sameProcess(context.processID, asAnyOf: stage.writers) else { return }
            try commitAnswering(&slot, node: file.node, durable: false)
        }
    }

    /// Commits for a close or an fsync, whose answer the writer takes as the save's: a stage the store
    /// could not take is marked so, and is not committed behind the writer's back at the last release.
    private func commitAnswering(_ slot: inout StageSlot, node: Node, durable: Bool) throws(FUSEError) {
        do {
            try commit(&slot, node: node, durable: durable, closing: false)
        } catch {
            if var stage = slot.stage, stage.refusal?.generation != stage.generation {
                stage.answeredUnstored = stage.generation
                slot.stage = stage
            }
            throw error
        }
    }

    func fsync(inode: Inode, handle: UInt64, dataOnly: Bool) throws(FUSEError) {
        guard let file = files.get(handle) else { throw .badHandle }
        if case .raw(let descriptor) = file.access, !file.node.isStaged.load(ordering: .acquiring) {
            try storeCall { try FileIO.synchronize(descriptor.rawValue, dataOnly: dataOnly) }
            return
        }
        try file.node.staging.withLock { (slot: inout StageSlot) throws(FUSEError) in
            if let failure = slot.stage?.failure { throw FUSEError(failure) }
            if slot.stage?.isDirty == true {
                try commitAnswering(&slot, node: file.node, durable: true)
            } else if let path = nodes.path(of: file.node.inode) {
                // Committed already (at an earlier close): make that version and its name durable.
                try storeCall { try store.synchronize(path) }
            }
        }
    }

    /// An fallocate is a write like any other: its caller is one of the stage's writers, so its
    /// close commits it and is answered with the judgement (before, only the last release did,
    /// and a refusal reached nobody).
    func allocate(inode: Inode, handle: UInt64, mode: Int32, offset: Int64, length: Int64, context: RequestContext) throws(FUSEError) {
        guard let file = files.get(handle) else { throw .badHandle }
        // FALLOC_FL_KEEP_SIZE (and a hole punch, which needs it) leaves the size as it is.
        if mode & 0x01 == 0 { try requireFits(offset: offset, length: length) }
        if let path = nodes.path(of: file.node.inode) {
            try dropSetIDBits(of: file.node, path: path, writer: Requester.current, process: context.processID)
        }
        if try inPlace(file, { (descriptor: OwnedDescriptor) throws(FUSEError) in
            try storeCall { try retryingOnInterrupt("fallocate") { docfs_fallocate(descriptor.rawValue, mode, off_t(offset), off_t(length)) } }
        }) {
            otherNamesChanged(of: file.node.inode, content: true)
            return
        }
        try modifyStage(of: file.node, caller: context.processID) { (stage: inout Stage) throws(FUSEError) in
            try storeCall { try retryingOnInterrupt("fallocate") { docfs_fallocate(stage.file.descriptor.rawValue, mode, off_t(offset), off_t(length)) } }
        }
    }

    func release(inode: Inode, handle: UInt64, flags: Int32) {
        guard let file = files.remove(handle) else { return }
        // A direct write made while this handle was open (its own or another's) may have left
        // beside it pages a read cached meanwhile (see `open`): the next open drops the page cache,
        // and readers still open are given the file anew.
        if case .raw = file.access, file.isWritable {
            let othersOpen = file.node.state.withLock { state in
                state.cachedVersion = nil
                return state.openHandles > 1
            }
            if othersOpen { notifier.invalidateContent(of: file.node.inode) }
        }
        // The handle's node, not the kernel's inode: an open of a replaced inode is served by the
        // node that holds its name now.
        nodes.closed(file.node.inode)
        if file.readsThroughPageCache { releaseCachedReader(of: file.node) }
        release(node: file.node, writable: file.isWritable)
    }

    /// Counts a handle closed. The last writable one settles the stage: committed if it decodes,
    /// else quarantined; the last handle of all drops the node's open state.
    func release(node: Node, writable: Bool) {
        let lastWriter = node.state.withLock { state in
            guard writable else { return false }
            state.writableHandles = max(0, state.writableHandles - 1)
            return state.writableHandles == 0
        }
        if lastWriter {
            TestHook.releaseBeforeSettle.pause()
            node.staging.withLock { slot in settleStage(&slot, node: node) }
        }
        let closedAll = node.state.withLock { state -> Bool in
            state.openHandles = max(0, state.openHandles - 1)
            guard state.openHandles == 0 else { return false }
            state.dropLiveIfUnused()
            return true
        }
        if closedAll { nodes.settle(node.inode) }
    }

    /// Judges and drops the stage once no handle can write to it any more.
    private func settleStage(_ slot: inout StageSlot, node: Node) {
        // A writer that opened since the last one closed carries the stage on.
        guard node.state.withLock({ $0.writableHandles == 0 }) else { return }
        defer {
            slot.stage = nil
            node.state.withLock { state in
                state.stagedFile = nil
                // A writer that opened while this commit ran is a writer of the next stage.
                if state.writableHandles == 0 { state.writerThreads = [] }
            }
        }
        guard let stage = slot.stage, stage.failure == nil else { return }
        guard stage.isDirty else {
            store.discard(stage.file)
            return
        }
        if stage.answeredUnstored == stage.generation {
            // Its writer was told at close that it was not stored: it never is, and its bytes are kept.
            let path = nodes.path(of: node.inode) ?? "(removed)"
            let kept = try? store.quarantine(
                stage.file, for: path, reason: "could not be stored: the store did not take it before the writer's close was answered with an error",
                owner: quarantineOwner(stage.writer, for: path))
            logger.error("the write to \(path) that its close was told failed is not stored later; its bytes are kept in \(kept ?? "the staging area")")
            return
        }
        do {
            try commit(&slot, node: node, durable: false, closing: true)
        } catch {
            // Refusals have quarantined the bytes already; anything still here could not be stored.
            guard let left = slot.stage else { return }
            let path = nodes.path(of: node.inode) ?? "(removed)"
            let kept = try? store.quarantine(left.file, for: path, reason: "could not be stored when the file was closed: \(error)", owner: quarantineOwner(left.writer, for: path))
            logger.error("the last write to \(path) could not be stored (\(error)); its bytes are kept in \(kept ?? "the staging area")")
        }
    }
}
