import Foundation
import Glibc
import SystemSupport

/// Points where a test can hold one request, to make a race happen in the order it is about
/// instead of hoping for it. Off unless the daemon was started with `DOCFS_TEST_HOOKS=DIR`; then
/// a test arms a point by creating `DIR/POINT`, the first request to reach it renames that file to
/// `DIR/POINT.reached` (which the test waits for) and stays there until the test removes it.
enum TestHook: String {
    /// An open has found the document's committed file and not yet made it the node's live one.
    case openBeforeInstall = "open-before-install"
    /// A READ has found the file it reads from and is not answered yet.
    case readBeforeReply = "read-before-reply"

    private static let directory = ProcessInfo.processInfo.environment["DOCFS_TEST_HOOKS"]

    /// Holds the calling request here while the test keeps the point armed.
    func pause() {
        guard let directory = Self.directory else { return }
        let armed = directory + "/" + rawValue
        let reached = armed + ".reached"
        guard rename(armed, reached) == 0 else { return }
        var status = stat()
        while stat(reached, &status) == 0 { usleep(1000) }
    }
}
