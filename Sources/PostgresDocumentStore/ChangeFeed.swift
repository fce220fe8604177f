import Foundation
import Glibc

/// Brings other mounts' commits to this one: a connection that LISTENs on the store's channel
/// (PostgreSQL's LISTEN/NOTIFY) wakes the feed as soon as a commit lands, and the change log is read
/// at least every second as well, so an engine without notifications, or a notification lost with
/// a dropped connection, delays a change by a second at most. When the database goes away the feed
/// reconnects by itself, once a second, and reads the log from where it stopped.
final class ChangeFeed: Sendable {
    private let store: PostgresStore
    static let pollMilliseconds: Int32 = 1000

    init(store: PostgresStore) {
        self.store = store
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "docfs-change-feed"
        thread.start()
    }

    /// How many polls (about a second each) between prunings of the change log and commit marks.
    static let pollsBetweenPrunings = 3600

    /// How often at most the archive is compared with the database's versions. Under a stream of
    /// another mount's saves (each keeps a version), comparing and fetching at every wake (a read of
    /// every version row, then up to `PostgresStore.versionFetchBudget` of fetching) held up the
    /// content's catch-up: a reader there saw a new version about twice a second.
    static let versionSynchronizationInterval: Duration = .milliseconds(500)

    private func run() {
        var listener: PostgresConnection?
        var outage: String?
        var polls = 0
        var readAt = ContinuousClock.now
        var versionsComparedAt = ContinuousClock.now - Self.versionSynchronizationInterval
        var mustRead = true
        var caughtUp = true
        while true {
            polls += 1
            if polls % Self.pollsBetweenPrunings == 0 { store.pruneChangeLog() }
            do {
                if listener?.isHealthy != true {
                    let connection = try PostgresConnection(parameters: store.pool.parameters)
                    try connection.execute("LISTEN \(store.queries.channel)")
                    listener = connection
                    mustRead = true
                }
                if mustRead {
                    let before = store.state.withLock { $0.currentAt }
                    try store.catchUp()
                    if ContinuousClock.now - versionsComparedAt >= Self.versionSynchronizationInterval {
                        try store.synchronizeVersions()
                        versionsComparedAt = .now
                    }
                    // A catch-up that gave up (the mirror busy with a local change) is tried again
                    // at the next notification, as before.
                    caughtUp = store.state.withLock { $0.currentAt } != before
                    if caughtUp { readAt = .now }
                }
                if let cause = outage {
                    store.logger.notice("the database answers again (it was unreachable: \(cause)); changes made meanwhile are applied")
                    outage = nil
                }
                guard let listener else { continue }
                var descriptor = pollfd(fd: listener.socket, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, Self.pollMilliseconds)
                // Notifications of this mount's own changes only (each names its mount): nothing to
                // apply, and reading the log for each would cost the database two queries a save.
                // The log is still read at least once a second.
                let woken = try listener.notifications()
                mustRead = woken.isEmpty || !caughtUp || woken.contains { $0 != store.queries.origin }
                    || ContinuousClock.now - readAt >= .milliseconds(Int(Self.pollMilliseconds))
            } catch {
                mustRead = true
                if outage == nil {
                    outage = "\(error)"
                    store.logger.error("cannot read other mounts' changes: \(error); retrying every second")
                }
                listener = nil
                store.pool.dropIdle()
                sleep(1)
            }
        }
    }
}
