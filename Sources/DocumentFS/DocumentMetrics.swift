import CoreMetrics
import DocumentStore
import SystemSupport

/// What the bridge counts and times for an operator (`docfs mount --metrics`; the man page's
/// METRICS lists each): saves, refusals by cause, how long judging and committing take, and how
/// many handles and inodes the kernel holds. Each metric is made at first use, after the backend
/// is bootstrapped (one made before stays the no-op one).
public enum DocumentMetrics {
    /// Why a save was refused.
    enum RefusalCause: String, CaseIterable {
        /// Its bytes do not decode as the type its name claims (at close, fsync or a truncation).
        case invalid
        /// The store could not take it (a PostgreSQL store with no primary in time).
        case store
        /// A write failed (ENOSPC, EIO): nothing of the stage is committed.
        case writeFailed = "write_failed"
        /// A rename put bytes that do not decode under a document name.
        case rename
        /// A hard link, or a rename of a linked file, between names judged differently.
        case link
    }

    static let saves = Counter(label: "docfs_saves_total")
    private static let refusals: [RefusalCause: Counter] = Dictionary(
        uniqueKeysWithValues: RefusalCause.allCases.map { ($0, Counter(label: "docfs_refusals_total", dimensions: [("cause", $0.rawValue)])) })
    static let validation = Timer(label: validationName)
    static let commits = Timer(label: commitName)
    private static let openHandles = Gauge(label: "docfs_open_handles")
    private static let inodesHeld = Gauge(label: "docfs_inodes_held")

    /// The histograms' names, for the backend's bucket table.
    public static let validationName = "docfs_validation_seconds"
    public static let commitName = "docfs_commit_seconds"

    static func refused(_ cause: RefusalCause) { refusals[cause]?.increment() }

    /// Runs `body`, recording how long it took in `timer` where metrics are on.
    static func timed<T, E: Error>(_ timer: @autoclosure () -> Timer, _ body: () throws(E) -> T) throws(E) -> T {
        guard let start = MetricsSwitch.start() else { return try body() }
        defer { timer().recordNanoseconds(MetricsSwitch.nanoseconds(since: start)) }
        return try body()
    }

    /// Makes every metric of the bridge's and its store's now, so a scrape shows each from the
    /// start (at 0), not only after its first event.
    public static func register() {
        _ = (saves, refusals, validation, commits, openHandles, inodesHeld)
        StoreMetrics.register()
    }

    /// Sets the gauges that are a count of what the mount holds now (called as metrics are read).
    static func sample(openHandles handles: Int, inodes: Int) {
        openHandles.record(handles)
        inodesHeld.record(inodes)
    }
}
