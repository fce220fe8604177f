import DocumentStore
import FUSE
import Glibc
import SystemSupport

/// Set-user-ID and set-group-ID under writes, as the kernel clears them on a local disk. DocFS
/// handles killing privileges itself (`handleKillPrivileges`): its writes reach the store as root's,
/// which the kernel would never clear for.
extension DocumentFileSystem {
    /// A write or truncate by `writer` (thread `process`, when known) clears set-user-ID, and
    /// set-group-ID where group execute is set or the writer is not in the file's group, unless the
    /// writer holds CAP_FSETID (taken to be root). Done at every change, as on a local disk, so the
    /// writer's own fstat shows it before any commit, and a bit set again meanwhile goes again.
    /// A change whose bits cannot be cleared is refused (as the kernel fails a write then).
    func dropSetIDBits(of node: Node, path: String, writer: Ownership?, process: pid_t?) throws(FUSEError) {
        guard let writer, writer.userID != 0,
              let status = try? store.unnumberedStatus(of: path), status.kind == .regular, status.permissions & (S_ISUID | S_ISGID) != 0
        else { return }
        var permissions = status.permissions & ~S_ISUID
        if status.permissions & S_ISGID != 0 {
            let inGroup = writer.groupID == status.groupID || process.map { ThreadGroup.hasSupplementaryGroup($0, status.groupID) } ?? false
            if status.permissions & S_IXGRP != 0 || !inGroup { permissions &= ~S_ISGID }
        }
        guard permissions != status.permissions else { return }
        try storeCall { try store.setPermissions(path, permissions) }
        node.state.withLock { state in _ = state.stagedFile.map { fchmod($0.descriptor.rawValue, permissions & 0o7777) } }
        notifier.invalidateAttributes(of: node.inode)
    }
}
