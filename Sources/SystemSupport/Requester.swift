import CSystemShims
import Glibc

/// Whose rights work done for a request runs with: the user and group of the process that sent
/// the request the calling thread serves, or of the writer whose stage a commit judges. The FUSE
/// layer sets it as each request starts; a validator started on this thread runs as that user
/// (`CommandValidator`). Nothing sets it for `docfs check` or a library user: their validators run
/// as themselves.
public enum Requester {
    /// The calling thread's requester, if one is set.
    public static var current: Ownership? {
        var userID: uid_t = 0
        var groupID: gid_t = 0
        guard docfs_requester(&userID, &groupID) != 0 else { return nil }
        return Ownership(userID: userID, groupID: groupID)
    }

    /// Sets (or, with nil, clears) the calling thread's requester.
    public static func set(_ credentials: Ownership?) {
        docfs_set_requester(credentials == nil ? 0 : 1, credentials?.userID ?? 0, credentials?.groupID ?? 0)
    }
}
