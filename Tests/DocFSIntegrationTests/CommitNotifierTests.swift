import Foundation
import Glibc
import Logging
@testable import PostgresDocumentStore
import Testing

/// Other mounts are woken after a change commits, by a notification the pool's `CommitNotifier`
/// sends from a connection of its own: never for a transaction rolled back, never before the
/// commit, and never from inside the transaction (where PostgreSQL's lock on its notification
/// queue, held across every notifying commit's flush, made concurrent commits wait for each other).
@Suite(.serialized, .timeLimit(.minutes(5)))
final class CommitNotifierTests {
    let cluster: PostgresCluster
    let pool: ConnectionPool
    let listener: PostgresConnection
    static let channel = "docfs_notifier_test"

    init() throws {
        cluster = try PostgresCluster()
        let parameters = "host=127.0.0.1 port=\(cluster.port) user=docfs dbname=docfs"
        pool = ConnectionPool(parameters: parameters, logger: Logger(label: "CommitNotifierTests"))
        listener = try PostgresConnection(parameters: parameters)
        try listener.execute("LISTEN \(Self.channel)")
        try listener.execute("CREATE TABLE noted (id int PRIMARY KEY)")
    }

    /// Notes row `id` in a transaction that notifies `payload` once committed.
    private func note(_ id: Int64, payload: String, _ db: PostgresConnection) throws {
        try db.execute("INSERT INTO noted VALUES ($1)", [.integer(id)])
        db.notifyAfterCommit(channel: Self.channel, payload: payload)
    }

    /// The payloads received until `awaited` arrives, or nil if it does not within 20 s.
    private func payloads(until awaited: String) throws -> [String]? {
        var received: [String] = []
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            var descriptor = pollfd(fd: listener.socket, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, 100)
            received += try listener.notifications()
            if received.contains(awaited) { return received }
        }
        return nil
    }

    @Test func aCommittedTransactionNotifiesAndOneRolledBackDoesNot() throws {
        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try pool.transaction { db in
                try note(1, payload: "rolled back", db)
                throw Refused()
            }
        }
        try pool.transaction { db in try note(2, payload: "committed", db) }
        // Sent in order: a notification of the rolled-back transaction would have come first.
        let received = try payloads(until: "committed")
        #expect(received == ["committed"], "\(received ?? [])")
        #expect(try listener.execute("SELECT count(*) FROM noted").integer(0, 0) == 1)
    }

    @Test func aTransactionNotifiesOnlyOnceItHasCommitted() throws {
        try pool.withConnection { open in
            try open.execute("BEGIN")
            try note(1, payload: "first, committed last", open)
            // Another transaction commits meanwhile; its notification arrives, the open one's not.
            try pool.transaction { db in try note(2, payload: "second, committed first", db) }
            let meanwhile = try payloads(until: "second, committed first")
            #expect(meanwhile == ["second, committed first"], "\(meanwhile ?? [])")
            try open.commit()
        }
        #expect(try payloads(until: "first, committed last") != nil)
    }
}
