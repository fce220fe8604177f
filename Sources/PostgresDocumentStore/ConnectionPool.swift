import Logging
import SystemSupport
import Synchronization

/// Connections to one database, each used by one thread at a time. A connection that failed is
/// dropped, and the next call connects anew: after the server restarts or the network comes back,
/// the mount goes on without being remounted.
final class ConnectionPool: Sendable {
    let parameters: String
    private let idle = OrderedMutex<[PostgresConnection]>(.leaf, [])
    /// Sends the notifications of the pool's transactions once they commit.
    let notifier: CommitNotifier

    init(parameters: String, logger: Logger) {
        self.parameters = parameters
        notifier = CommitNotifier(parameters: parameters, logger: logger)
    }

    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try idle.withLock { $0.popLast() } ?? makeConnection()
        do {
            let value = try body(connection)
            // Statements held for a round trip that never came (outside a transaction) go now.
            try connection.sendHeld()
            giveBack(connection)
            return value
        } catch {
            giveBack(connection)
            throw error
        }
    }

    private func makeConnection() throws -> PostgresConnection {
        let connection = try PostgresConnection(parameters: parameters)
        let notifier = notifier
        connection.committed = { notifier.post($0) }
        return connection
    }

    /// Runs `body` in a transaction on a pooled connection.
    func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try withConnection { try $0.transaction(body) }
    }

    private func giveBack(_ connection: PostgresConnection) {
        // One with statements still held, or a transaction that never began, is not reused.
        guard connection.isHealthy, !connection.holdsStatements, connection.openingFailure == nil else { return }
        idle.withLock { idle in
            if idle.count < 8 { idle.append(connection) }
        }
    }

    /// Drops every idle connection (after a failure, so none of them is tried again).
    func dropIdle() {
        idle.withLock { $0.removeAll() }
    }
}
