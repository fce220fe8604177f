import DocumentStore
import Foundation
import Glibc
import Synchronization
import SystemSupport

/// How a local change reaches the database: every answer true, and an outage a bounded wait.
///
/// - Each change is one transaction marked with a random key: when it begins it takes an advisory
///   lock on the key and inserts the key into `docfs_commits`. When COMMIT goes
///   unanswered (the connection dropped, the server stopped answering), whether it committed is
///   found out on a new connection before the program is answered: the lock is taken there, which
///   waits until the first transaction has ended, and the key's row says how it ended. On a new
///   primary after a failover the lock is free at once, and a transaction the old primary had not
///   replicated is not there and never will be.
/// - While no server accepts the change (none reachable, a standby promoted, a lock or a statement
///   timed out), the change is tried again, with pauses growing to half a second, until
///   `primaryWait` (counted from the first failure) runs out; only then does it fail. The log says
///   so once per outage. No lock a lookup needs is held meanwhile: a rename or a removal shows in
///   the mirror only once committed (see `publishingAfterCommit`).
extension PostgresStore {
    /// Runs a local change: `body` in one transaction, shared with other local changes, exclusive
    /// of applying other mounts' changes. `then` runs after the commit, under the same shared lock:
    /// the mirror's part of a change that must not show before the database holds it.
    ///
    /// `retryable` says, when the transaction failed, whether `body` may run again: true while it
    /// has changed nothing outside the transaction (or undid it). A change not retried after a
    /// failure may leave the mirror showing what the database does not hold: the mirror is then
    /// compared whole with the database once it answers. `undo` takes back the mirror's part of
    /// `body` when its COMMIT was refused, or went unanswered and turned out not committed.
    /// `refused` turns a refusal of the database that is the change's own answer (a unique
    /// violation sent with the COMMIT: EEXIST) into that answer.
    @discardableResult
    func change<T>(
        _ path: String, retryable: @autoclosure () -> Bool = true, _ body: (PostgresConnection) throws -> T,
        undo: (T) -> Void = { _ in }, refused: (PostgresError) -> (any Error)? = { _ in nil }, then apply: (T) throws -> Void = { _ in }
    ) throws -> T {
        var wait = PrimaryWait(limit: primaryWait)
        while true {
            let key = Int64.random(in: 1...Int64.max)
            let attempt: ChangeAttempt<T>
            do {
                // An unanswered COMMIT is resolved under the lock too: applying other mounts'
                // changes meanwhile would undo what the body did to the mirror.
                attempt = try applying.reading { () throws -> ChangeAttempt<T> in
                    switch try pool.markedTransaction(key: key, body) {
                    case .committed(let value):
                        try applyCommitted(path, value, apply)
                        return .done(value)
                    case .refused(let value, let cause):
                        undo(value)
                        throw TransactionFailure.rolledBack(cause)
                    case .unanswered(let value, let cause, let notifications):
                        logger.warning("\(path): the answer to COMMIT was lost (\(cause)); finding out whether it committed before answering")
                        switch resolveCommit(key, path: path) {
                        case true?:
                            logger.notice("\(path): the change had committed")
                            pool.notifier.post(notifications)
                            try applyCommitted(path, value, apply)
                            return .done(value)
                        case false?:
                            logger.notice("\(path): the change had not committed, and never will")
                            undo(value)
                            return .notCommitted(cause)
                        case nil:
                            state.withLock { $0.needsFullSynchronization = true }
                            logger.error("\(path): whether the change committed could not be found out within \(primaryWait); the program is told it failed")
                            throw PostgresStoreError.unavailable("whether the change to \(path) committed is not known: \(cause)")
                        }
                    }
                }
            } catch TransactionFailure.notBegun(let cause) {
                // The body may have run up to its first answered statement (BEGIN goes with it):
                // one that changed the mirror by then is not run again.
                guard retryable() else {
                    state.withLock { $0.needsFullSynchronization = true }
                    logger.error("\(path): the database could not begin the change: \(cause)")
                    throw unavailable(cause)
                }
                // A refusal that does not pass (no such role, a full disk) is not waited out.
                guard cause.isTransient else { throw unavailable(cause) }
                try wait.pause(path, after: cause, self)
                continue
            } catch TransactionFailure.rolledBack(let error) {
                // The body's own refusal (EEXIST, a conflict) is the answer.
                guard let cause = error as? PostgresError else { throw error }
                if let answer = refused(cause) { throw answer }
                if cause.isTransient, retryable() {
                    try wait.pause(path, after: cause, self)
                    continue
                }
                state.withLock { $0.needsFullSynchronization = true }
                logger.error("\(path): the database refused or could not take the change: \(cause)")
                throw unavailable(cause)
            }
            switch attempt {
            case .done(let value):
                endOutage()
                return value
            case .notCommitted(let cause):
                if retryable() {
                    try wait.pause(path, after: cause, self)
                    continue
                }
                state.withLock { $0.needsFullSynchronization = true }
                throw unavailable(cause)
            }
        }
    }

    private func applyCommitted<T>(_ path: String, _ value: T, _ apply: (T) throws -> Void) throws {
        // Counted either way: a comparison read before the commit must not apply.
        defer { state.withLock { $0.localChanges += 1 } }
        do {
            try apply(value)
        } catch {
            state.withLock { $0.needsFullSynchronization = true }
            logger.error("\(path): committed to the database, but the local mirror could not follow (\(error)); it is compared with the database again")
            throw error
        }
    }

    /// Whether the transaction marked `key` committed: nil when no primary answered in time.
    private func resolveCommit(_ key: Int64, path: String) -> Bool? {
        var wait = PrimaryWait(limit: primaryWait)
        while true {
            do {
                return try pool.withConnection { db in
                    try db.transaction { db in
                        // A standby may not have received the commit yet: only a primary's answer counts.
                        guard try db.execute("SELECT pg_is_in_recovery()").integer(0, 0) == 0 else {
                            throw PostgresError(message: "the server is a standby", sqlState: "25006")
                        }
                        // Held by the marked transaction until it ends: once taken here, it has ended,
                        // or it never ran its mark. That happens now that a change whose statements
                        // are all held sends its mark with its COMMIT: bytes already sent on a
                        // connection given up may still reach the server. So the key is claimed
                        // here when absent, and a mark arriving later fails on it and commits
                        // nothing. A mark running meanwhile makes this wait for its transaction,
                        // whose row then answers.
                        let claimed = try db.execute(
                            "INSERT INTO docfs_commits (id) VALUES ($1) ON CONFLICT (id) DO NOTHING RETURNING id", [.integer(key)])
                        try db.execute("SELECT pg_advisory_xact_lock($1)", [.integer(key)])
                        return claimed.count == 0
                    }
                }
            } catch {
                let cause = error as? PostgresError ?? PostgresError(message: "\(error)", sqlState: nil)
                if cause.sqlState == "55P03" {
                    // Still held after lock_timeout: its session lives on without its client (a
                    // network that went silent). Ended here, it rolls back unless already committing.
                    _ = try? pool.withConnection { db in
                        try db.execute(
                            """
                            SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted
                            AND objsubid = 1 AND classid::bigint = $1 AND objid::bigint = $2
                            """,
                            [.integer(key >> 32 & 0xFFFF_FFFF), .integer(key & 0xFFFF_FFFF)])
                    }
                }
                guard (try? wait.pause(path, after: cause, self)) != nil else { return nil }
            }
        }
    }

    /// Reads from the database, waiting out an outage as a change does (up to `primaryWait`).
    func database<T>(_ path: String, _ body: (PostgresConnection) throws -> T) throws -> T {
        var wait = PrimaryWait(limit: primaryWait)
        while true {
            do {
                return try pool.withConnection(body)
            } catch let error as PostgresError where error.isTransient {
                do {
                    try wait.pause(path, after: error, self)
                } catch {
                    logger.error("\(path): cannot read from the database: \(error)")
                    throw error
                }
            }
        }
    }

    func unavailable(_ error: PostgresError) -> PostgresStoreError {
        if error.isConnectionFailure { pool.dropIdle() }
        return .unavailable(error.description)
    }

    /// In an outage (a change found no primary and waits), waits until a primary answers, up to
    /// `primaryWait`; at once otherwise.
    public func awaitWritable() {
        var wait = PrimaryWait(limit: primaryWait)
        while outageStart.withLock({ $0 != nil }) {
            do {
                let primary = try pool.withConnection { try $0.execute("SELECT pg_is_in_recovery()").integer(0, 0) == 0 }
                if primary {
                    endOutage()
                    return
                }
                try wait.pause("(waiting to change)", after: PostgresError(message: "the server is a standby", sqlState: "25006"), self)
            } catch let error as PostgresError {
                guard (try? wait.pause("(waiting to change)", after: error, self)) != nil else { return }
            } catch {
                return
            }
        }
    }

    /// Logs the start of an outage, once.
    fileprivate func noteOutage(_ cause: PostgresError) {
        let first = outageStart.withLock { start in
            if start != nil { return false }
            start = .now
            return true
        }
        if first {
            PostgresMetrics.outages.increment()
            logger.warning("waiting for a primary that accepts writes (\(cause)); changes wait up to \(primaryWait) and are tried again")
        }
    }

    private func endOutage() {
        guard let start = outageStart.withLock({ start in defer { start = nil }; return start }) else { return }
        PostgresMetrics.failovers.increment()
        let length = ContinuousClock.now - start
        PostgresMetrics.outageLength.recordNanoseconds(length.nanoseconds)
        logger.notice("a primary accepts writes again, after \(length)")
    }
}

/// A transaction run by `ConnectionPool.markedTransaction` that reached COMMIT.
enum MarkedCommit<T> {
    case committed(T)
    /// The server answered COMMIT with an error (a serialization failure): rolled back.
    case refused(T, PostgresError)
    /// COMMIT was sent and no answer came: it may or may not have committed. The notifications
    /// are to be sent if it did.
    case unanswered(T, PostgresError, Set<CommitNotifier.Notification>)
}

/// How one try of `PostgresStore.change` ended, when it did not throw.
private enum ChangeAttempt<T> {
    case done(T)
    /// An unanswered COMMIT turned out not committed; the mirror's part was undone.
    case notCommitted(PostgresError)
}

/// A transaction run by `ConnectionPool.markedTransaction` that did not reach COMMIT, or whose
/// COMMIT the server refused: in every case nothing of it is committed.
enum TransactionFailure: Error {
    /// The connection could not be made, or the transaction could not begin: nothing ran.
    case notBegun(PostgresError)
    /// The body or the commit failed and the transaction rolled back (the server said so, or the
    /// connection was lost before COMMIT was sent).
    case rolledBack(any Error)
}

/// The bounded wait of one change for a database that takes it, counted from its first failure
/// (a save that took long to upload gets the whole wait too).
struct PrimaryWait {
    let limit: Duration
    private var deadline: ContinuousClock.Instant?
    private var pauseLength: Duration = .milliseconds(50)

    init(limit: Duration) {
        self.limit = limit
    }

    /// Pauses before the next try, or throws when the limit has run out.
    mutating func pause(_ path: String, after cause: PostgresError, _ store: PostgresStore) throws {
        let deadline = self.deadline ?? .now + limit
        self.deadline = deadline
        guard ContinuousClock.now + pauseLength < deadline else {
            store.logger.error("\(path): no primary took the change within \(limit): \(cause)")
            throw store.unavailable(cause)
        }
        store.noteOutage(cause)
        PostgresMetrics.waits.increment()
        store.pool.dropIdle()
        Thread.sleep(forTimeInterval: Double(pauseLength.components.attoseconds) / 1e18 + Double(pauseLength.components.seconds))
        pauseLength = min(pauseLength * 2, .milliseconds(500))
    }
}

extension ConnectionPool {
    /// Runs `body` in a transaction marked with `key` (see `PostgresStore.change`).
    func markedTransaction<T>(key: Int64, _ body: (PostgresConnection) throws -> T) throws -> MarkedCommit<T> {
        do {
            return try markedTransactionOnce(key: key, body)
        } catch let error as PostgresError {
            // Everything inside is wrapped: a bare error is the connection not being made.
            throw TransactionFailure.notBegun(error)
        }
    }

    private func markedTransactionOnce<T>(key: Int64, _ body: (PostgresConnection) throws -> T) throws -> MarkedCommit<T> {
        try withConnection { db -> MarkedCommit<T> in
            // The mark first, so that the body's end is the transaction's: nothing can fail after
            // it but the COMMIT. BEGIN and the mark go with the body's first statement, in one
            // round trip; `resolveCommit` takes the lock only after this transaction sent its COMMIT.
            db.beginLater(
                with: "WITH marked AS (INSERT INTO docfs_commits (id) VALUES ($1) RETURNING id) SELECT pg_advisory_xact_lock(id) FROM marked",
                [.integer(key)])
            let value: T
            do {
                value = try body(db)
                // Told to the body, which may have gone on without it.
                if let failure = db.openingFailure { throw TransactionNotBegun(cause: failure) }
            } catch {
                let opening = db.openingFailure
                db.rollback()
                if let opening { throw TransactionFailure.notBegun(opening) }
                throw TransactionFailure.rolledBack(error)
            }
            if TestHook.commitBeforeSend.isArmed {
                // "Every statement ran, COMMIT not sent": what the hook is about. (An answer lost
                // is lost with the statements sent with the COMMIT, as it would be.)
                do {
                    try db.sendHeld()
                } catch {
                    let opening = db.openingFailure
                    db.rollback()
                    if let opening { throw TransactionFailure.notBegun(opening) }
                    throw TransactionFailure.rolledBack(error)
                }
            }
            TestHook.commitBeforeSend.pause()
            do {
                if TestHook.commitAnswerLost.trips() { try db.sendUnanswered("COMMIT") }
                try db.commit()
            } catch let error as PostgresError {
                // An answer that is an error (a serialization failure at commit, or a statement
                // sent with the COMMIT that failed) is a rollback; no answer at all is not known
                // to be one.
                guard error.isConnectionFailure else { return .refused(value, error) }
                return .unanswered(value, error, db.takeUnconfirmedNotifications())
            }
            return .committed(value)
        }
    }
}
