import DocumentStore
import FUSE
import Glibc
import SystemSupport

/// The read path: opening decodes the stored document once per stored version; reads are
/// spliced from the stored file (or from the stage while a write is open), never copied through
/// Swift.
extension DocumentFileSystem {
    func open(inode: Inode, flags: Int32, context: RequestContext) throws(FUSEError) -> OpenReply {
        let path = try path(of: inode)
        guard let node = nodes.node(inode) else { throw .noEntry }
        let status = try storeCall { try store.status(of: path) }
        guard status.kind == .regular else { throw .isDirectory }
        let writing = flags & O_ACCMODE != O_RDONLY
        if writing { try requireWritable() }

        if let member = packageMember(of: path) {
            if writing && !isEditable(member: member, status: status) { throw .accessDenied }
            // A member is read only from a package that decodes (or from a draft, served as it is).
            if flags & O_ACCMODE != O_WRONLY, case .corrupt(let reason) = packages.state(of: member.root, claim: member.claim) {
                logger.error("cannot open \(path): its package \(member.root) does not decode as \(member.claim.type.name): \(reason)")
                throw .ioError
            }
            let keepCache = try openStaged(node, path: path, status: status, flags: flags)
            return register(OpenFile(node: node, access: .packageMember(member), flags: flags), keepCache: keepCache)
        }

        guard let claim = claim(forPath: path, isDirectory: false) else {
            // Raw data: opened in place. O_APPEND is the kernel's to apply (it sends the offset),
            // and O_TRUNC arrives here because the mount negotiated atomic O_TRUNC.
            let descriptor = try storeCall {
                try store.openInPlace(path, flags: flags & (O_ACCMODE | O_TRUNC), mode: 0, owner: nil)
            }
            let keepCache = node.state.withLock { state in
                state.openHandles += 1
                defer { state.cachedVersion = flags & O_TRUNC == 0 ? status.version : nil }
                return flags & O_TRUNC == 0 && state.cachedVersion == status.version
            }
            return register(OpenFile(node: node, access: .raw(descriptor), flags: flags), keepCache: keepCache)
        }

        if writing && !isEditable(claim: claim, status: status) {
            logger.notice("refused to open \(path) for writing: the document is not editable")
            throw .accessDenied
        }
        let decodes = flags & O_ACCMODE != O_WRONLY && flags & O_TRUNC == 0
        let keepCache = try openStaged(node, path: path, status: status, flags: flags) { (state: inout NodeState, live: OwnedDescriptor) throws(FUSEError) in
            // A truncating open replaces the content, so what is stored need not decode (that is how
            // a corrupt document is repaired); a pending stage was validated at its own commit.
            guard decodes, state.stage == nil else { return }
            try ensureDecoded(live, version: try storeCall { try live.status().version }, state: &state, path: path, claim: claim)
        }
        return register(OpenFile(node: node, access: .document(claim), flags: flags), keepCache: keepCache)
    }

    /// Opens the stored file for a document or package member: the live descriptor (reopened when
    /// the store changed behind the mount's back) and, for O_TRUNC, an empty stage; `check` may
    /// refuse the open before it counts. Returns whether the kernel may keep its cached pages.
    private func openStaged(
        _ node: Node, path: String, status: FileStatus, flags: Int32,
        check: (inout NodeState, OwnedDescriptor) throws(FUSEError) -> Void = { _, _ throws(FUSEError) in }
    ) throws(FUSEError) -> Bool {
        let truncating = flags & O_ACCMODE != O_RDONLY && flags & O_TRUNC != 0
        return try node.state.withLock { (state: inout NodeState) throws(FUSEError) -> Bool in
            var live = state.live
            if state.stage == nil, live.flatMap({ try? $0.status().version }) != status.version {
                live = try storeCall { try store.openForReading(path) }
            }
            guard let live else { throw .ioError }
            let liveVersion = try storeCall { try live.status().version }
            try check(&state, live)
            state.live = live
            state.openHandles += 1
            if truncating {
                if let old = state.stage { store.discard(old.file) }
                state.stage = nil
                if let staging = try? store.makeStagingFile(seededFrom: nil) {
                    state.stage = Stage(file: staging, isDirty: true, isOnlyTruncated: true)
                } else {
                    state.openHandles -= 1
                    throw .ioError
                }
            }
            defer { state.cachedVersion = liveVersion }
            return state.stage == nil && state.cachedVersion == liveVersion
        }
    }

    func register(_ file: OpenFile, keepCache: Bool) -> OpenReply {
        nodes.opened(file.node.inode)
        return OpenReply(handle: files.insert(file), keepCache: keepCache)
    }

    /// Decodes the stored version unless it already decoded; an empty file is a draft and is
    /// served as it is.
    func ensureDecoded(_ live: OwnedDescriptor, version: FileVersion, state: inout NodeState, path: String, claim: DocumentClaim) throws(FUSEError) {
        guard version.size > 0, state.decodedVersion != version else { return }
        do {
            _ = try codec.decode(codec.wrapper(for: live, name: lastComponent(path)), claim: claim)
            state.decodedVersion = version
        } catch {
            logger.error("cannot open \(path): it does not decode as \(claim.type.name) (\(claim.contentType.identifier)): \(describe(error))")
            throw .ioError
        }
    }

    func read(inode: Inode, handle: UInt64, offset: Int64, size: Int) throws(FUSEError) -> ReadReply {
        guard let file = files.get(handle) else { throw .badHandle }
        let source: OwnedDescriptor?
        switch file.access {
        case .raw(let descriptor): source = descriptor
        case .document, .packageMember: source = file.node.state.withLock { $0.stage?.file.descriptor ?? $0.live }
        }
        guard let source else { throw .badHandle }
        return .fileRegion(descriptor: source.rawValue, offset: offset, size: size, owner: source)
    }
}
