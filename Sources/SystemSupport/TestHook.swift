import Foundation
import Glibc

/// Points where a test can hold one request, to make a race happen in the order it is about
/// instead of hoping for it. Off unless the daemon was started with `DOCFS_TEST_HOOKS=DIR`; then
/// a test arms a point by creating `DIR/POINT`, the first request to reach it renames that file to
/// `DIR/POINT.reached` (which the test waits for) and stays there until the test removes it.
public enum TestHook: String, Sendable {
    /// An open has found the document's committed file and not yet made it the node's live one.
    case openBeforeInstall = "open-before-install"
    /// An open has fetched what it reads (a database store's download) and not yet looked up the
    /// file under the lock of names.
    case openAfterFetch = "open-after-fetch"
    /// A writer's first write has fetched the committed file its stage is seeded with (a database
    /// store's download), and not yet opened it under the lock of names.
    case seedAfterFetch = "seed-after-fetch"
    /// An open of a document has counted its handle and not yet chosen whether it reads through
    /// the kernel's page cache.
    case openBeforeCaching = "open-before-caching"
    /// A READ has found the file it reads from and is not answered yet.
    case readBeforeReply = "read-before-reply"
    /// A PostgreSQL store's change has run its statements and not yet sent COMMIT.
    case commitBeforeSend = "commit-before-send"
    /// A PostgreSQL store's change sends COMMIT and then drops the connection unanswered (a trip,
    /// not a pause: see `trips`).
    case commitAnswerLost = "commit-answer-lost"
    /// A PostgreSQL store is about to download content its mirror lacks.
    case fetchBeforeDownload = "fetch-before-download"
    /// A commit has judged its stage, holding nothing a rename needs, and not installed it yet.
    case commitAfterJudge = "commit-after-judge"
    /// The last writable handle of a file is released and its stage not yet settled.
    case releaseBeforeSettle = "release-before-settle"
    /// A change to a package has made its clone, changed it and judged it, and not committed it.
    case packageCloneJudged = "package-clone-judged"
    /// A rename or removal inside a package is made and its request not answered yet.
    case packageChangeMade = "package-change-made"
    /// The mount is gone from the kernel and the daemon has not yet let go of its store.
    case unmountedBeforeExit = "unmounted-before-exit"

    private static let directory = ProcessInfo.processInfo.environment["DOCFS_TEST_HOOKS"]

    /// Holds the calling request here while the test keeps the point armed.
    public func pause() {
        guard let directory = Self.directory else { return }
        let armed = directory + "/" + rawValue
        let reached = armed + ".reached"
        guard rename(armed, reached) == 0 else { return }
        var status = stat()
        while stat(reached, &status) == 0 { usleep(1000) }
    }

    /// Whether the test armed this point and no request reached it yet (a look that changes
    /// nothing).
    public var isArmed: Bool {
        guard let directory = Self.directory else { return false }
        return access(directory + "/" + rawValue, F_OK) == 0
    }

    /// Whether the test armed this point; the first request to reach it disarms it (renaming it to
    /// `POINT.reached`) and goes on to fail as the point describes.
    public func trips() -> Bool {
        guard let directory = Self.directory else { return false }
        let armed = directory + "/" + rawValue
        return rename(armed, armed + ".reached") == 0
    }
}
