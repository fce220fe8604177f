import CoreMetrics

/// What a PostgreSQL store counts for an operator (see the man page's METRICS): outages (a change
/// that found no primary), the pauses changes made waiting for one, the failovers seen (a primary
/// taking writes again after an outage) and how long each outage lasted. The change feed's lag is
/// a gauge sampled as metrics are read (`PostgresStore.changeFeedLag`).
public enum PostgresMetrics {
    static let outages = Counter(label: "docfs_database_outages_total")
    static let waits = Counter(label: "docfs_database_waits_total")
    static let failovers = Counter(label: "docfs_database_failovers_total")
    static let outageLength = Timer(label: outageName)

    /// The histogram's name, for the backend's bucket table.
    static let outageName = "docfs_database_outage_seconds"

    /// Makes every metric of the store's now, so a scrape shows each from the start (at 0).
    public static func register() { _ = (outages, waits, failovers, outageLength) }
}
