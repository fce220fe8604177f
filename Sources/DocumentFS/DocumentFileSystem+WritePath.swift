import CSystemShims
import DocumentModel
import DocumentStore
import Foundation
import FUSE
import Glibc
import SystemSupport

/// The write path: writes go to a per-inode stage in the store's private area; at every flush
/// (each close), fsync and release a changed stage is decoded, re-encoded by the document type with
/// `existingFile` set, and persisted atomically — or refused with EIO, the stored document left
/// as it was and the rejected bytes moved to the quarantine.
extension DocumentFileSystem {
    func create(parent: Inode, name: String, mode: mode_t, flags: Int32, context: RequestContext) throws(FUSEError) -> (Entry, OpenReply) {
        try requireWritable()
        let path = try childPath(parent: parent, name: name)
        if let member = packageMember(of: path) {
            do {
                try packages.withPackage(member.root) { () throws(FUSEError) in
                    _ = try packages.commit(.createFile(member.member, mode: mode & 0o7777, owner: owner(context)), root: member.root, claim: member.claim)
                }
            } catch where error.errno == EEXIST && flags & O_EXCL == 0 {
                // Created since the kernel looked: open what is there.
            }
            return try openCreated(parent: parent, name: name, path: path, flags: flags, context: context)
        }
        try requireClaimedIfStrict(path, isDirectory: false)
        guard claim(forPath: path, isDirectory: false) != nil else {
            let descriptor = try storeCall {
                try store.openInPlace(path, flags: (flags & (O_ACCMODE | O_TRUNC | O_EXCL)) | O_CREAT, mode: mode & 0o7777, owner: owner(context))
            }
            let entry = try countedEntry(parent: parent, name: name, path: path)
            guard let node = nodes.node(entry.inode) else { throw .noEntry }
            node.state.withLock { $0.openHandles += 1 }
            return (entry, register(OpenFile(node: node, access: .raw(descriptor), flags: flags), keepCache: false))
        }
        do {
            // The document exists from now on, as an empty draft, until its first commit.
            try storeCall { try store.createEmptyFile(path, mode: mode & 0o7777, owner: owner(context)) }
        } catch where error.errno == EEXIST && flags & O_EXCL == 0 {
            // Created by someone else since the kernel looked: open what is there.
        }
        return try openCreated(parent: parent, name: name, path: path, flags: flags, context: context)
    }

    /// The entry and open handle for a file `create` just made (or found made).
    private func openCreated(parent: Inode, name: String, path: String, flags: Int32, context: RequestContext) throws(FUSEError) -> (Entry, OpenReply) {
        let entry = try countedEntry(parent: parent, name: name, path: path)
        do {
            return (entry, try open(inode: entry.inode, flags: flags & ~(O_CREAT | O_EXCL), context: context))
        } catch {
            nodes.forget(entry.inode, count: 1)
            throw error
        }
    }

    func write(inode: Inode, handle: UInt64, bytes: UnsafeRawBufferPointer, offset: Int64, context: RequestContext) throws(FUSEError) -> Int {
        guard let file = files.get(handle) else { throw .badHandle }
        switch file.access {
        case .raw(let descriptor):
            try storeCall { try FileIO.writeAll(descriptor.rawValue, bytes, offset: offset) }
        case .document, .packageMember:
            try modifyStage(of: file.node, path: nil) { stage throws(FUSEError) in
                try storeCall { try FileIO.writeAll(stage.file.descriptor.rawValue, bytes, offset: offset, path: stage.file.path) }
            }
        }
        return bytes.count
    }

    /// The stage of an open document, made on first need from the current content.
    func ensureStage(_ state: inout NodeState) throws(FUSEError) -> Stage {
        if let stage = state.stage { return stage }
        let stage = Stage(file: try storeCall { try store.makeStagingFile(seededFrom: state.live) }, isDirty: false)
        state.stage = stage
        return stage
    }

    /// Changes the node's stage (made on first need) with `body` and marks it for commit. `path`
    /// opens the stored file first when no handle has (a truncate of a path).
    func modifyStage(of node: Node, path: String?, _ body: (Stage) throws(FUSEError) -> Void) throws(FUSEError) {
        try node.state.withLock { (state: inout NodeState) throws(FUSEError) in
            if state.live == nil, let path { state.live = try storeCall { try store.openForReading(path) } }
            try body(try ensureStage(&state))
            state.stage?.isDirty = true
            state.stage?.isOnlyTruncated = false
        }
    }

    func truncate(node: Node, path: String, size: Int64, handle: UInt64?) throws(FUSEError) {
        if let handle, let file = files.get(handle), case .raw(let descriptor) = file.access {
            try storeCall { try retryingOnInterrupt("ftruncate") { ftruncate(descriptor.rawValue, off_t(size)) } }
            return
        }
        let access: OpenFile.Access
        let status = try storeCall { try store.status(of: path) }
        if let member = packageMember(of: path) {
            guard isEditable(member: member, status: status) else { throw .accessDenied }
            access = .packageMember(member)
        } else if let claim = claim(forPath: path, isDirectory: false) {
            guard isEditable(claim: claim, status: status) else { throw .accessDenied }
            access = .document(claim)
        } else {
            try storeCall { try store.truncate(path, size: size) }
            return
        }
        try modifyStage(of: node, path: path) { stage throws(FUSEError) in
            try storeCall { try retryingOnInterrupt("ftruncate") { ftruncate(stage.file.descriptor.rawValue, off_t(size)) } }
        }
        // ftruncate on an open file is staged with that file's writes; truncate(2) on a path is a
        // commit of its own, made as if by a handle opened and closed around it.
        guard handle == nil else { return }
        node.state.withLock { $0.openHandles += 1 }
        defer { closeHandle(of: node, inode: node.inode) }
        try commit(node, access: access, durable: false)
    }

    func flush(inode: Inode, handle: UInt64, context: RequestContext) throws(FUSEError) {
        guard let file = files.get(handle), file.isWritable else { return }
        let deferred = file.node.state.withLock { $0.stage?.isOnlyTruncated ?? false }
        if deferred { return }
        try commit(file, durable: false)
    }

    func fsync(inode: Inode, handle: UInt64, dataOnly: Bool) throws(FUSEError) {
        guard let file = files.get(handle) else { throw .badHandle }
        switch file.access {
        case .raw(let descriptor):
            try storeCall { try retryingOnInterrupt("fsync") { dataOnly ? fdatasync(descriptor.rawValue) : Glibc.fsync(descriptor.rawValue) } }
        case .document, .packageMember:
            try commit(file, durable: true)
        }
    }

    func allocate(inode: Inode, handle: UInt64, mode: Int32, offset: Int64, length: Int64) throws(FUSEError) {
        guard let file = files.get(handle) else { throw .badHandle }
        switch file.access {
        case .raw(let descriptor):
            try storeCall { try retryingOnInterrupt("fallocate") { docfs_fallocate(descriptor.rawValue, mode, off_t(offset), off_t(length)) } }
        case .document, .packageMember:
            try modifyStage(of: file.node, path: nil) { stage throws(FUSEError) in
                try storeCall { try retryingOnInterrupt("fallocate") { docfs_fallocate(stage.file.descriptor.rawValue, mode, off_t(offset), off_t(length)) } }
            }
        }
    }

    func release(inode: Inode, handle: UInt64, flags: Int32) {
        guard let file = files.remove(handle) else { return }
        switch file.access {
        case .raw(let descriptor):
            if file.isWritable, let status = try? descriptor.status() {
                file.node.state.withLock { $0.cachedVersion = status.version }
            }
        case .document, .packageMember:
            if file.isWritable { try? commit(file, durable: false) }
        }
        nodes.closed(inode)
        closeHandle(of: file.node, inode: inode)
    }

    /// Counts a handle closed; the last one drops the node's open state. A stage still dirty then
    /// could not be committed (the store refused it): its bytes are kept in the quarantine.
    func closeHandle(of node: Node, inode: Inode) {
        node.state.withLock { state in
            state.openHandles = max(0, state.openHandles - 1)
            guard state.openHandles == 0 else { return }
            if let stage = state.stage {
                if stage.isDirty, let path = nodes.path(of: inode) {
                    let kept = try? store.quarantine(stage.file, for: path, reason: "could not be stored when the file was closed")
                    logger.error("the last write to \(path) could not be stored; its bytes are kept in \(kept ?? "the staging area")")
                } else {
                    store.discard(stage.file)
                }
            }
            state.stage = nil
            state.live = nil
        }
    }

    /// Commits the open file's node: as a document, or as a change to its package.
    func commit(_ file: OpenFile, durable: Bool) throws(FUSEError) {
        try commit(file.node, access: file.access, durable: durable)
    }

    func commit(_ node: Node, access: OpenFile.Access, durable: Bool) throws(FUSEError) {
        guard let path = nodes.path(of: node.inode) else { return }  // unlinked while open
        switch access {
        case .raw: return
        case .document(let claim):
            try node.state.withLock { (state: inout NodeState) throws(FUSEError) in
                try commit(&state, inode: node.inode, path: path, claim: claim, durable: durable)
            }
        case .packageMember(let member):
            try commitMember(node, path: path, member: member, durable: durable)
        }
    }

    /// Commits a member's stage as a change to its package: the package's lock first, then the
    /// node's, the one order every package change takes.
    func commitMember(_ node: Node, path: String, member: PackageMember, durable: Bool) throws(FUSEError) {
        try packages.withPackage(member.root) { () throws(FUSEError) in
            try node.state.withLock { (state: inout NodeState) throws(FUSEError) in
                guard let stage = state.stage, stage.isDirty else { return }
                if durable { fdatasync(stage.file.descriptor.rawValue) }
                // The change consumes the stage whatever happens: it is stored, or quarantined with
                // the refused package.
                state.stage = nil
                do throws(FUSEError) {
                    let outcome = try packages.commit(.replaceFile(member.member, stage.file), root: member.root, claim: member.claim)
                    switch outcome {
                    case .asApplied:
                        state.live = stage.file.descriptor
                        state.cachedVersion = try? stage.file.status().version
                        notifier.invalidateAttributes(of: node.inode)
                    case .reencoded:
                        state.live = try? store.openForReading(path)
                        state.cachedVersion = nil
                        notifier.invalidateContent(of: node.inode)
                    }
                } catch {
                    state.cachedVersion = nil
                    if FileManager.default.fileExists(atPath: stage.file.path) {
                        // Refused before the change was made (the store failed): keep the bytes.
                        _ = try? store.quarantine(stage.file, for: path, reason: "the package change could not be made: \(error)")
                    }
                    notifier.invalidateContent(of: node.inode)
                    throw error
                }
            }
        }
    }

    /// Validates and persists the stage, if it changed. Called with the node's state locked, so no
    /// write lands in the stage while it is decoded.
    func commit(_ state: inout NodeState, inode: Inode, path: String, claim: DocumentClaim, durable: Bool) throws(FUSEError) {
        guard let stage = state.stage, stage.isDirty else { return }
        let staged = try storeCall { try stage.file.status() }
        let stored = try? store.status(of: path)
        let name = lastComponent(path)
        if durable { fdatasync(stage.file.descriptor.rawValue) }

        if staged.size == 0 && (stored?.size ?? 0) == 0 {
            // Created and closed empty (`touch`, `: > new.json`): a draft, stored as it is.
            try install(stage, &state, inode: inode, path: path)
            return
        }
        let result: FileWrapper
        let stagedBytes: Data
        do {
            let file = try codec.wrapper(for: stage.file.descriptor, name: name)
            stagedBytes = file.regularFileContents ?? Data()
            let document = try codec.decode(file, claim: claim)
            let existing = (stored?.size ?? 0) > 0 ? try? store.fileWrapper(at: path) : nil
            result = try codec.encode(document, claim: claim, existingFile: existing)
        } catch {
            try reject(stage, &state, inode: inode, path: path, reason: "it does not decode as \(claim.type.name) (\(claim.contentType.identifier)): \(describe(error))")
            return
        }
        if DocumentCodec.wrapper(result, holdsExactly: stagedBytes) {
            try install(stage, &state, inode: inode, path: path)
        } else {
            // The type saved something other than the bytes written: store that, and make the
            // kernel forget the bytes it cached from the writes.
            let status = try storeCall { try store.persist(result, at: path) }
            store.discard(stage.file)
            state.stage = nil
            state.live = try storeCall { try store.openForReading(path) }
            state.decodedVersion = status.version
            state.cachedVersion = nil
            notifier.invalidateContent(of: inode)
        }
    }

    private func install(_ stage: Stage, _ state: inout NodeState, inode: Inode, path: String) throws(FUSEError) {
        let status = try storeCall { try store.install(stage.file, at: path) }
        state.stage = nil
        // The staged file is the stored one now; it serves reads until the next write stages anew.
        state.live = stage.file.descriptor
        state.decodedVersion = status.version
        state.cachedVersion = status.version
        notifier.invalidateAttributes(of: inode)
    }

    private func reject(_ stage: Stage, _ state: inout NodeState, inode: Inode, path: String, reason: String) throws(FUSEError) {
        state.stage = nil
        // The kernel's pages hold the refused bytes until the invalidation lands; the next open must
        // not keep them either.
        state.cachedVersion = nil
        let kept = try? store.quarantine(stage.file, for: path, reason: reason)
        logger.error("refused a write to \(path): \(reason). The stored document is unchanged; the refused bytes are in \(kept ?? "(could not be kept)")")
        notifier.invalidateContent(of: inode)
        throw .ioError
    }
}
