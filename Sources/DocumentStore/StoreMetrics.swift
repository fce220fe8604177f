import CoreMetrics

/// What a store counts for an operator (see `DocumentMetrics` in DocumentFS, and the man page's
/// METRICS): the bytes it quarantines, and the versions it keeps, fails to keep and drops, with
/// the space versions take as of the last retention pass. Made at first use, after the backend is
/// bootstrapped.
public enum StoreMetrics {
    static let quarantinedBytes = Counter(label: "docfs_quarantined_bytes_total")
    static let quarantinedItems = Counter(label: "docfs_quarantined_total")
    public static let versionsKept = Counter(label: "docfs_versions_kept_total")
    public static let versionsNotKept = Counter(label: "docfs_versions_not_kept_total")
    private static let versionsDropped: [DropCause: Counter] = Dictionary(
        uniqueKeysWithValues: DropCause.allCases.map { ($0, Counter(label: "docfs_versions_dropped_total", dimensions: [("cause", $0.rawValue)])) })
    /// The space versions take: measured by each retention pass, and grown by what each version
    /// kept in between takes on disk.
    public static let versionBytes = Meter(label: "docfs_version_bytes")

    /// Why versions left the archive.
    public enum DropCause: String, CaseIterable, Sendable {
        /// The retention schedule or the space cap no longer keeps them.
        case retention
        /// Removed through the versions view (or `NSFileVersion`).
        case removed
        /// Dropped to make room for a write on a full store.
        case space
    }

    public static func dropped(_ count: Int, _ cause: DropCause) {
        if count > 0 { versionsDropped[cause]?.increment(by: count) }
    }

    /// A retention pass measured `versions` (each document's) and dropped `count` of them, which
    /// held `bytes`: the space versions take is what it measured, less that.
    public static func retained(_ versions: [[DocumentVersion]], droppedCount count: Int, droppedBytes bytes: Int64) {
        dropped(count, .retention)
        versionBytes.set(versions.joined().reduce(0) { $0 + $1.exclusiveBytes } - bytes)
    }

    /// Makes every metric of the store's now, so a scrape shows each from the start (at 0).
    public static func register() {
        _ = (quarantinedBytes, quarantinedItems, versionsKept, versionsNotKept, versionsDropped, versionBytes)
    }
}
