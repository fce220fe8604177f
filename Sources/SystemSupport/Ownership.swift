import Glibc

/// A user and a group: the owner to give a new item (the user who asked for it, when the daemon may
/// set it), or whose rights work done for a request runs with (`Requester`).
public struct Ownership: Sendable, Equatable {
    public var userID: uid_t
    public var groupID: gid_t
    public init(userID: uid_t, groupID: gid_t) {
        self.userID = userID
        self.groupID = groupID
    }
}
