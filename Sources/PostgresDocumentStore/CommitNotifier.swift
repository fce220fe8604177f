import Dispatch
import Logging
import SystemSupport

/// Wakes the other mounts' change feeds after this mount's commits: a NOTIFY sent from a
/// connection of its own once a change has committed, not one inside the change's transaction.
///
/// PostgreSQL commits every transaction that notified under one cluster-wide lock, held across its
/// commit's WAL flush, so that notifications queue in commit order. With a NOTIFY in every change,
/// concurrent saves (four writers, or four mounts) each waited for the others' flushes in turn and
/// never shared one; without, their commits are flushed together. Sent after the commit, a
/// notification is also never read before the change it announces is visible.
///
/// A notification goes at once after a quiet spell; within `gathering` of the last one it waits
/// for the rest of that spell, gathering the commits made meanwhile: under a stream of saves each
/// feed wakes (and reads the change log) a few hundred times a second at most, not at every commit,
/// and the notifying transactions stay few. One lost (the connection dropped, the server stopped)
/// costs time, nothing else: each feed reads the change log at least once a second.
final class CommitNotifier: Sendable {
    struct Notification: Hashable, Sendable {
        let channel: String
        let payload: String
    }

    private let parameters: String
    private let logger: Logger
    static let gathering: Duration = .milliseconds(5)

    private struct Pending {
        var notifications: Set<Notification> = []
        var sendQueued = false
        var lastSent = ContinuousClock.now - CommitNotifier.gathering
    }

    private let pending = OrderedMutex<Pending>(.leaf, Pending())
    /// The sending connection, and whether the last send failed. Only the queue uses them; the
    /// lock keeps the compiler's checks, it is never contended.
    private struct Sender {
        var connection: PostgresConnection?
        var failing = false
    }

    private let sender = OrderedMutex<Sender>(.leaf, Sender())
    private let queue = DispatchQueue(label: "docfs.commit-notifier")

    init(parameters: String, logger: Logger) {
        self.parameters = parameters
        self.logger = logger
    }

    /// Queues `notifications` of a transaction that committed. Never waits for the database.
    func post(_ notifications: Set<Notification>) {
        guard !notifications.isEmpty else { return }
        let delay = pending.withLock { pending -> Duration? in
            pending.notifications.formUnion(notifications)
            // A send already queued has not taken the batch yet: it takes these too.
            guard !pending.sendQueued else { return nil }
            pending.sendQueued = true
            return max(.zero, pending.lastSent + Self.gathering - .now)
        }
        guard let delay else { return }
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay.nanoseconds))) { [self] in send() }
    }

    private func send() {
        let batch = pending.withLock { pending in
            defer {
                pending.notifications.removeAll()
                pending.sendQueued = false
                pending.lastSent = .now
            }
            return Array(pending.notifications)
        }
        guard !batch.isEmpty else { return }
        // One statement of the batch's shape: prepared once per shape (a mount has two payloads:
        // its origin, and "versions").
        let calls = batch.indices.map { "pg_notify($\(2 * $0 + 1), $\(2 * $0 + 2))" }
        let sql = "SELECT " + calls.joined(separator: ", ")
        let values: [PostgresValue] = batch.flatMap { [.text($0.channel), .text($0.payload)] }
        sender.withLock { sender in
            // A connection the server dropped since the last send (a restart, a failover) fails at
            // once: one more try, on a new one.
            for attempt in 0..<2 {
                let reused = sender.connection != nil
                do {
                    let db = try sender.connection ?? Self.connect(parameters: parameters)
                    sender.connection = db
                    try db.execute(sql, values, prepared: true)
                    if sender.failing { logger.notice("other mounts are woken after this mount's commits again") }
                    sender.failing = false
                    return
                } catch {
                    let connectionFailed = (error as? PostgresError)?.isConnectionFailure ?? true
                    if connectionFailed { sender.connection = nil }
                    if connectionFailed && reused && attempt == 0 { continue }
                    // Said once until a send goes through: a database that stays away says so
                    // through every change, a lock held elsewhere only delays the wake-up.
                    if !sender.failing {
                        logger.warning("could not wake the other mounts after a commit (\(error)); they read the change within a second")
                    }
                    sender.failing = true
                    return
                }
            }
        }
    }

    /// A connection whose commits do not wait for the WAL: a notification is delivered at its
    /// commit either way, and one lost with a crash is read from the change log within a second.
    private static func connect(parameters: String) throws -> PostgresConnection {
        let db = try PostgresConnection(parameters: parameters)
        try db.executeScript("SET synchronous_commit = off")
        return db
    }
}
