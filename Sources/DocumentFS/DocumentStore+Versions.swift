import DocumentStore
import Glibc
import Logging
import SystemSupport

extension DocumentStore {
    /// Keeps the document now at `path` among its versions before a change replaces or removes it.
    /// A version that cannot be kept (a full disk) is logged and the change goes on: the save is
    /// what the user asked for.
    func keepVersion(of path: String, copying: Bool = false, logger: Logger) {
        do {
            try keepVersion(of: path, copying: copying)
        } catch {
            logger.warning("could not keep the version of \(path) that this change replaces: \(error)")
        }
    }

    /// Marks the item now at `path` as saved by the requester of the calling thread (the daemon's
    /// own user where no request is being served).
    func recordSaveByRequester(of path: String) {
        recordSave(of: path, by: Requester.current?.userID ?? geteuid())
    }
}
