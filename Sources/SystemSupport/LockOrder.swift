import CSystemShims
import Glibc
import Synchronization

/// DocFS's lock hierarchy, written in one place: a thread holding a lock may take only locks of a
/// later level. Two locks of one level are never held together, except where the level says they
/// nest by key (a rename holds its moving documents' staging locks, in inode order).
///
/// Every lock of the daemon is an `OrderedMutex` or a `ReadWriteLock` with its level, and debug
/// builds check each acquisition against the locks the thread holds: one out of order stops the
/// daemon with both locks named, and fails the test that got there. A release build checks when
/// started with `DOCFS_CHECK_LOCK_ORDER=1`, as `scripts/test` runs every test and daemon.
public enum LockLevel: UInt32, Sendable, CaseIterable {
    /// A document's writes (`Node.staging`): held while a write lands in the stage and while a
    /// commit or a rename judges it, so it is the outermost lock of every write path.
    case staging = 10
    /// Folder renames against changes inside packages (`DocumentFileSystem.packageLayout`).
    case packageLayout = 20
    /// One package's changes, serialized (`PackageCoordinator`).
    case package = 30
    /// Changes to which stored file a name leads to, whole (`DocumentFileSystem.changes`): renames,
    /// removals and links exclusively, commit installs shared. Held across waits on the store (a
    /// database); no lookup takes it.
    case changes = 35
    /// Which stored file a name leads to, as lookups see it (`DocumentFileSystem.namespace`): the
    /// local step that makes a change visible exclusively, lookups shared. Never across a wait.
    case namespace = 40
    /// One inode's open-file bookkeeping (`Node.state`): short, never across I/O that can wait.
    case nodeState = 50
    /// The inodes the kernel holds (`NodeTable`).
    case nodeTable = 60
    /// A full directory store making room, one writer at a time (`DirectoryStore.makingRoom`).
    case makingRoom = 70
    /// The retention pass (`DirectoryStore.pruning`).
    case pruning = 80
    /// A PostgreSQL store's mirror against synchronizations (`PostgresStore.applying`).
    case mirrorApplying = 90
    /// A PostgreSQL store's knowledge of its mirror (`PostgresStore.state`).
    case mirrorState = 100
    /// A PostgreSQL store's versions in its mirror (`PostgresStore.localVersions`), held around
    /// the changes it makes to the mirror's archive.
    case mirrorVersions = 105
    /// The versions archive's index (`VersionArchive`), built holding it.
    case versionIndex = 110
    /// An item's copied number being replaced (`ItemIdentities.renumbering`), one at a time.
    case renumbering = 115
    /// The numbers items are known by (`ItemIdentities`).
    case identities = 120
    /// Bookkeeping that takes no other lock but an innermost one while held: handle tables, caches,
    /// counters, records of the private area.
    case leaf = 1000
    /// Tables consulted inside any other lock, taking none: the process's confined trees (every
    /// path-based system call asks them), its mapped regions, the log.
    case innermost = 1100

    /// Whether two locks of this level may be held together, taken in increasing key order.
    public var nestsByKey: Bool { self == .staging }
}

/// The check of `LockLevel`'s order (debug builds, or `DOCFS_CHECK_LOCK_ORDER=1`).
public enum LockOrder {
    /// Whether acquisitions are checked: always in a debug build; in a release build when the
    /// process started with `DOCFS_CHECK_LOCK_ORDER=1`, so the build that is shipped is the one
    /// tested, with the check, and costs users one branch a lock.
    public static let isChecked: Bool = {
        #if DEBUG
        return true
        #else
        return getenv("DOCFS_CHECK_LOCK_ORDER").map { String(cString: $0) == "1" } ?? false
        #endif
    }()

    /// Who hears of a violation instead of the default (a message on standard error, then a crash):
    /// the daemon's log, or a test.
    private static let reporter = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// Replaces what a violation does (see `reporter`); nil restores the default.
    public static func report(to reporter: (@Sendable (String) -> Void)?) {
        self.reporter.withLock { $0 = reporter }
    }

    /// `site` and `line`: where the lock is taken (`#fileID`, `#line`), named in a violation's message.
    /// Inlined where a lock is taken: unchecked, it costs the one branch.
    @inlinable
    static func acquiring(_ level: LockLevel, key: UInt64, site: StaticString, line: UInt) {
        guard isChecked else { return }
        check(acquiring: level, key: key, site: site, line: line)
    }

    @usableFromInline
    static func check(acquiring level: LockLevel, key: UInt64, site: StaticString, line: UInt) {
        var held = Held()
        let site = UnsafeRawPointer(site.utf8Start).assumingMemoryBound(to: CChar.self)
        if docfs_lock_order_acquire(level.rawValue, key, level.nestsByKey ? 1 : 0, site, UInt32(line), &held.level, &held.key, &held.site, &held.line) != 0 {
            violated(taking: level, key: key, at: "\(String(cString: site)):\(line)", holding: held)
        }
    }

    private struct Held {
        var level: UInt32 = 0
        var key: UInt64 = 0
        var site: UnsafePointer<CChar>?
        var line: UInt32 = 0
    }

    @inlinable
    static func released(_ level: LockLevel, key: UInt64) {
        guard isChecked else { return }
        check(releasing: level, key: key)
    }

    @usableFromInline
    static func check(releasing level: LockLevel, key: UInt64) {
        docfs_lock_order_release(level.rawValue, key)
    }

    /// How many ordered locks the calling thread holds.
    public static var heldCount: Int { Int(docfs_lock_order_held_count()) }

    private static func violated(taking level: LockLevel, key: UInt64, at site: String, holding held: Held) {
        let heldLevel = LockLevel(rawValue: held.level).map { "\($0)" } ?? "level \(held.level)"
        let heldSite = held.site.map { "\(String(cString: $0)):\(held.line)" } ?? "?"
        let message = "lock order violated: taking \(level) (key \(key)) at \(site) while holding \(heldLevel) (key \(held.key)) taken at \(heldSite); the order is LockLevel's, in SystemSupport/LockOrder.swift"
        // Reporting logs, and the log's lock is ordered too: not judged meanwhile.
        docfs_lock_order_suspend(1)
        defer { docfs_lock_order_suspend(0) }
        if let reporter = reporter.withLock({ $0 }) {
            reporter(message)
            return
        }
        fatalError(message)
    }
}

/// A `Mutex` at a level of the lock hierarchy (see `LockLevel`).
public struct OrderedMutex<Value>: ~Copyable, Sendable {
    // Usable from inlinable code: `withLock` is specialized where it is called (generic and
    // unspecialized, every call looked up `Mutex<Value>`'s metadata at run time).
    @usableFromInline let mutex: Mutex<Value>
    @usableFromInline let level: LockLevel
    @usableFromInline let key: UInt64

    /// `key` orders locks of a level that nests (see `LockLevel.nestsByKey`).
    public init(_ level: LockLevel, key: UInt64 = 0, _ initial: sending Value) {
        mutex = Mutex(initial)
        self.level = level
        self.key = key
    }

    @inlinable
    public borrowing func withLock<Result, E: Error>(
        site: StaticString = #fileID, line: UInt = #line, _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        LockOrder.acquiring(level, key: key, site: site, line: line)
        defer { LockOrder.released(level, key: key) }
        return try mutex.withLock(body)
    }
}
