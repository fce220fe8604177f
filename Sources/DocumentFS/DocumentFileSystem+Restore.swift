import DocumentModel
import DocumentStore
import FUSE
import Foundation
import SystemSupport

/// Putting a package's earlier version back through the mount, whole and validated, as one commit
/// (issue 36, item 7): a copy by `rsync` skipped members whose size and second matched and left a
/// mix of two versions. `docfs restore PKG --at VERSION` sets `user.docfs.restore` on the package
/// to the version's name; the kernel lets only who may write the package set it, and DocFS only
/// who could read the version. The version is decoded by the package's type, stored in the
/// package's place in one swap (readers see the package before or after, never a mix), and the
/// package it replaces is kept as a version, as every save keeps one.
extension DocumentFileSystem {
    static let restoreAttribute = "user.docfs.restore"

    func restoreVersion(named name: String, ofPackage inode: Inode, context: RequestContext) throws(FUSEError) {
        try requireWritable()
        try packageLayout.reading { () throws(FUSEError) in
            let root = try path(of: inode)
            guard classifier.packageMember(of: root) == nil, let claim = classifier.claim(forPath: root, isDirectory: true) else {
                logger.notice("refused to restore \(root): it is not a package (a document is restored by copying its version over it)")
                throw .invalid
            }
            // A version's own name: no path into one, nor out of the archive.
            guard (try? FileName(name)) != nil, VersionName.savedTime(of: name) != nil else { throw .invalid }
            // Its own version, or one of the packages removed at its path (a removed package is
            // made anew, empty, then restored; the requester's own removals first), which only whom
            // its record lets in may have.
            guard let archive = store.versions else { throw .noEntry }
            let own = archive.version(of: root, named: name)
            let removal = own == nil
                ? archive.removedPaths(of: root, preferring: context.userID).lazy.compactMap { removed in
                    archive.version(of: removed, named: name).map { (removed, $0) }
                }.first
                : nil
            guard let version = own ?? removal?.1, version.isPackage else { throw .noEntry }
            // Judged as the view shows it: without what its folders kept out when it was saved.
            var shown = version.status
            shown.mode &= ~archive.unreachableBits(at: version.location)
            guard mayRead(shown, context) else { throw .accessDenied }
            // A removed one without its record (a failure between the move and the record) is
            // root's alone, as the view shows it.
            if own == nil, context.userID != 0 {
                guard let removed = removal?.0, let readers = archive.readersOfRemovedDocument(removed) else { throw .accessDenied }
                var gate = shown
                gate.userID = readers.userID
                gate.groupID = readers.groupID
                gate.mode = gate.mode & ~0o7777 | readers.permissions
                guard mayRead(gate, context) else { throw .accessDenied }
            }
            let wrapper: FileWrapper
            do {
                wrapper = try store.withVersionContent(at: version.location) {
                    try FileWrapper(url: URL(fileURLWithPath: version.location), options: .immediate)
                }
            } catch {
                throw FUSEError(error)
            }
            try packages.withPackage(root) { () throws(FUSEError) in
                do {
                    try pipeline.check(wrapper, claim: claim)
                } catch {
                    DocumentMetrics.refused(.invalid)
                    logger.error("refused to restore \(root) to its version \(name): it does not decode as \(claim.type.name) now: \(describe(error)); the package is unchanged")
                    throw .ioError
                }
                try storeCall {
                    try pipeline.commit(replacing: [.init(path: root)], saving: [root], by: context.userID, package: root) {
                        _ = try store.persist(wrapper, at: root, durable: true)
                        store.restoreMetadata(fromVersionAt: version.location, to: root)
                    }
                }
                try? PackageMarker.mark(root, in: store)
                packages.forget(root)
            }
            logger.info("restored \(root) to its version \(name)")
            rewatchPackage(root)
            dropCachedPackage(inode, at: root)
        }
    }

    /// Whether the requester may read an item of `status`, as the kernel judges modes (root may).
    private func mayRead(_ status: FileStatus, _ context: RequestContext) -> Bool {
        if context.userID == 0 { return true }
        if context.userID == status.userID { return status.permissions & 0o400 != 0 }
        if context.groupID == status.groupID || ThreadGroup.hasSupplementaryGroup(context.processID, status.groupID) {
            return status.permissions & 0o040 != 0
        }
        return status.permissions & 0o004 != 0
    }

    /// Everything the kernel holds of the package at `root` (its listing, its members' names,
    /// attributes and pages) is another version's now.
    private func dropCachedPackage(_ inode: Inode, at root: String) {
        notifier.invalidateContent(of: inode)
        for (parent, name, child) in nodes.allNames() {
            guard let path = nodes.path(of: child), StorePath.isWithin(path, root) else { continue }
            nodes.existingNode(child)?.state.withLock { state in
                state.decodedVersion = nil
                state.cachedVersion = nil
            }
            notifier.invalidateEntry(parent: parent, name: name)
            notifier.invalidateContent(of: child)
        }
    }
}
